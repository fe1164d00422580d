"""The Arrow batch builder: segments (rows events, or parts of them) and single records must
give the same batches, whichever way the images were written."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_events
from binlake.cdc import arrow
from binlake.cdc.arrow import CDC_SCHEMA, CdcBatchBuilder, events_to_batches, iter_cdc_batches
from binlake._speedups.native import switches

# The C parts of the Arrow path (None: not built, or BINLAKE_PURE_PYTHON=1)
_ImageRows = getattr(switches.c, "ImageRows", None)
_ImageColumn = getattr(switches.c, "ImageColumn", None)
_Segments = getattr(switches.c, "CdcSegments", None)
_runs = getattr(switches.c, "run_column", None)

FILES = ("row-full-metafull-crc32", "row-minimal-metaminimal-crc32", "statement-mixed",
         "gtid-domains-xa", "large-event")


def _paths(corpus_dir: Path) -> list[Path]:
    return [corpus_dir / "generated-mariadb-10.11" / f"mariadb-10.11.19-{n}.000001" for n in FILES]


def _table(batches: list[pa.RecordBatch]) -> pa.Table:
    assert all(b.schema == CDC_SCHEMA for b in batches)
    for b in batches:
        b.validate(full=True)  # the images really are UTF-8
    return pa.Table.from_batches(batches, schema=CDC_SCHEMA)


@pytest.mark.parametrize("size", [1, 7, 10_000])
def test_every_path_gives_the_same_batches(corpus_dir: Path, size: int) -> None:
    for path in _paths(corpus_dir):
        by_record = _table(list(iter_cdc_batches(iter_changes(read_events(path)), batch_size=size)))
        from_values = _table(list(events_to_batches(read_events(path), batch_size=size)))
        from_json = _table(list(events_to_batches(read_events(path, json_images=True),
                                                  batch_size=size)))
        assert by_record.num_rows > 0
        assert by_record.equals(from_values), path.name
        assert by_record.equals(from_json), path.name


def _records_by_event(path: Path, json_images: bool) -> list[list]:
    """Records grouped as BinlogStream.batches() groups them: one list per rows event."""
    from binlake.cdc.changes import ChangeTracker

    tracker, out = ChangeTracker(), []
    for ev in read_events(path, json_images=json_images):
        recs = tracker.records(ev)
        if recs:
            out.append(recs)
    return out


@pytest.mark.parametrize("json_images", [True, False])
def test_a_rows_events_records_added_at_once_equal_one_by_one(corpus_dir: Path,
                                                              json_images: bool) -> None:
    for path in _paths(corpus_dir):
        lists = _records_by_event(path, json_images)
        one, many = CdcBatchBuilder(), CdcBatchBuilder()
        for recs in lists:
            for rec in recs:
                one.add(rec)
            many.add_records(recs)
        assert len(one) == len(many) and one.image_bytes == many.image_bytes
        if not len(one):
            continue
        if json_images and _ImageRows is not None and any(len(recs) > 1 for recs in lists):
            # whole events went in as one segment (the C writer's images; the pure-Python
            # decoders give values, which go record by record)
            assert many._segs.count < one._segs.count
        a, b = _table([one.flush()]), _table([many.flush()])
        assert a.equals(b), path.name


def test_without_the_c_buffers(corpus_dir: Path) -> None:
    path = _paths(corpus_dir)[0]
    expect = _table(list(events_to_batches(read_events(path, json_images=True), batch_size=5)))
    events = list(read_events(path, json_images=True))  # (the C decoder's packed rows)
    # Python image columns and segments, pyarrow.compute expanding the segments, the
    # packed rows read as a plain sequence
    with switches.set(c=None):
        got = _table(list(events_to_batches(iter(events), batch_size=5)))
    assert expect.equals(got)


def _column(parts: list) -> object:
    """An image column written from parts: k (k nulls), a list (images or None, one by one
    but for the first, which goes by extend) or (ImageRows, side, start, stop) (a run)."""
    col = arrow._new_column()
    for part in parts:
        if type(part) is int:
            col.nulls(part)
        elif type(part) is tuple:
            col.run(*part)
        elif part:
            col.append(part[0])
            col.extend(part[1:])
    return col


@pytest.mark.parametrize("c_columns", [True, False])
def test_nulls_empty_and_non_ascii_images(c_columns: bool) -> None:
    if c_columns and switches.c is None:
        pytest.skip("needs the C extension")
    images = [b'{"a":"\xc3\xa9"}', None, b"", None, b'{"b":1}'] * 3
    with switches.set(c=switches.c if c_columns else None):
        arr = arrow._image_array(_column([images]), len(images))
    arr.validate(full=True)
    assert arr.to_pylist() == [None if v is None else v.decode() for v in images]
    assert arrow._image_array(_column([]), 0).to_pylist() == []
    assert arrow._image_array(_column([[None], 1]), 2).null_count == 2
    # nulls after 9 valid rows, then valid rows again: the bits made late cover the rows before
    late = [b"1"] * 9 + [None] * 2 + [b"22"] * 7
    arr = arrow._image_array(_column([late[:9], 2, late[11:]]), len(late))
    assert arr.to_pylist() == [None if v is None else v.decode() for v in late]
    col = _column([[b"ab", None]])
    assert len(col) == 2 and col.nbytes == 2
    assert arrow._image_array(col, 2).to_pylist() == ["ab", None]
    assert len(col) == 0 and col.nbytes == 0  # finished: the column starts empty
    assert arrow._image_array(_column([[b"c"]]), 1).null_count == 0
    with pytest.raises(TypeError):
        _column([["str"]])
    with pytest.raises(ValueError):
        _column([-1])
    with pytest.raises(RuntimeError):
        arrow._image_array(_column([images]), len(images) + 1)  # the rows must add up


def _packed_events(corpus_dir: Path) -> list:
    from binlake.binlog.events import RowsEvent

    return [ev for path in _paths(corpus_dir) for ev in read_events(path, json_images=True)
            if isinstance(ev, RowsEvent) and type(ev.rows) is _ImageRows]


@pytest.mark.skipif(_ImageRows is None, reason="packed images come from the C extension")
def test_packed_runs_mixed_with_lists_and_nulls(corpus_dir: Path) -> None:
    events = _packed_events(corpus_dir)
    assert any(ev.kind == "update" for ev in events) and any(len(ev.rows) > 3 for ev in events)
    for ev in events:
        rows = ev.rows
        sides = 2 if ev.kind == "update" else 1
        for side in range(sides):
            images = [r[side] for r in rows] if sides == 2 else list(rows)
            n = len(images)
            mid = n // 2
            parts = [[b'{"x":1}', None], 3, (rows, side, 0, mid), [], (rows, side, mid, n),
                     (rows, side, n, n), 1]
            arr = arrow._image_array(_column(parts), n + 6)
            arr.validate(full=True)
            want = [b'{"x":1}', None, None, None, None] + images + [None]
            assert arr.to_pylist() == [None if v is None else v.decode() for v in want]
            assert rows.nbytes(0, mid) + rows.nbytes(mid, n) == rows.nbytes()
    with pytest.raises(ValueError):
        _column([(events[0].rows, 0, 0, len(events[0].rows) + 1)])
    with pytest.raises(ValueError):
        _column([(events[0].rows, 2, 0, 1)])  # no such side


@pytest.mark.skipif(_ImageRows is None, reason="packed images come from the C extension")
def test_long_runs_copied_at_every_alignment(corpus_dir: Path) -> None:
    """A run of 4 KiB or more is copied with streaming stores from the column's next 64-byte
    line (image_column.h, col_copy): the bytes before that line, the whole lines and the
    tail must all land, wherever in a line the run starts."""
    events = [ev for ev in _packed_events(corpus_dir) if 4096 <= ev.rows.nbytes() < 1 << 20]
    assert events, "the corpus has a rows event with 4 KiB to 1 MiB of images"
    for ev in events:
        side = 1 if ev.kind == "update" else 0
        images = [r[side] for r in ev.rows] if ev.kind == "update" else list(ev.rows)
        run = (ev.rows, side, 0, len(images))
        for lead in range(64):  # where in a 64-byte line the first run starts
            arr = arrow._image_array(_column([[b"x" * lead], run, run]), 1 + 2 * len(images))
            arr.validate(full=True)
            assert arr.to_pylist() == ["x" * lead] + [v.decode() for v in images * 2]


@pytest.mark.skipif(_ImageColumn is None, reason="needs the C extension")
def test_column_memory_is_reused_only_once_freed() -> None:
    """A finished column's data goes back to a pool when Arrow lets go of it: an array still
    held must keep its bytes however many columns are written and dropped meanwhile."""
    def images(tag: int, n: int) -> list[bytes]:
        return [b'{"k":%d,"pad":"%s"}' % (tag * 1000 + i, b"x" * (i % 97)) for i in range(n)]

    held = arrow._image_array(_column([images(1, 3000)]), 3000)
    held_view = memoryview(held.buffers()[2])
    first = held.to_pylist()
    for tag in range(2, 40):  # columns written, finished and freed: the pool is reused
        arr = arrow._image_array(_column([images(tag, 3000), 5]), 3005)
        assert arr.to_pylist()[:2] == [v.decode() for v in images(tag, 2)]
        del arr
    assert held.to_pylist() == first and held_view.tobytes() == b"".join(images(1, 3000))


def test_empty_builder() -> None:
    b = CdcBatchBuilder()
    assert len(b) == 0 and b.flush().num_rows == 0


@pytest.mark.skipif(_runs is None, reason="needs the C extension")
def test_segment_columns_expand_like_arrows_run_end_decoding() -> None:
    """The C expansion of per-event fields over their rows (run_column) against Arrow's own
    run-end decoding: nulls, fills, scaling, non-ASCII text, empty runs."""
    import pyarrow.compute as pc
    from array import array

    ends = array("i", [2, 3, 5, 6])
    run_ends = pa.array(ends, pa.int32())

    def arrow_way(values, typ):
        return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(run_ends, pa.array(values, typ)))

    def c_way(values, typ, kind, scale=1, fill=None):
        validity, data, *offsets = _runs(values, ends, kind, scale, fill)
        bufs = [None if validity is None else pa.py_buffer(validity)]
        bufs += [pa.py_buffer(o) for o in offsets]
        arr = pa.Array.from_buffers(typ, 6, bufs + [pa.py_buffer(data)])
        arr.validate(full=True)
        return arr

    ints = [7, None, -(2 ** 40), 3]
    assert c_way(ints, pa.int64(), "q").equals(arrow_way(ints, pa.int64()))
    assert c_way(ints[:2] + [5, 3], pa.int32(), "i").equals(arrow_way(ints[:2] + [5, 3], pa.int32()))
    assert c_way(ints, pa.int64(), "q", fill=-1).to_pylist() == [7, 7, -1, -(2 ** 40), -(2 ** 40), 3]
    assert c_way([1, 2, 3, None], pa.int64(), "q", 1_000_000).to_pylist() == \
        [1_000_000, 1_000_000, 2_000_000, 3_000_000, 3_000_000, None]
    text = ["insert", None, "tëxt 🚀", ""]
    assert c_way(text, pa.string(), "s").equals(arrow_way(text, pa.string()))
    with pytest.raises(OverflowError):
        _runs([1, 2, 2 ** 40, 4], ends, "i", 1, None)
    with pytest.raises(OverflowError):
        _runs([1, 2, 2 ** 62, 4], ends, "q", 1_000_000, None)
    with pytest.raises(ValueError):
        _runs([1, 2, 3], ends, "q", 1, None)  # one value per run
    with pytest.raises(TypeError):
        _runs([b"x", None, None, None], ends, "s", 1, None)
    with pytest.raises(ValueError):
        _runs([1, 2, 3, 4], array("i", [2, 1, 5, 6]), "q", 1, None)  # ends go back
    assert _runs([], array("i"), "s", 1, None)[1] == b""
    validity, data, offsets = _runs(["a", "b", "c"], array("i", [1, 1, 2]), "s", 1, None)
    assert validity is None and data == b"ac"  # an empty run adds no row


def test_adding_never_changes_an_events_rows(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows events whose images are plain lists (the general decoding path) are kept by the
    builder as parts; a single record added next must not be appended to the event's list."""
    from binlake.binlog.codecs import rows as rows_codec
    from binlake.binlog.events import RowsEvent
    from binlake.cdc.changes import ChangeTracker

    monkeypatch.setattr(rows_codec, "fast_rows", lambda *a, **k: None)
    path = _paths(corpus_dir)[0]
    events = [ev for ev in read_events(path, json_images=True)
              if isinstance(ev, RowsEvent) and ev.kind != "update"]
    assert events and all(type(ev.rows) is list for ev in events)
    snapshot = [list(ev.rows) for ev in events]
    rec = ChangeTracker().records(events[0])[0]
    b = CdcBatchBuilder()
    for ev in events:
        b.add_rows(ev, None)
        b.add(rec)
    assert [ev.rows for ev in events] == snapshot
    assert b.flush().num_rows == sum(map(len, snapshot)) + len(events)


@pytest.mark.skipif(_Segments is None or _ImageRows is None,
                    reason="needs the C extension")
def test_events_and_records_taken_in_c_give_the_python_batches(
        corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CdcSegments.event/record (one C call per rows event or record) against the builder's
    Python (segments kept in Python, images through the same C columns)."""
    taken = {"event": 0, "record": 0}
    real_new = arrow._new_segments

    class Counting:
        def __init__(self, fidx):
            self._s = real_new(fidx)

        def __getattr__(self, name):
            return getattr(self._s, name)

        def __len__(self):
            return len(self._s)

        def event(self, *args):
            got = self._s.event(*args)
            taken["event"] += got is not None
            return got

        def record(self, *args):
            got = self._s.record(*args)
            taken["record"] += bool(got)
            return got

    for path in _paths(corpus_dir):
        for size in (3, 10_000):
            monkeypatch.setattr(arrow, "_new_segments", Counting)
            c_events = _table(list(events_to_batches(read_events(path, json_images=True),
                                                     batch_size=size)))
            one = CdcBatchBuilder()
            for recs in _records_by_event(path, True):
                for rec in recs:
                    one.add(rec)
            c_records = _table([one.flush()])
            monkeypatch.setattr(arrow, "_new_segments", arrow._PySegments)
            py_events = _table(list(events_to_batches(read_events(path, json_images=True),
                                                      batch_size=size)))
            assert c_events.equals(py_events), path.name
            assert c_records.equals(py_events), path.name
    assert taken["event"] > 0 and taken["record"] > 0


@pytest.mark.skipif(_Segments is None, reason="needs the C extension")
def test_c_segments_refuse_what_they_cannot_take(corpus_dir: Path) -> None:
    from binlake.binlog.events import RowsEvent

    seen: list[str | None] = []

    def file_index(name):
        seen.append(name)
        return arrow.file_index(name)

    fidx: dict = {}
    segs = _Segments(fidx, file_index)
    before, after = _ImageColumn(), _ImageColumn()
    path = _paths(corpus_dir)[0]
    values = next(ev for ev in read_events(path) if isinstance(ev, RowsEvent))
    assert segs.event(values, None, before, after, 0, None) is None  # value tuples: Python's
    packed = next(ev for ev in read_events(path, json_images=True) if isinstance(ev, RowsEvent))
    assert segs.event(packed, None, [], [], 0, None) is None  # columns kept as Python lists
    assert segs.event(packed, None, before, after, 0, 0) == 0 and len(segs) == 0
    got = segs.event(packed, "0-1-2", before, after, 0, None)
    assert got == packed.rows.nbytes() == segs.nbytes and len(segs) == len(packed.rows)
    assert seen == [packed.file] and fidx == {packed.file: arrow.file_index(packed.file)}
    segs.event(packed, None, before, after, 0, 1)
    assert seen == [packed.file]  # the file's index is looked up once
    with pytest.raises(ValueError):
        segs.segment(("insert",) * 12, 0, 0)  # a segment needs rows
    with pytest.raises(ValueError):
        segs.segment_rows(("insert",) * 12, [])
    with pytest.raises(ValueError):
        segs.segment_rows(("insert",) * 12, [-1])
    with pytest.raises(ValueError):
        segs.event(packed, None, before, after, -1, None)
    fields, ends, rows = segs.finish()
    n = len(packed.rows)
    assert len(fields) == 2 and segs.count == 0 and fields[0][7] == "0-1-2"
    assert list(memoryview(ends).cast("i")) == [n, n + 1]
    assert list(memoryview(rows).cast("i")) == [*range(n), 0]
    assert len(segs) == 0 and segs.nbytes == 0
    assert len(before) == len(after) == n + 1  # (the columns are the caller's to finish)
