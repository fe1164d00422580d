"""Positions, checkpoints, the exactly-once sink and transaction boundaries, without a server.

Boundaries are checked on real binlogs from the corpus: a resume point must always sit between
two transactions, never inside one (the primary could not start a dump there)."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from binlake.binlog.events import (
    GtidEvent, MariaGtidEvent, QueryEvent, RotateEvent, RowsEvent, XaPrepareEvent, XidEvent,
)
from binlake.errors import ConfigError
from binlake.binlog.files import read_events
from binlake.replica import dialogue as dlg
from binlake.replica.checkpoint import CheckpointStore
from binlake.replica.position import Position, TransactionBoundaries
from binlake.replica.sink import OutputSink

GEN = "generated-mariadb-10.11"
XA = f"{GEN}/mariadb-10.11.19-gtid-domains-xa.000001"


# -- Position ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pos", [
    Position("mariadb-bin.000003", 4),
    Position("mariadb-bin.000003", 1234, gtid_state="0-1-42,1-2-7"),
    Position(None, 4, gtid_state=""),
    Position("binlog.000001", 999, gtid_set="3e11fa47-71ca-11e1-9e33-c80aa9429562:1-42", rows_done=17,
             tx_gtid="3e11fa47-71ca-11e1-9e33-c80aa9429562:43"),
    Position("mariadb-bin.000009", 4294967295, rows_done=3, tx_gtid="0-1-5"),
])
def test_position_json_round_trip(pos: Position) -> None:
    text = json.dumps(pos.to_json())
    assert Position.from_json(json.loads(text)) == pos


@pytest.mark.parametrize("data, complaint", [
    ({"file": "f", "pos": 4, "bogus": 1}, "unexpected keyword"),
    ({"file": 7, "pos": 4}, "file must be a string"),
    ({"file": "f", "pos": "4"}, "pos must be a non-negative integer"),
    ({"file": "f", "pos": 2}, "pos must be between 4"),
    ({"file": "f", "pos": 4, "rows_done": -1}, "rows_done must be a non-negative integer"),
    ({"file": "f", "pos": True}, "pos must be"),
    ({"pos": 4}, "neither a file nor a GTID"),
    ({"gtid_set": "", "gtid_state": ""}, "exclude each other"),
    ([1, 2], "not an object"),
])
def test_position_from_json_rejects(data, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        Position.from_json(data)


def test_parse_start() -> None:
    assert Position.parse_start("mariadb-bin.000003:1234") == Position("mariadb-bin.000003", 1234)
    assert Position.parse_start("mariadb-bin.000003") == Position("mariadb-bin.000003", 4)
    assert Position.parse_start("dir:name.000001:77") == Position("dir:name.000001", 77)


@pytest.mark.parametrize("text", ["", ":4", "bin.000001:", "bin.000001:x", "bin.000001:-5",
                                  "bin.000001:3", "bin.000001:4294967296", " bin.000001:4",
                                  "bin.000001:٣٤"])
def test_parse_start_errors(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        Position.parse_start(text)
    assert "FILE:POS" in str(err.value)


def test_position_text_names_the_partial_transaction() -> None:
    p = Position("mariadb-bin.000002", 500, gtid_state="0-1-9", rows_done=3, tx_gtid="0-1-10")
    assert str(p) == "mariadb-bin.000002:500 gtid_state=0-1-9 +3 rows of 0-1-10"


# -- checkpoints ------------------------------------------------------------------------------

def test_checkpoint_round_trip(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "sub" / "ckpt.json")
    assert store.load() is None
    pos = Position("mariadb-bin.000001", 330, gtid_state="0-1-3", rows_done=2, tx_gtid="0-1-4")
    store.save(pos, {"out_bytes": 123})
    assert store.load() == (pos, {"out_bytes": 123})


def test_checkpoint_failed_rename_keeps_the_old_one(tmp_path: Path, monkeypatch) -> None:
    """A crash between writing the new file and renaming it over leaves the old checkpoint."""
    path = tmp_path / "ckpt.json"
    store = CheckpointStore(path)
    old = Position("mariadb-bin.000001", 330, gtid_state="0-1-3")
    store.save(old, {"out_bytes": 10})
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="No space"):
        store.save(Position("mariadb-bin.000001", 999, gtid_state="0-1-4"), {"out_bytes": 99})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert store.load() == (old, {"out_bytes": 10})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.json"]  # no temp file left


def test_checkpoint_torn_or_foreign_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.json"
    path.write_text('{"version":1,"position":{"file":"mariadb-bin.0000')
    with pytest.raises(ConfigError, match="cannot be read"):
        CheckpointStore(path).load()
    path.write_text('{"version":1}')
    with pytest.raises(ConfigError, match="no position"):
        CheckpointStore(path).load()


# -- output sink --------------------------------------------------------------------------------

def test_sink_truncates_to_the_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("a\nb\npartial-li")
    sink = OutputSink(str(out), resume_bytes=4)
    sink.write("c\n")
    assert sink.durable_size() == 6
    sink.close()
    assert out.read_text() == "a\nb\nc\n"


def test_sink_to_a_device_or_fifo_is_at_least_once(tmp_path: Path) -> None:
    """/dev/null or a FIFO can be neither fsynced nor truncated: written like stdout, no
    size for the checkpoint, a resume size ignored."""
    sink = OutputSink("/dev/null", resume_bytes=100)
    sink.write("a\n")
    assert sink.durable_size() is None
    sink.close()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    sink = OutputSink(str(fifo), resume_bytes=None)
    sink.write("b\n")
    assert sink.durable_size() is None
    sink.close()
    reader.join(10)
    assert got == ["b\n"]


def test_sink_refuses_a_file_shorter_than_the_checkpoint(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("a\n")
    with pytest.raises(ConfigError, match="checkpoint says 10"):
        OutputSink(str(out), resume_bytes=10)
    assert out.read_text() == "a\n"  # not padded with zero bytes
    with pytest.raises(ConfigError, match="missing"):
        OutputSink(str(tmp_path / "gone.jsonl"), resume_bytes=10)


# -- dialogue -------------------------------------------------------------------------------------

def test_semi_sync_header_and_ack() -> None:
    sp = dlg.parse_stream_packet(memoryview(b"\x00\xef\x01" + b"E" * 19), semi_sync=True)
    assert sp.kind == "event" and sp.need_ack and bytes(sp.event) == b"E" * 19
    sp = dlg.parse_stream_packet(memoryview(b"\x00\xef\x00" + b"E" * 19), semi_sync=True)
    assert not sp.need_ack
    assert dlg.semi_sync_ack_payload("mariadb-bin.000002", 0x1234) == (
        b"\xef" + (0x1234).to_bytes(8, "little") + b"mariadb-bin.000002")


# -- transaction boundaries on real binlogs ------------------------------------------------------

def _boundaries(path: Path) -> tuple[list, list[int]]:
    tb = TransactionBoundaries()
    events, ends = [], []
    for ev in read_events(str(path)):
        events.append(ev)
        if tb.observe(ev):
            ends.append(len(events) - 1)
    assert not tb.in_tx, "the file ends inside a transaction"
    return events, ends


def test_boundaries_xa_ddl_and_domains(corpus_dir: Path) -> None:
    events, ends = _boundaries(corpus_dir / XA)
    closing = [events[i] for i in ends]
    # Each boundary closes exactly one GTID group, and every group is closed.
    assert len(closing) == sum(isinstance(e, MariaGtidEvent) for e in events)
    kinds = {type(e).__name__ for e in closing}
    assert kinds == {"XidEvent", "QueryEvent", "XaPrepareEvent"}
    # XA PREPARE: the group ends at the XA_PREPARE event, not at the XA END query before it.
    xa_end = next(e for e in events if isinstance(e, QueryEvent) and e.query.startswith("XA END"))
    assert xa_end not in closing
    prepare = next(e for e in events if isinstance(e, XaPrepareEvent))
    assert prepare in closing and events[events.index(prepare) - 1] is xa_end
    # XA COMMIT is a standalone group of its own.
    commit = next(e for e in events if isinstance(e, QueryEvent) and e.query.startswith("XA COMMIT"))
    assert commit in closing
    # A MyISAM change ends with a COMMIT query (no XID).
    assert any(isinstance(e, QueryEvent) and e.query == "COMMIT" for e in closing)
    # Groups of other domains and servers (1-1-1, 2-7-1001) are closed like any other.
    gtids = [e.gtid for e in events if isinstance(e, MariaGtidEvent)]
    assert {"1-1-1", "2-1-1000", "2-7-1001"} <= set(gtids)


@pytest.mark.parametrize("name", ["mariadb-10.11.19-row-full-metafull-crc32.000001",
                                  "mariadb-10.11.19-statement-mixed.000001",
                                  "mariadb-10.11.19-gtid-domains-xa.000001",
                                  "mariadb-10.11.19-row-compressed-crc32.000001"])
def test_every_boundary_is_between_groups(corpus_dir: Path, name: str) -> None:
    """After each boundary the next event is a new group or file bookkeeping, never part of
    the group just closed; each GTID group holds its rows; DDL is a group of its own."""
    events, ends = _boundaries(corpus_dir / GEN / name)
    assert ends
    between = (MariaGtidEvent, RotateEvent)
    for i in ends:
        nxt = next((e for e in events[i + 1:] if type(e).__name__ not in
                    ("BinlogCheckpointEvent", "MariaGtidListEvent", "StopEvent")), None)
        assert nxt is None or isinstance(nxt, between), (events[i], nxt)
    ddl = [events[i] for i in ends if isinstance(events[i], QueryEvent)
           and events[i].query.split()[0].upper() in ("CREATE", "ALTER", "DROP")]
    if "row-full" in name:
        assert ddl, "DDL statements close their own groups"
        for q in ddl:
            gtid = events[events.index(q) - 1]
            assert isinstance(gtid, MariaGtidEvent) and gtid.standalone
    # No rows event lies outside a group.
    tb = TransactionBoundaries()
    for ev in events:
        tb.observe(ev)
        if isinstance(ev, RowsEvent):
            assert tb.in_tx and not tb.implicit_rows


def test_statement_logged_dml_does_not_end_a_mariadb_group(corpus_dir: Path) -> None:
    events, ends = _boundaries(corpus_dir / GEN / "mariadb-10.11.19-statement-mixed.000001")
    inner = [e for i, e in enumerate(events) if isinstance(e, QueryEvent) and i not in ends
             and e.query.split()[0].upper() in ("INSERT", "UPDATE", "DELETE")]
    assert inner, "statement-logged DML inside groups"




def test_mysql_shapes() -> None:
    """MySQL: GTID + BEGIN ... XID; GTID + DDL; XA START ... XA_PREPARE; SAVEPOINT inside."""
    def q(text: str) -> QueryEvent:
        return QueryEvent(header=None, file="f", offset=0, end=0, thread_id=1, exec_time=0,
                          error_code=0, schema="s", query=text)

    def gtid(n: int) -> GtidEvent:
        return GtidEvent(header=None, file="f", offset=0, end=0, uuid="3e11fa47-71ca-11e1-9e33-c80aa9429562",
                         gno=n)

    xid = XidEvent(header=None, file="f", offset=0, end=0, xid=1)
    prep = XaPrepareEvent(header=None, file="f", offset=0, end=0, one_phase=False, format_id=1,
                          gtrid=b"x", bqual=b"")
    tb = TransactionBoundaries()
    seq = [(gtid(1), False), (q("BEGIN"), False), (q("SAVEPOINT a"), False),
           (q("ROLLBACK TO a"), False), (xid, True),
           (gtid(2), False), (q("CREATE TABLE t (a INT)"), True),
           (gtid(3), False), (q("XA START 'x'"), False), (q("XA END 'x'"), False), (prep, True),
           (gtid(4), False), (q("XA COMMIT 'x'"), True),
           (gtid(5), False), (q("BEGIN"), False), (q("COMMIT"), True),
           (gtid(6), False), (q("CREATE TABLE t2 SELECT 1 START TRANSACTION"), False), (xid, True)]
    for ev, closes in seq:
        assert tb.observe(ev) is closes, ev
    assert tb.ended_gtid == "3e11fa47-71ca-11e1-9e33-c80aa9429562:6"
