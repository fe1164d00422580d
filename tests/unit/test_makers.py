"""SlotMaker (C) builds the same objects as the dataclass constructors it stands in for."""
from __future__ import annotations

import dataclasses

import pytest

from binlake.binlog import events as ev_mod
from binlake.binlog.header import EventHeader, parse_header
from binlake._speedups.native import switches
from binlake.binlog.makers import slot_maker

_speedups = switches.c  # (None: not built, or BINLAKE_PURE_PYTHON=1)
needs_c = pytest.mark.skipif(_speedups is None, reason="C extension not built")


def _event_classes() -> list[type]:
    return [c for c in vars(ev_mod).values()
            if isinstance(c, type) and dataclasses.is_dataclass(c) and issubclass(c, ev_mod.Event)]


@pytest.mark.parametrize("cls", _event_classes(), ids=lambda c: c.__name__)
def test_maker_equals_constructor(cls: type) -> None:
    header = EventHeader(1, 2, 3, 4, 5, 6)
    fields = dataclasses.fields(cls)
    values = [header if f.name == "header" else object() for f in fields]
    made = slot_maker(cls)(*values)
    built = cls(**{f.name: v for f, v in zip(fields, values)})
    assert type(made) is cls
    for f in fields:
        assert getattr(made, f.name) is getattr(built, f.name)
    assert made == built


def test_parse_header_reads_every_field() -> None:
    raw = bytes.fromhex("01000000" "1e" "02000000" "13000000" "20000000" "0100")
    h = parse_header(raw)
    assert (h.timestamp, h.type_code, h.server_id, h.event_size, h.log_pos, h.flags) == (1, 30, 2, 19, 32, 1)
    assert h == EventHeader(1, 30, 2, 19, 32, 1) and hash(h) == hash(EventHeader(1, 30, 2, 19, 32, 1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.flags = 0  # type: ignore[misc]


@needs_c
def test_slot_maker_refuses_what_it_cannot_fill() -> None:
    names = tuple(f.name for f in dataclasses.fields(EventHeader))
    with pytest.raises(TypeError):
        _speedups.SlotMaker(EventHeader, names[:-1])  # a slot would stay empty
    with pytest.raises(TypeError):
        _speedups.SlotMaker(EventHeader, names[:-1] + ("timestamp",))  # one named twice
    with pytest.raises(TypeError):
        _speedups.SlotMaker(dict, ())  # not a slots class
    maker = _speedups.SlotMaker(EventHeader, names)
    with pytest.raises(TypeError):
        maker(1, 2, 3)  # too few values
    with pytest.raises(TypeError):
        maker(1, 2, 3, 4, 5, flags=6)  # keywords are not taken


def test_position_maker_equals_the_constructor() -> None:
    """make_position stands in for Position(...) on a stream's per-transaction path: the
    same value, hash and frozenness."""
    from binlake.replica.position import Position, make_position
    from binlake.cdc.xa import PreparedRange

    xa = (PreparedRange("x", "binlog.000001", 4, 90),)
    for values in (("binlog.000002", 4, None, None, 0, None, ()),
                   ("binlog.000002", 812, None, "0-1-9", 3, "0-1-10", xa),
                   (None, 4, "uuid:1-5", None, 0, None, ())):
        made, built = make_position(*values), Position(*values)
        assert type(made) is Position and made == built and hash(made) == hash(built)
        assert made.to_json() == built.to_json() and str(made) == str(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.pos = 5  # type: ignore[misc]


def test_table_map_copies_keep_every_field_but_the_ones_they_change() -> None:
    """moved() and with_columns() are built by a slot maker: every other field is the
    original's (a field they forgot would fail here, as a new field fails at import)."""
    from binlake.binlog.table_map import ColumnInfo, TableMapEvent

    header, other = EventHeader(1, 19, 3, 4, 5, 6), EventHeader(9, 19, 3, 4, 50, 6)
    cols = [ColumnInfo(index=0, type=8, binlog_type=8, meta=0, nullable=False)]
    tm = TableMapEvent(header=header, file="f.000001", offset=10, end=40, inner_index=2,
                       table_id=7, flags=1, schema="db", table="t", columns=cols,
                       primary_key=(0,), primary_key_prefixes=(0,), has_optional_metadata=True)
    tm.row_decoders["x"] = "compiled"
    moved = tm.moved(other, "f.000002", 100, 130)
    assert moved == dataclasses.replace(tm, header=other, file="f.000002", offset=100, end=130)
    assert moved.row_decoders is tm.row_decoders and moved.columns is tm.columns
    filled = [ColumnInfo(index=0, type=8, binlog_type=8, meta=0, nullable=False, name="id")]
    got = tm.with_columns(filled, None)
    assert got == dataclasses.replace(tm, columns=filled, primary_key=None)
    assert got.row_decoders == {} and got.row_decoders is not tm.row_decoders
    assert tm.with_columns(filled, (0,), tm.row_decoders).row_decoders is tm.row_decoders
