"""Change records -> Arrow record batches with one fixed CDC schema for every table.

Why one schema: a binlog interleaves many tables, and Spark sources need a schema before any
row is read. Row images therefore travel as JSON text (`before`/`after`) with the exact
values binlake decodes (DECIMAL as strings, unsigned 64-bit as integers, temporals as ISO
text, binary as base64, zero dates as their MySQL text); the apply step types them per table
(`typing.py`). JSON columns are carried as their JSON *text* (a string inside the image), so
a JSON scalar like `"abc"` stays distinguishable from the text `abc`.

`seq` is the total order of changes: a struct (file_index, pos, inner, row) compared field by
field. It cannot overflow (no bit packing) and costs nothing per row: it is built from
columns that exist anyway.

Row images are encoded by a per-table generated function (no intermediate dicts), records
are kept as tuples and transposed into Arrow columns once per batch: that keeps decoding ->
Arrow cheap per row.
"""
from __future__ import annotations

from array import array
import datetime as dt
from itertools import accumulate, repeat
from operator import itemgetter
import re
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa

from .._speedups.native import switches
from ..binlog.decoder import RunMerge
from ..binlog.events import Event, RowsEvent
from ..binlog.files import read_part, read_runs
from ..binlog.table_map import TableMapEvent
from .jsontext import dumps, json_string, value_expr
from .changes import ChangeRecord, ChangeTracker, XaLeftOut
from ..binlog.values import ABSENT

SEQ_TYPE = pa.struct([
    pa.field("file_index", pa.int32()),
    pa.field("pos", pa.int64()),
    pa.field("inner", pa.int32()),
    pa.field("row", pa.int32()),
])

CDC_SCHEMA = pa.schema([
    pa.field("op", pa.string()),        # insert | update | delete | truncate | ddl
    pa.field("schema", pa.string()),
    pa.field("table", pa.string()),
    pa.field("file", pa.string()),
    pa.field("pos", pa.int64()),
    pa.field("end_pos", pa.int64()),
    pa.field("row", pa.int32()),
    pa.field("inner", pa.int32()),
    pa.field("gtid", pa.string()),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("seq", SEQ_TYPE),
    pa.field("before", pa.string()),    # JSON object; absent columns left out, NULL = null
    pa.field("after", pa.string()),
    pa.field("query", pa.string()),     # statement text of truncate / ddl records
    pa.field("ddl", pa.string()),       # ddl records: the schema history's change, as JSON
])

CDC_DDL = ("op string, schema string, table string, file string, pos bigint, end_pos bigint, "
           "row int, inner int, gtid string, ts timestamp, "
           "seq struct<file_index: int, pos: bigint, inner: int, row: int>, "
           "before string, after string, query string, ddl string")
"""The same schema in Spark's DDL notation (Spark `timestamp` = UTC instant, microseconds)."""

OPS = ("insert", "update", "delete", "truncate", "ddl", "statement", "chunk")
"""Every op a CDC row can carry; truncate/ddl/statement rows come from statements (no images)."""

_FILE_INDEX = re.compile(r"\.(\d+)$")


def file_index(name: str | None) -> int:
    """'mariadb-bin.000042' -> 42; files without a numeric suffix sort first (0)."""
    if not name:
        return 0
    m = _FILE_INDEX.search(name)
    return int(m.group(1)) if m else 0


def image_encoder(tm: TableMapEvent) -> Callable[[Any], str]:
    """A compiled `image -> JSON text` for one table map (cached on the table map).

    The image is the decoder's value tuple (column order, ABSENT outside the image) or a
    name -> value dict built from it. Generated per table like the row decoders: one branch
    per column with the column's own serializer, so a row costs a few string operations per
    value and one join.
    """
    cached: Callable[[Any], str] | None = tm.row_decoders.get("spark-json")
    if cached is not None:
        return cached
    ns: dict[str, Any] = {"ABSENT": ABSENT, "json_string": json_string, "_date": dt.date, "_dict": dict}
    lines = ["def encode(img):", "    if type(img) is _dict:", "        img = tuple(img.values())",
             f"    if len(img) != {len(tm.columns)}:",
             f"        raise ValueError('image of ' + str(len(img)) + ' values for "
             f"{len(tm.columns)} columns')",
             "    parts = []", "    add = parts.append"]
    for i, (name, c) in enumerate(zip(tm.column_names, tm.columns)):
        ns[f"k{i}"] = json_string(name) + ":"
        expr = value_expr(c, f"c{i}", ns)
        lines += [f"    v = img[{i}]",
                  "    if v is None:", f"        add(k{i} + 'null')",
                  "    elif v is not ABSENT:", f"        add(k{i} + ({expr}))"]
    lines.append("    return '{' + ','.join(parts) + '}'")
    exec(compile("\n".join(lines), f"<binlake json encoder {tm.qualified_name}>", "exec"), ns)
    encode: Callable[[Any], str] = ns["encode"]
    tm.row_decoders["spark-json"] = encode
    return encode


class CdcBatchBuilder:
    """Accumulates change records; `flush()` turns them into one RecordBatch.

    Records are kept by segment: a rows event (or the part of one in this batch) is one
    segment, whose op, table, position, gtid and time are stored once, not once per row; a
    single record (`add`) is a segment of one row. Per row only the row number is kept; the
    images go straight into their Arrow column (an ImageColumn, in C): an event's packed
    images (ImageRows) in one copy while they are still in cache. `flush` expands the
    segment columns to rows in Arrow (run-end decoding), so a row costs no Python tuple and
    no Python-level transpose. With the C extension, a rows event with packed images and a
    record with JSON images go in with one C call each (CdcSegments: `event`, `record`).
    """

    def __init__(self) -> None:
        self._fidx: dict[str | None, int] = {}
        # the segments (fields, run ends, row numbers) and the before/after image columns;
        # each starts empty again when flush() takes its contents
        self._segs: Any = _new_segments(self._fidx)
        self._before: Any = _new_column()
        self._after: Any = _new_column()
        c = switches.c  # (the C parts, or None: their Python twins)
        self._image_rows = getattr(c, "ImageRows", None)
        self._runs = getattr(c, "run_column", None)

    def __len__(self) -> int:
        return len(self._segs)

    @property
    def image_bytes(self) -> int:
        """Size of the images held (to bound a batch by memory, not only by rows)."""
        nbytes: int = self._segs.nbytes
        return nbytes

    def _file_index(self, file: str | None) -> int:
        fidx = self._fidx.get(file)
        if fidx is None:
            fidx = self._fidx[file] = file_index(file)
        return fidx

    def add(self, rec: ChangeRecord) -> None:
        if self._segs.record(rec, self._before, self._after):  # (C: JSON images)
            return
        tm = rec.table_map
        if tm is not None:
            before, after = rec.raw_images
            if type(before) is not bytes and before is not None:
                before = (tm.row_decoders.get("spark-json") or image_encoder(tm))(before).encode()
            if type(after) is not bytes and after is not None:
                after = (tm.row_decoders.get("spark-json") or image_encoder(tm))(after).encode()
            self._segs.nbytes += len(before or b"") + len(after or b"")
            query = ddl_text = None
            self._before.append(before)
            self._after.append(after)
        else:  # statement records: truncate, ddl
            before = after = None
            ddl = rec.ddl
            query = rec.statement
            ddl_text = dumps(ddl.to_json()) if hasattr(ddl, "to_json") else None
            self._before.nulls(1)
            self._after.nulls(1)
        self._segs.segment((rec.op, rec.schema, rec.table, rec.file, rec.pos, rec.end_pos,
                            rec.inner, rec.gtid, rec.timestamp, self._file_index(rec.file),
                            query, ddl_text), rec.row, 1)

    def add_records(self, recs: list[ChangeRecord]) -> None:
        """The records of one rows event (a list from BinlogStream.batches()) as one segment,
        without Python work per record beyond reading its images; statements, records of
        several events and images not yet JSON go record by record."""
        first, last = recs[0], recs[-1]
        if len(recs) == 1:  # (a one-row event: the common case of small transactions)
            self.add(first)
            return
        if (first.table_map is None or last.pos != first.pos
                or last.inner != first.inner or last.file != first.file
                or last.table_map is not first.table_map or last.op != first.op):
            for rec in recs:
                self.add(rec)
            return
        images = [rec.raw_images for rec in recs]
        before, after = list(map(_first, images)), list(map(_second, images))
        probe = before[0] if before[0] is not None else after[0]
        if type(probe) is not bytes:
            for rec in recs:
                self.add(rec)
            return
        self._before.extend(before)
        self._after.extend(after)
        self._segs.nbytes += (sum(map(len, filter(None, before)))
                              + sum(map(len, filter(None, after))))
        file = first.file
        self._segs.segment_rows((first.op, first.schema, first.table, file, first.pos,
                                 first.end_pos, first.inner, first.gtid, first.timestamp,
                                 self._file_index(file), None, None), [rec.row for rec in recs])

    def add_rows(self, ev: RowsEvent, gtid: str | None, start: int = 0,
                 stop: int | None = None) -> None:
        """Rows [start, stop) of a rows event, as `add` would add their records one by one."""
        if self._segs.event(ev, gtid, self._before, self._after, start, stop) is None:
            self._add_rows_python(ev, gtid, start, stop)  # (C takes packed images)

    def _add_rows_python(self, ev: RowsEvent, gtid: str | None, start: int = 0,
                         stop: int | None = None) -> None:
        """add_rows for what CdcSegments.event does not take."""
        rows: Any = ev.rows  # (packed ImageRows, or a list)
        total = len(rows)
        stop = total if stop is None or stop > total else stop
        n = stop - start
        if n <= 0:
            return
        kind = ev.kind
        if type(rows) is self._image_rows:  # packed JSON images: each side copied in one go
            if kind == "update":
                self._before.run(rows, 0, start, stop)
                self._after.run(rows, 1, start, stop)
            elif kind == "insert":
                self._before.nulls(n)
                self._after.run(rows, 0, start, stop)
            else:
                self._before.run(rows, 0, start, stop)
                self._after.nulls(n)
            self._segs.nbytes += rows.nbytes(start, stop)
        else:
            if start or stop < total:
                rows = rows[start:stop]
            # images: JSON bytes from the C writer, else value tuples encoded here
            if kind == "update":
                before: Any = list(map(_first, rows))
                after: Any = list(map(_second, rows))
                if type(before[0]) is not bytes:
                    before, after = self._encoded(ev, before), self._encoded(ev, after)
                self._before.extend(before)
                self._after.extend(after)
                self._segs.nbytes += sum(map(len, before)) + sum(map(len, after))
            else:
                if type(rows[0]) is not bytes:
                    rows = self._encoded(ev, rows)
                if kind == "insert":
                    self._before.nulls(n)
                    self._after.extend(rows)
                else:
                    self._before.extend(rows)
                    self._after.nulls(n)
                self._segs.nbytes += sum(map(len, rows))
        tm, file = ev.table, ev.file
        self._segs.segment((kind, tm.schema, tm.table, file, ev.offset, ev.end, ev.inner_index,
                            gtid, ev.timestamp, self._file_index(file), None, None), start, n)

    @staticmethod
    def _encoded(ev: RowsEvent, images: list[Any]) -> list[bytes]:
        enc = ev.table.row_decoders.get("spark-json") or image_encoder(ev.table)
        return [enc(v).encode() for v in images]

    def flush(self) -> pa.RecordBatch:
        """The accumulated records as one batch in CDC_SCHEMA; the builder starts empty."""
        n = len(self._segs)
        if not n:
            return pa.RecordBatch.from_pylist([], schema=CDC_SCHEMA)
        segs, ends, row = self._segs.finish()
        before, after = self._before, self._after
        (op, schema, table, file, pos, end_pos, inner, gtid, ts, fidx, query, ddl) = zip(*segs)
        runs = self._runs
        if runs is not None:
            def rows(values: Any, typ: pa.DataType, kind: str, scale: int = 1,
                     fill: int | None = None) -> pa.Array:
                """A segment column as a row column, its buffers written in C."""
                validity, data, *offsets = runs(values, ends, kind, scale, fill)
                bufs = [None if validity is None else pa.py_buffer(validity)]
                bufs += [pa.py_buffer(offsets[0])] if offsets else []
                return pa.Array.from_buffers(typ, n, bufs + [pa.py_buffer(data)])
        else:  # no C extension: Arrow's run-end decoding
            import pyarrow.compute as pc

            run_ends = _int32_array(ends, len(segs))

            def rows(values: Any, typ: pa.DataType, kind: str, scale: int = 1,
                     fill: int | None = None) -> pa.Array:
                arr = pa.array(values, pa.int64() if scale != 1 else typ)
                if scale != 1:
                    arr = pc.multiply(arr, scale).cast(typ)
                if fill is not None:
                    arr = pc.fill_null(arr, fill)
                return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(run_ends, arr))

        i32, i64, s = pa.int32(), pa.int64(), pa.string()
        pos_a, inner_a, row_a = rows(pos, i64, "q"), rows(inner, i32, "i"), _int32_array(row, n)
        seq = pa.StructArray.from_arrays(
            [rows(fidx, i32, "i"), pos_a, rows(inner, i32, "i", fill=-1), row_a],
            fields=list(SEQ_TYPE))
        cols = [
            rows(op, s, "s"), rows(schema, s, "s"), rows(table, s, "s"), rows(file, s, "s"),
            pos_a, rows(end_pos, i64, "q"), row_a, inner_a, rows(gtid, s, "s"),
            rows(ts, CDC_SCHEMA.field("ts").type, "q", 1_000_000), seq,
            _image_array(before, n), _image_array(after, n), rows(query, s, "s"),
            rows(ddl, s, "s"),
        ]
        return pa.RecordBatch.from_arrays(cols, schema=CDC_SCHEMA)


_first, _second = itemgetter(0), itemgetter(1)


def _int32_array(values: Any, n: int) -> pa.Array:
    """n int32 items (an array('i'), or their bytes) as an Arrow int32 array, without a
    Python int per item."""
    return pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(values)])


class _ListColumn:
    """An image column kept as a Python list, where there is no C extension (ImageColumn's
    methods; no packed images come without it either)."""

    def __init__(self) -> None:
        self._images: list[bytes | None] = []

    def __len__(self) -> int:
        return len(self._images)

    @property
    def nbytes(self) -> int:
        return sum(len(v) for v in self._images if v is not None)

    def nulls(self, k: int) -> None:
        if k < 0:
            raise ValueError("negative null run")
        self._images += repeat(None, k)

    def append(self, image: bytes | None) -> None:
        if image is not None and type(image) is not bytes:
            raise TypeError(f"row images must be bytes or None, not {type(image).__name__}")
        self._images.append(image)

    def extend(self, images: Iterable[bytes | None]) -> None:
        for image in images:
            self.append(image)

    def run(self, rows: Any, side: int, start: int, stop: int) -> None:
        raise TypeError("packed images (ImageRows) come with the C extension only")

    def finish(self) -> tuple[int, Any, Any, Any]:
        images, self._images = self._images, []
        present = [v is not None for v in images]
        blob = b"".join([v for v in images if v is not None])
        if len(blob) >= 1 << 31:
            raise ValueError("a CDC batch holds 2 GiB of row images or more: lower its size")
        offs = array("i", [0])
        offs.extend(accumulate([len(v) if v is not None else 0 for v in images]))
        validity = None
        if not all(present):
            validity = pa.array(present, pa.bool_()).buffers()[1].to_pybytes()
        return len(images), validity, offs, blob


class _PySegments:
    """CdcSegments (C) where there is no C extension: the segment fields, run ends and row
    numbers; `event` and `record` take nothing (the builder's Python adds everything)."""

    def __init__(self, fidx: dict[str | None, int]) -> None:
        self._start()

    def _start(self) -> None:
        self.segs: list[tuple[Any, ...]] = []
        self.ends = array("i")
        self.rows = array("i")
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def count(self) -> int:
        return len(self.segs)

    def segment(self, seg: tuple[Any, ...], first: int, count: int) -> None:
        self.segment_rows(seg, range(first, first + count))

    def segment_rows(self, seg: tuple[Any, ...], rows: Iterable[int]) -> None:
        k = len(self.rows)
        self.rows.extend(rows)
        if len(self.rows) == k:
            raise ValueError("a segment needs rows")
        self.segs.append(seg)
        self.ends.append(len(self.rows))

    def event(self, *_: Any) -> None:
        return None

    def record(self, *_: Any) -> bool:
        return False

    def finish(self) -> tuple[list[tuple[Any, ...]], array[int], array[int]]:
        out = self.segs, self.ends, self.rows
        self._start()
        return out


def _new_segments(fidx: dict[str | None, int]) -> Any:
    """Empty segments: CdcSegments (C), else _PySegments."""
    c = switches.c
    if c is not None:
        return c.CdcSegments(fidx, file_index)
    return _PySegments(fidx)


def _new_column() -> Any:
    """An empty image column: ImageColumn (C), else a _ListColumn."""
    c = switches.c
    return c.ImageColumn() if c is not None else _ListColumn()


def _image_array(column: Any, n: int) -> pa.Array:
    """An image column's rows as one string array of n rows (the column starts empty).

    The images are UTF-8 by construction (the C writer validates every text it copies and
    encodes the rest from str; the Python encoder's str is encoded strictly), so Arrow checks
    the offsets, not the UTF-8 again."""
    rows, validity, offsets, data = column.finish()
    if rows != n:
        raise RuntimeError(f"CDC batch of {n} rows got {rows} row images")
    bufs = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(offsets),
            pa.py_buffer(data)]
    arr = pa.Array.from_buffers(pa.string(), n, bufs)
    arr.validate()
    return arr


MAX_BATCH_BYTES = 8 << 20
"""A batch is cut when its images reach this size: 10,000 rows of 16 KB documents would
otherwise hold 160 MB. 8 MiB rather than more: a batch's images are held twice at the peak
(the batch its consumer holds, the next one's columns being written), and the C columns
keep the freed buffers of up to 64 MiB for reuse (image_column.h); larger batches hold
more memory and fault in more fresh zeroed pages."""


def iter_cdc_batches(records: Iterable[ChangeRecord], *, batch_size: int = 10_000,
                     statements: bool = True, max_bytes: int = MAX_BATCH_BYTES
                     ) -> Iterator[pa.RecordBatch]:
    """Change records (from files or a live stream) -> CDC batches of at most `batch_size`
    rows (and about `max_bytes` of images), never empty. `statements=False` leaves out
    truncate/ddl records."""
    builder = CdcBatchBuilder()
    add = builder.add
    for rec in records:
        if rec.table_map is None and not statements:
            continue
        add(rec)
        if len(builder) >= batch_size or builder.image_bytes >= max_bytes:
            yield builder.flush()
    if len(builder):
        yield builder.flush()


def events_to_batches(events: Iterable[Event], *, batch_size: int = 10_000,
                      tables: Callable[[str, str], bool] | None = None,
                      statements: bool = True, max_bytes: int = MAX_BATCH_BYTES,
                      reread: Callable[[Any, Any], tuple[list[ChangeRecord], int]] | None = None,
                      locate: Callable[[str, Any], Any] | None = None,
                      decoder: Any = None) -> Iterator[pa.RecordBatch]:
    """Decoded events -> CDC batches: exactly the records `iter_changes(events, tables)`.

    Rows events go in whole (`add_rows`), without a ChangeRecord per row; with a decoder
    made with `json_images=True` the images are already JSON, so there is no Python work per
    row at all (C-level list extends only). `decoder`: the one `events` come from (one
    file, `tables` its filter), whose left-out tables' rows events this driver lets it pass
    over unseen where nothing needs them (its `left_out`: `changes.XaLeftOut`). A reader of
    a file: `file_batches`.
    """
    tracker = ChangeTracker(tables, reread=reread, locate=locate)  # (XA: binlake.cdc.xa)
    return _batches(events, tracker, CdcBatchBuilder(), tables, decoder, batch_size,
                    statements, max_bytes)


def file_batches(path: Any, begin: int | None = None, end: int | None = None, *,
                 decoder: Any, batch_size: int = 10_000,
                 tables: Callable[[str, str], bool] | None = None,
                 statements: bool = True, max_bytes: int = MAX_BATCH_BYTES,
                 reread: Callable[[Any, Any], tuple[list[ChangeRecord], int]] | None = None,
                 locate: Callable[[str, Any], Any] | None = None) -> Iterator[pa.RecordBatch]:
    """One file's CDC batches (the event groups that start in [begin, end), as read_part
    reads them) through `decoder`: `events_to_batches(read_part(...), decoder=decoder)`'s
    batches. The segments driver: with JSON images and the C extension, the decoder's
    scanner adds the rows events of its runs (and the TABLE_MAPs between them) to the
    batch itself and hands out how many (a RunMerge of segments), so there is no Python
    work per event either."""
    tracker = ChangeTracker(tables, reread=reread, locate=locate)
    builder = CdcBatchBuilder()
    segs = builder._segs
    check = tables is not None and decoder.table_filter is not tables
    if (switches.segments and not check and decoder.json_images
            and type(segs) is not _PySegments):
        xa = tracker.xa
        merge = RunMerge(lambda: (tracker.gtid, not xa.holding),
                         segments=(segs, builder._before, builder._after, batch_size, max_bytes))
        items: Iterable[Any] = read_runs(path, merge, decoder=decoder, start=begin, end=end)
    else:
        items = read_part(path, begin, end, decoder=decoder)
    return _batches(items, tracker, builder, tables, decoder, batch_size, statements,
                    max_bytes)


def _batches(events: Iterable[Any], tracker: ChangeTracker, builder: CdcBatchBuilder,
             tables: Callable[[str, str], bool] | None, decoder: Any, batch_size: int,
             statements: bool, max_bytes: int) -> Iterator[pa.RecordBatch]:
    """The batches of events_to_batches and file_batches; an int among the events: that
    many events the decoder added to the batch (file_batches' segments)."""
    add_rows, add_rows_python = builder.add_rows, builder._add_rows_python
    segs, before, after = builder._segs, builder._before, builder._after
    take = segs.event  # C: a whole event with packed images in one call (None: not taken)
    xa = tracker.xa
    # A decoder that filters with `tables` itself marks the left-out events (`filtered`).
    check = tables is not None and getattr(decoder, "table_filter", None) is not tables
    if decoder is not None and decoder.table_filter is not None:  # (the driver owns them)
        decoder.left_out = XaLeftOut(tracker)
    for ev in events:
        if type(ev) is int:  # rows events (and TABLE_MAPs) the decoder added to the batch
            if len(segs) >= batch_size or segs.nbytes >= max_bytes:
                yield builder.flush()
            continue
        if isinstance(ev, RowsEvent) and not xa.holding:  # (an XA PREPARE's are held)
            if ev.filtered:
                continue
            if check and tables is not None:
                tm = ev.table
                if not tables(tm.schema, tm.table):
                    continue
            n = len(ev.rows)
            if len(segs) + n <= batch_size:  # the whole event fits: the common case
                if take(ev, tracker.gtid, before, after, 0, None) is None:
                    add_rows_python(ev, tracker.gtid)  # (not asking C twice)
            else:
                i = 0
                while i < n:  # a big event is cut to keep batches within batch_size
                    step = max(1, batch_size - len(segs))
                    add_rows(ev, tracker.gtid, i, i + step)
                    i += step
                    if i < n and (len(segs) >= batch_size or segs.nbytes >= max_bytes):
                        yield builder.flush()
        else:
            for rec in tracker.records(ev):
                if rec.table_map is None and not statements:
                    continue
                builder.add(rec)
        if len(segs) >= batch_size or segs.nbytes >= max_bytes:
            yield builder.flush()
    if len(segs):
        yield builder.flush()
