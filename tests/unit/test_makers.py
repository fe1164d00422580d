"""SlotMaker (C) builds the same objects as the dataclass constructors it stands in for."""
from __future__ import annotations

import dataclasses

import pytest

from binlake.binlog import events as ev_mod
from binlake.binlog.header import EventHeader, parse_header
from binlake.binlog.makers import _speedups, slot_maker

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
