"""`binlake decode` takes lists of records made in C (cdc/runs.py's RecordRuns) in place of
the rows events of a run: its output must be what the event-by-event way prints, byte for
byte, on every corpus file, with and without a table filter, errors included.

`--start-position 4` (the first event of a file) is the event-by-event way: a start position
turns the lists off, and changes nothing else here."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import binlake.cdc.changes as changes
import binlake.binlog.files as files_module
import binlake.cdc.runs as runs_module
from binlake.binlog.events import RowsEvent
from binlake.cli.program import main
from binlake.errors import BinlakeError
from binlake.binlog.files import read_events

from corpus_index import corpus_files


def _first_table(path: Path) -> str | None:
    try:
        for ev in read_events(path):
            if isinstance(ev, RowsEvent):
                return f"{ev.table.schema}.{ev.table.table}"
    except BinlakeError:
        pass
    return None


def test_lists_print_what_events_print(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lists = [0]
    real = files_module.read_runs

    def counting(*args, **kwargs):
        for item in real(*args, **kwargs):
            lists[0] += type(item) is list
            yield item

    monkeypatch.setattr(runs_module, "read_runs", counting)
    compared = 0
    for path in corpus_files(corpus_dir):
        if "encrypt" in path.name:
            continue
        table = _first_table(path)
        for extra in ((), ("--tables", table or "x.none"), ("--output", "text")):
            got = CliRunner().invoke(main, ["decode", *extra, str(path)])
            want = CliRunner().invoke(main, ["decode", "--start-position", "4", *extra, str(path)])
            assert (got.exit_code, got.output) == (want.exit_code, want.output), (path, extra)
            compared += 1
        stats = [CliRunner().invoke(main, ["decode", *more, "--output", "null", "--stats",
                                           str(path)]).output.split('"seconds"')[0]
                 for more in ((), ("--start-position", "4"))]
        assert stats[0] == stats[1], path
    assert compared > 40
    if changes._make_records is not None:  # (none without the C extension: events only)
        assert lists[0] > 100  # the lists were made (and so compared)
