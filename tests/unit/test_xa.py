"""XA transactions: prepared rows go out at XA COMMIT (stamped with its place), never at XA
PREPARE, and never after XA ROLLBACK; positions carry what is pending."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from binlake.binlog.events import GtidEvent, QueryEvent, XaPrepareEvent
from binlake.cdc.changes import ChangeTracker, iter_changes
from binlake.cli.program import main as cli
from binlake.errors import ConfigError
from binlake.binlog.files import locate_prepared, read_events, read_range
from binlake.replica.position import Position
from binlake.cdc.xa import PreparedRange, XaError, decision, parse_xid, recovered_xids, xa_start

XA_FILE = "generated-mariadb-10.11/mariadb-10.11.19-gtid-domains-xa.000001"
# In that file (workload.sql, scenario gtid-domains-xa): XA 'xa1' inserts id 103, prepared in
# the group 0-1-172 at [1325, 1741), committed by the group 0-1-173 (XA COMMIT query at 1786).
PREPARE = (1325, 1741)
COMMIT_QUERY = (1786, 1880)
XA1 = "X'786131',X'',1"


def test_xid_spellings_compare_equal() -> None:
    assert parse_xid("'xa1'") == parse_xid("X'786131'") == parse_xid("X'786131',X'',1") == XA1
    assert parse_xid("'a','b',7") == "X'61',X'62',7"
    assert parse_xid("0x616263 , 'q' , -3") == "X'616263',X'71',-3"
    assert parse_xid("'it''s'") == parse_xid("'it\\'s'") == "X'69742773',X'',1"
    with pytest.raises(XaError, match="cannot read the XID"):
        parse_xid("xa1")  # an identifier is not an XID literal


def test_decisions_and_starts() -> None:
    assert decision("XA COMMIT X'786131',X'',1") == (True, XA1)
    assert decision("xa rollback 'xa1'") == (False, XA1)
    assert decision("XA COMMIT 'xa1' ONE PHASE") is None  # logged as a transaction of its own
    assert decision("XA END X'786131',X'',1") is None
    assert decision("COMMIT") is None
    assert xa_start("XA START X'786131',X'',1") == XA1
    assert xa_start("XA BEGIN 'xa1'") == XA1
    assert xa_start("XA END 'xa1'") is None


def test_positions_carry_pending_prepares() -> None:
    rng = PreparedRange(XA1, "mariadb-bin.000009", 1325, 1741)
    p = Position("mariadb-bin.000009", 1880, gtid_state="0-1-173", xa_prepared=(rng,))
    text = json.dumps(p.to_json())
    assert json.loads(text)["xa_prepared"] == [[XA1, "mariadb-bin.000009", 1325, 1741]]
    assert Position.from_json(json.loads(text)) == p
    assert "xa_prepared" not in Position("f.000001", 4).to_json()  # absent when none pending
    assert "xa_prepared=1" in str(p)
    for bad in ([[XA1, "f", 1741, 1325]], [[XA1, "f", 1325]], "x", [[1, "f", 4, 5]]):
        with pytest.raises(ConfigError, match="invalid position"):
            Position.from_json({"file": "f.000001", "pos": 4, "xa_prepared": bad})


def test_the_commit_hands_out_the_prepared_rows(corpus_dir: Path) -> None:
    path = corpus_dir / XA_FILE
    recs = [r for r in iter_changes(read_events(path)) if r.table == "t_int"]
    ids = [r.after["id"] for r in recs]
    assert ids == [100, 101, 102, 103, 104]  # one-phase 104 is an ordinary transaction
    xa = recs[3]
    assert (xa.pos, xa.end_pos, xa.row, xa.inner, xa.gtid) == (*COMMIT_QUERY, 0, None, "0-1-173")
    # Nothing between the PREPARE and the COMMIT carries it.
    tracker, seen, pending = ChangeTracker(), [], []
    for ev in read_events(path):
        got = tracker.records(ev)
        if ev.offset < COMMIT_QUERY[0]:
            seen += [r.after.get("id") for r in got]
        if isinstance(ev, XaPrepareEvent):  # now pending
            pending.append(tracker.xa.ranges())
    assert pending == [(PreparedRange(XA1, path.name, *PREPARE),)]
    assert 103 not in seen and tracker.xa.ranges() == ()


def test_a_reader_that_starts_after_the_prepare_reads_its_range(corpus_dir: Path) -> None:
    path = corpus_dir / XA_FILE
    rng = PreparedRange(XA1, path.name, *PREPARE)
    assert [type(e).__name__ for e in read_range(path, *PREPARE)][0] == "MariaGtidEvent"
    assert locate_prepared([path], XA1) is None  # decided within the file: not pending at its end
    # A tracker seeded with the pending range (a resumed position) re-reads it at the COMMIT.
    from binlake.cdc.changes import prepared_records
    from binlake.cdc.xa import XaLedger

    calls = []

    def reread(r: PreparedRange, at: tuple) -> list:
        assert at == (path.name, COMMIT_QUERY[0])
        calls.append(r)
        return prepared_records(read_range(path, r.start, r.end), r)

    tracker = ChangeTracker(xa=XaLedger([rng]), reread=reread)
    out = [rec for ev in read_events(path) if ev.offset >= PREPARE[1] for rec in tracker.records(ev)]
    assert calls == [rng]
    assert [r.after["id"] for r in out if r.table == "t_int"] == [103, 104]
    assert out[0].pos == COMMIT_QUERY[0] and out[0].gtid == "0-1-173"
    # Without a way to re-read, or with no range known, the COMMIT is an error naming it.
    with pytest.raises(XaError, match="did not read and cannot re-read"):
        t = ChangeTracker(xa=XaLedger([rng]))
        for ev in read_events(path):
            if ev.offset >= PREPARE[1]:
                t.records(ev)
    with pytest.raises(XaError, match=r"1786: XA COMMIT .* prepared before this reader's start"):
        t = ChangeTracker()
        for ev in read_events(path):
            if ev.offset >= PREPARE[1]:
                t.records(ev)


def test_decode_cli_from_a_start_position_after_the_prepare(corpus_dir: Path) -> None:
    path = str(corpus_dir / XA_FILE)
    res = CliRunner().invoke(cli, ["decode", "--start-position", str(PREPARE[1]),
                                   "--stop-position", str(COMMIT_QUERY[1]), path])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [(r["after"]["id"], r["position"]["pos"]) for r in rows] == [(103, COMMIT_QUERY[0])]


def test_decode_cli_gtid_filter_follows_the_commit(corpus_dir: Path) -> None:
    """The rows belong to the COMMIT's GTID: asking for it finds them (the PREPARE group,
    filtered out, is re-read); asking for the PREPARE's GTID finds none."""
    path = str(corpus_dir / XA_FILE)
    for gtids, want in (("0-1-173", [103]), ("0-1-172", [])):
        res = CliRunner().invoke(cli, ["decode", "--gtid", gtids, path])
        assert res.exit_code == 0, res.output
        assert [json.loads(line)["after"]["id"] for line in res.output.splitlines()] == want, gtids


def _events(corpus_dir: Path) -> dict[str, object]:
    """Real events to build MySQL-shaped XA groups from (no MySQL server logs XA here)."""
    evs = list(read_events(corpus_dir / XA_FILE))
    by_off = {e.offset: e for e in evs}
    mysql_gtid = next(e for e in read_events(
        corpus_dir / "rust_mysql_common/binlog_transaction_with_GTID.000001") if isinstance(e, GtidEvent))
    return {"tm": by_off[1437], "rows": by_off[1570], "query": by_off[1611],
            "prepare": by_off[1702], "gtid": mysql_gtid}


def _mysql_group(ev: dict, at: int, xid_sql: str, one_phase: bool) -> list:
    q = ev["query"]
    assert isinstance(q, QueryEvent) and isinstance(ev["prepare"], XaPrepareEvent)
    gtid = dataclasses.replace(ev["gtid"], offset=at, end=at + 10, file=q.file)
    start = dataclasses.replace(q, offset=at + 10, end=at + 20, query=f"XA START {xid_sql}")
    tm = dataclasses.replace(ev["tm"], offset=at + 20, end=at + 30)
    rows = dataclasses.replace(ev["rows"], offset=at + 30, end=at + 40)
    end = dataclasses.replace(q, offset=at + 40, end=at + 50, query=f"XA END {xid_sql}")
    prep = dataclasses.replace(ev["prepare"], offset=at + 50, end=at + 60, one_phase=one_phase,
                               gtrid=b"ab", bqual=b"", format_id=1)
    return [gtid, start, tm, rows, end, prep]


def test_mysql_shaped_xa_groups(corpus_dir: Path) -> None:
    ev = _events(corpus_dir)
    q = ev["query"]
    tracker = ChangeTracker()
    # One phase (MySQL logs XA COMMIT ... ONE PHASE as a prepare group saying one_phase).
    out = [r for e in _mysql_group(ev, 1000, "X'6162',X'',1", True) for r in tracker.records(e)]
    assert len(out) == 1 and out[0].pos == 1030 and tracker.xa.ranges() == ()
    # Two phases: nothing at the PREPARE; pending with the group's range (from its GTID event).
    out = [r for e in _mysql_group(ev, 2000, "'ab'", False) for r in tracker.records(e)]
    assert out == [] and tracker.xa.ranges() == (PreparedRange("X'6162',X'',1", q.file, 2000, 2060),)
    commit = dataclasses.replace(q, offset=3000, end=3050, query="XA COMMIT X'6162',X'',1")
    out = tracker.records(commit)
    assert len(out) == 1 and (out[0].pos, out[0].end_pos, out[0].row) == (3000, 3050, 0)
    # A reader that starts inside a one-phase group (decode --start-position): the group's
    # start was only observed, so its rows are re-read from its range, never lost.
    from binlake.cdc.changes import prepared_records

    group = _mysql_group(ev, 6000, "'ab'", True)
    reads = []

    def reread(r: PreparedRange, at: tuple) -> list:
        reads.append((r, at))
        return prepared_records([e for e in group if r.start <= e.offset < r.end], r)

    t = ChangeTracker(reread=reread)
    for e in group[:3]:
        t.observe(e, keep=False)
    out = [r for e in group[3:] for r in t.records(e)]
    assert len(out) == 1 and out[0].pos == 6030
    assert reads == [(PreparedRange("X'6162',X'',1", q.file, 6000, 6060), (q.file, 6050))]
    with pytest.raises(XaError, match="ONE PHASE .* cannot re-read"):
        t = ChangeTracker()
        for e in group[:3]:
            t.observe(e, keep=False)
        for e in group[3:]:
            t.records(e)
    # Rolled back: never handed out.
    assert [r for e in _mysql_group(ev, 4000, "'ab'", False) for r in tracker.records(e)] == []
    rollback = dataclasses.replace(q, offset=5000, end=5050, query="XA ROLLBACK 'ab'")
    assert tracker.records(rollback) == [] and tracker.xa.ranges() == ()


def test_mariadb_rollback_drops_the_rows(corpus_dir: Path) -> None:
    evs = list(read_events(corpus_dir / XA_FILE))
    commit = next(e for e in evs if isinstance(e, QueryEvent) and e.query.startswith("XA COMMIT"))
    rollback = dataclasses.replace(commit, query=commit.query.replace("COMMIT", "ROLLBACK"))
    tracker = ChangeTracker()
    ids = [r.after["id"] for e in evs for r in tracker.records(rollback if e is commit else e)
           if r.table == "t_int"]
    assert ids == [100, 101, 102, 104] and tracker.xa.ranges() == ()


def test_xa_recover_answers_of_both_servers() -> None:
    """MySQL's `XA RECOVER CONVERT XID` (its manual's example: 'abc','def',7) and MariaDB's
    `XA RECOVER FORMAT='SQL'` name the same XIDs; another form is refused, not guessed."""
    mysql = [(7, 3, 3, b"0x616263646566"), ("1", "2", "0", "0x0aff")]
    assert recovered_xids(mysql, mariadb=False) == {parse_xid("'abc','def',7"),
                                                     "X'0aff',X'',1"}
    maria = [(7, 3, 3, "X'616263',X'646566',7")]
    assert recovered_xids(maria, mariadb=True) == {parse_xid("'abc','def',7")}
    for bad in ([(7, 3, 3, b"abcdef")], [(7, 3, 4, b"0x616263646566")], [(1, 1, 0, "0xzz")]):
        with pytest.raises(ValueError):
            recovered_xids(bad, mariadb=False)
    with pytest.raises(XaError):
        recovered_xids([(1, 3, 0, "abc")], mariadb=True)
