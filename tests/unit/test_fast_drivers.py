"""The switchboard (_speedups/native.py) and the fast drivers that own their decoder
mode: RecordRuns gives the records of the event-by-event way, with its C runs and
without; a decoder's events() hands out events only."""
from __future__ import annotations

from pathlib import Path

import pytest

from binlake._speedups.native import switches
from binlake.binlog.decoder import BinlogDecoder, RunMerge
from binlake.binlog.events import Event
from binlake.binlog.files import read_events, read_runs
from binlake.cdc.changes import ChangeTracker, iter_changes
from binlake.cdc.runs import RecordRuns

FILES = ("row-full-metafull-crc32", "row-minimal-metaminimal-crc32", "gtid-domains-xa",
         "large-event")


def _paths(corpus_dir: Path) -> list[Path]:
    return [corpus_dir / "generated-mariadb-10.11" / f"mariadb-10.11.19-{n}.000001" for n in FILES]


def test_switches_flip_for_a_block_and_refuse_unknown_names() -> None:
    before = (switches.c, switches.records, switches.crc_ahead)
    with switches.set(c=None, records=False, crc_ahead=not before[2]) as s:
        assert (s.c, s.records, s.crc_ahead) == (None, False, not before[2])
        assert BinlogDecoder().scan_packets(bytearray(), 0, 0, 0) is None  # no C scanner
    assert (switches.c, switches.records, switches.crc_ahead) == before
    with pytest.raises(AttributeError, match="no such switch: nonsense"):
        with switches.set(nonsense=1):
            pass
    assert (switches.c, switches.records, switches.crc_ahead) == before


def test_a_run_merge_makes_records_or_segments() -> None:
    with pytest.raises(ValueError, match="records or segments"):
        RunMerge(lambda: (None, True))
    with pytest.raises(ValueError, match="records or segments"):
        RunMerge(lambda: (None, True), records=("records", None), segments=(1, 2, 3, 4, 5))


def _runs_records(path: Path, **switch: bool) -> tuple[list, int]:
    with switches.set(**switch):
        runs = RecordRuns(BinlogDecoder(file=path.name), ChangeTracker(None))
        got = [r for records in runs.read(path) for r in records]
    return got, runs.events


def test_record_runs_give_the_records_of_events(corpus_dir: Path) -> None:
    merged = 0
    for path in _paths(corpus_dir):
        want = list(iter_changes(read_events(path)))
        events = sum(1 for _ in read_events(path))
        for switch in ({}, {"records": False}, {"c": None}):
            got, counted = _runs_records(path, **switch)
            assert got == want, (path.name, switch)
            assert counted == events, (path.name, switch)  # merged events counted too
        if switches.c is not None:
            merge = RunMerge(lambda: (None, True), records=("records", None))
            items = list(read_runs(path, merge, decoder=BinlogDecoder(file=path.name)))
            merged += merge.events
            assert any(type(i) is list for i in items) == (merge.events > 0)
    if switches.c is not None:
        assert merged > 20  # (the C runs did make records, so they were compared)


def test_events_are_events_only_and_until_stops_at_a_group(corpus_dir: Path) -> None:
    path = _paths(corpus_dir)[0]
    assert all(isinstance(ev, Event) for ev in read_events(path))
    starts = [ev.offset for ev in read_events(path) if ev.type_code in (162, 33)]  # GTIDs
    assert len(starts) > 2
    runs = RecordRuns(BinlogDecoder(file=path.name), ChangeTracker(None))
    first = [r for records in runs.read(path, until=starts[1]) for r in records]
    assert runs.reached == starts[1]
    assert first == [r for r in iter_changes(read_events(path)) if r.pos < starts[1]]
