"""The rows events' fast path (rows.fast_rows) against the general path, on every corpus file.

The fast path takes the common rows event in one step and hands anything unusual back; it
must never change what comes out. Every event of every file is decoded both ways (with and
without a table filter, counting filtered rows or not, values or JSON images) and compared
field by field, errors included: a corrupt or truncated event fails the same way on both
paths.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import binlake.binlog.codecs.rows as rows
from binlake.binlog.decoder import BinlogDecoder
from binlake.binlog.events import RowsEvent
from binlake.errors import BinlakeError
from binlake.files import read_events

from corpus_index import corpus_files

pytestmark = pytest.mark.skipif(rows.compile_row_decoder([], []) is None or
                                not hasattr(rows.compile_row_decoder([], []), "many"),
                                reason="C extension not built")


def _decode(path: Path, fast: bool, **options: object) -> tuple[list[tuple], str | None]:
    saved = rows.FAST_TYPES
    rows.FAST_TYPES = saved if fast else frozenset()
    out: list[tuple] = []
    try:
        for ev in read_events(path, **options):
            out.append(_fields(ev))
    except BinlakeError as exc:
        return out, f"{type(exc).__name__}: {exc}"
    finally:
        rows.FAST_TYPES = saved
    return out, None


def _fields(ev: object) -> tuple:
    values = []
    for f in dataclasses.fields(ev):
        if not f.compare:  # caches (a TABLE_MAP's compiled decoders)
            continue
        v = getattr(ev, f.name)
        values.append((f.name, id(v) if f.name == "table" else v))
    if isinstance(ev, RowsEvent):
        values.append(("table-name", ev.table.qualified_name))
    return type(ev).__name__, tuple(v for v in values if v[0] != "table")


def _only_first_table(path: Path) -> object:
    try:
        for ev in read_events(path):
            if isinstance(ev, RowsEvent):
                name = (ev.table.schema, ev.table.table)
                return lambda schema, table: (schema, table) == name
    except BinlakeError:  # broken or encrypted on purpose: the tables before the fault
        pass
    return lambda schema, table: False


def _checksummed_fast_rows(path: Path) -> bool:
    """A file with CRC32 checksums and rows events of the fast path's types."""
    try:
        evs = list(read_events(path))
    except BinlakeError:
        return False
    return (any(getattr(ev, "checksum_alg", None) == 1 for ev in evs)
            and any(isinstance(ev, RowsEvent) and ev.type_code in rows.FAST_TYPES for ev in evs))


@pytest.mark.parametrize("mode", ["all", "filtered", "filtered-counted", "json-images"])
def test_fast_path_gives_what_the_general_path_gives(corpus_dir: Path, mode: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    taken = [0]
    real = rows.fast_rows

    def counting(*args: object) -> object:
        ev = real(*args)
        taken[0] += ev is not None
        return ev

    monkeypatch.setattr(rows, "fast_rows", counting)
    compared = rows_events = 0
    for path in corpus_files(corpus_dir):
        options: dict[str, object] = {}
        if mode == "json-images":
            options = {"json_images": True}
        elif mode != "all":
            options = {"table_filter": _only_first_table(path),
                       "count_filtered": mode == "filtered-counted"}
        fast, fast_error = _decode(path, True, **options)
        slow, slow_error = _decode(path, False, **options)
        assert fast_error == slow_error, path
        assert len(fast) == len(slow), path
        for a, b in zip(fast, slow):
            assert a == b, (path, a[0])
        compared += len(fast)
        rows_events += sum(1 for a in fast if a[0] == "RowsEvent")
    assert rows_events > 500 and compared > rows_events
    assert taken[0] > rows_events // 2  # the fast path did the common events


def test_corrupt_rows_events_fail_as_on_the_general_path(corpus_dir: Path) -> None:
    """Flip a byte in the rows of each of the first rows events of a file: the checksum
    catches it; with checksums off, the rows fail or decode the same way on both paths."""
    path = next(p for p in corpus_files(corpus_dir) if _checksummed_fast_rows(p))
    data = path.read_bytes()
    spots = [ev.offset + ev.header.event_size - 6 for ev in read_events(path)
             if isinstance(ev, RowsEvent) and ev.type_code in rows.FAST_TYPES][:20]
    for spot in spots:
        bad = bytearray(data)
        bad[spot] ^= 0x5A
        for verify in (True, False):
            results = []
            for fast in (True, False):
                saved = rows.FAST_TYPES
                rows.FAST_TYPES = saved if fast else frozenset()
                dec = BinlogDecoder(file=path.name, verify_checksums=verify)
                try:
                    dec.feed(bytes(bad))
                    got: object = [_fields(ev) for ev in dec.events()]
                except BinlakeError as exc:
                    got = f"{type(exc).__name__}: {exc}"
                finally:
                    rows.FAST_TYPES = saved
                results.append(got)
            assert results[0] == results[1], (spot, verify)
            if verify:
                assert isinstance(results[0], str) and "CRC32" in results[0]
