"""file_batches lets the C scanner add rows events to the Arrow batch itself (segments
mode, a RunMerge of segments): the batches must be those of the event-by-event way,
row for row, on every corpus file, with and without a table filter, at batch limits that cut
runs short, and for parts of a file read as the Spark files source reads them."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from binlake._speedups.native import switches
from binlake.binlog.decoder import BinlogDecoder
from binlake.binlog.events import RowsEvent
from binlake.errors import BinlakeError
from binlake.binlog.files import read_events, read_runs, split_points
from binlake.cdc import arrow
from binlake.cdc.arrow import CDC_SCHEMA, file_batches

from corpus_index import corpus_files


def _first_table(path: Path) -> tuple[str, str] | None:
    try:
        for ev in read_events(path):
            if isinstance(ev, RowsEvent):
                return ev.table.schema, ev.table.table
    except BinlakeError:
        pass
    return None


def _batches(path: Path, keep, size: int, max_bytes: int, counts: list[int],
             part: tuple[int | None, int | None] = (None, None),
             monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[list[int], pa.Table | str]:
    """(batch sizes, the rows) of one read, or the error it ended with."""
    dec = BinlogDecoder(file=path.name, json_images=True, table_filter=keep)

    def counting(*args, **kwargs):
        for ev in read_runs(*args, **kwargs):
            counts[0] += type(ev) is int  # (a count of events the scanner added)
            yield ev

    if monkeypatch is not None:
        monkeypatch.setattr(arrow, "read_runs", counting)
    sizes: list[int] = []
    got: list[pa.RecordBatch] = []
    try:
        for b in file_batches(path, *part, tables=keep, statements=False, batch_size=size,
                              max_bytes=max_bytes, decoder=dec):
            b.validate(full=True)
            sizes.append(b.num_rows)
            got.append(b)
    except BinlakeError as exc:
        return sizes, f"{type(exc).__name__}: {exc}"
    return sizes, pa.Table.from_batches(got, schema=CDC_SCHEMA)


def _both(path, keep, size, max_bytes, monkeypatch, counts, part=(None, None)):
    with switches.set(segments=True):
        with_segments = _batches(path, keep, size, max_bytes, counts, part, monkeypatch)
    with switches.set(segments=False):
        without = _batches(path, keep, size, max_bytes, [0], part)
    return with_segments, without


@pytest.mark.parametrize("size,max_bytes", [(10_000, arrow.MAX_BATCH_BYTES), (7, arrow.MAX_BATCH_BYTES),
                                            (10_000, 5_000)])
def test_segments_give_the_batches_of_events(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                             size: int, max_bytes: int) -> None:
    counts = [0]
    compared = 0
    for path in corpus_files(corpus_dir):
        if "encrypt" in path.name:
            continue
        name = _first_table(path)
        filters = [None] if name is None else [None, lambda s, t, name=name: (s, t) == name]
        for keep in filters:
            (sizes, rows), (want_sizes, want) = _both(path, keep, size, max_bytes, monkeypatch,
                                                      counts)
            assert sizes == want_sizes, (path.name, keep)
            if isinstance(want, str):
                assert rows == want, path.name  # the same error, after the same batches
            else:
                assert isinstance(rows, pa.Table) and rows.equals(want), (path.name, keep)
                compared += want.num_rows
    assert compared > 1000
    if switches.c is not None:
        assert counts[0] > 50  # the scanner did add events (so they were compared)


def test_segments_in_parts_of_a_file(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    """Parts of a file (read_part with an end): the counts the scanner hands out pass the
    part's end check, and the parts together are the whole file's batches."""
    cut = [(p, split_points(p, part_bytes=max(p.stat().st_size // 5, 1)))
           for p in corpus_files(corpus_dir) if "encrypt" not in p.name and _first_table(p)]
    big, points = max(cut, key=lambda c: (len(c[1]), c[0].stat().st_size))  # (rows events)
    assert len(points) >= 3, big.name
    bounds = [None, *points, None]
    counts = [0]
    parts_with, parts_without = [], []
    for i in range(len(bounds) - 1):
        (_, rows), (_, want) = _both(big, None, 10_000, arrow.MAX_BATCH_BYTES, monkeypatch,
                                     counts, (bounds[i], bounds[i + 1]))
        assert isinstance(want, pa.Table) and isinstance(rows, pa.Table) and rows.equals(want)
        parts_with.append(rows)
        parts_without.append(want)
    (_, whole), _ = _both(big, None, 10_000, arrow.MAX_BATCH_BYTES, monkeypatch, [0])
    assert pa.concat_tables(parts_with).equals(whole)
    if switches.c is not None:
        assert counts[0] > 0


def test_a_filter_that_fails_inside_a_run(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table filter that raises at a table met inside a run of the scanner: the read fails
    with that error, after the same batches as the event-by-event way's."""
    tried = 0
    for path in corpus_files(corpus_dir):
        if "encrypt" in path.name:
            continue
        try:
            names = [(ev.table.schema, ev.table.table) for ev in read_events(path)
                     if isinstance(ev, RowsEvent)]
        except BinlakeError:
            continue
        later = [n for n in dict.fromkeys(names) if n != names[0]] if names else []
        if not later:
            continue
        bad = later[0]

        def keep(schema: str, table: str) -> bool:
            if (schema, table) == bad:
                raise RuntimeError(f"filter failed at {schema}.{table}")
            return True

        results = []
        for mode in (True, False):
            dec = BinlogDecoder(file=path.name, json_images=True, table_filter=keep)
            got = []
            with switches.set(segments=mode), pytest.raises(RuntimeError, match="filter failed"):
                for b in file_batches(path, tables=keep, statements=False, batch_size=5,
                                      decoder=dec):
                    got.append(b)
            results.append(pa.Table.from_batches(got, schema=CDC_SCHEMA))
        assert results[0].equals(results[1]), path.name
        tried += 1
    assert tried >= 3
