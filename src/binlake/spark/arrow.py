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
are kept as tuples and transposed into Arrow columns once per batch: that keeps the cost of
decoding -> Arrow to a few microseconds per row.
"""
from __future__ import annotations

from array import array
import datetime as dt
from itertools import accumulate, repeat
import json
import re
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from ..binlog.constants import ColumnType as T
from ..binlog.events import Event, RowsEvent
from ..binlog.table_map import TableMapEvent
from ..cdcjson import _datetime_text, _dumps, _json_text, _str, _value_expr  # noqa: F401 (re-exported)
from ..changes import ChangeRecord, ChangeTracker
from ..values import ABSENT

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
    cached = tm.row_decoders.get("spark-json")
    if cached is not None:
        return cached
    ns: dict[str, Any] = {"ABSENT": ABSENT, "_str": _str, "_date": dt.date, "_dict": dict}
    lines = ["def encode(img):", "    if type(img) is _dict:", "        img = tuple(img.values())",
             f"    if len(img) != {len(tm.columns)}:",
             f"        raise ValueError('image of ' + str(len(img)) + ' values for "
             f"{len(tm.columns)} columns')",
             "    parts = []", "    add = parts.append"]
    for i, (name, c) in enumerate(zip(tm.column_names, tm.columns)):
        ns[f"k{i}"] = _str(name) + ":"
        expr = _value_expr(c, f"c{i}", ns)
        lines += [f"    v = img[{i}]",
                  "    if v is None:", f"        add(k{i} + 'null')",
                  "    elif v is not ABSENT:", f"        add(k{i} + ({expr}))"]
    lines.append("    return '{' + ','.join(parts) + '}'")
    exec(compile("\n".join(lines), f"<binlake json encoder {tm.qualified_name}>", "exec"), ns)
    encode = ns["encode"]
    tm.row_decoders["spark-json"] = encode
    return encode


class CdcBatchBuilder:
    """Accumulates change records as row tuples; `flush()` turns them into one RecordBatch.

    One tuple per record and a single transpose per batch is cheaper in Python than a list
    per column (one append instead of fifteen), and no dict per row is ever built.
    """

    def __init__(self) -> None:
        self._rows: list[tuple[Any, ...]] = []
        self._fidx: dict[str | None, int] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def image_bytes(self) -> int:
        """Size of the images held (to bound a batch by memory, not only by rows)."""
        return self._bytes

    def add(self, rec: ChangeRecord) -> None:
        fidx = self._fidx.get(rec.file)
        if fidx is None:
            fidx = self._fidx[rec.file] = file_index(rec.file)
        tm = rec.table_map
        if tm is not None:
            before, after = rec.raw_images
            if type(before) is not bytes and before is not None:
                before = (tm.row_decoders.get("spark-json") or image_encoder(tm))(before)
            if type(after) is not bytes and after is not None:
                after = (tm.row_decoders.get("spark-json") or image_encoder(tm))(after)
            self._bytes += len(before or b"") + len(after or b"")
            self._rows.append((
                rec.op, rec.schema, rec.table, rec.file, rec.pos, rec.end_pos, rec.row,
                rec.inner, rec.gtid, rec.timestamp, fidx, before, after, None, None))
        else:  # statement records: truncate, ddl
            ddl = rec.ddl
            self._rows.append((
                rec.op, rec.schema, rec.table, rec.file, rec.pos, rec.end_pos, rec.row,
                rec.inner, rec.gtid, rec.timestamp, fidx, None, None, rec.statement,
                _dumps(ddl.to_json()) if hasattr(ddl, "to_json") else None))

    def add_rows(self, ev: RowsEvent, gtid: str | None, start: int = 0,
                 stop: int | None = None) -> None:
        """Rows [start, stop) of a rows event, as `add` would add their records one by one."""
        rows = ev.rows if start == 0 and (stop is None or stop >= len(ev.rows)) else \
            ev.rows[start:stop]
        n = len(rows)
        if not n:
            return
        fidx = self._fidx.get(ev.file)
        if fidx is None:
            fidx = self._fidx[ev.file] = file_index(ev.file)
        kind = ev.kind
        if kind == "update":
            before: Any = [r[0] for r in rows]
            after: Any = [r[1] for r in rows]
        elif kind == "insert":
            before, after = repeat(None, n), rows
        else:
            before, after = rows, repeat(None, n)
        if type(rows[0]) is not bytes and not (kind == "update" and type(rows[0][0]) is bytes):
            enc = ev.table.row_decoders.get("spark-json") or image_encoder(ev.table)
            before = [None if v is None else enc(v) for v in before]
            after = [None if v is None else enc(v) for v in after]
        before, after = list(before), list(after)
        self._bytes += sum(map(len, filter(None, before))) + sum(map(len, filter(None, after)))
        tm = ev.table
        self._rows.extend(zip(
            repeat(kind, n), repeat(tm.schema, n), repeat(tm.table, n), repeat(ev.file, n),
            repeat(ev.offset, n), repeat(ev.end, n), range(start, start + n),
            repeat(ev.inner_index, n),
            repeat(gtid, n), repeat(ev.timestamp, n), repeat(fidx, n), before, after,
            repeat(None, n), repeat(None, n)))

    def flush(self) -> pa.RecordBatch:
        """The accumulated records as one batch in CDC_SCHEMA; the builder starts empty."""
        if not self._rows:
            return pa.RecordBatch.from_pylist([], schema=CDC_SCHEMA)
        (op, schema, table, file, pos, end_pos, row, inner, gtid, ts, fidx, before, after,
         query, ddl) = zip(*self._rows)
        self._rows = []
        self._bytes = 0
        i32, i64, s = pa.int32(), pa.int64(), pa.string()
        pos_a, row_a, inner_a = pa.array(pos, i64), pa.array(row, i32), pa.array(inner, i32)
        seq = pa.StructArray.from_arrays(
            [pa.array(fidx, i32), pos_a, pc.fill_null(inner_a, -1), row_a], fields=list(SEQ_TYPE))
        ts_a = pc.multiply(pa.array(ts, i64), 1_000_000).cast(pa.timestamp("us", tz="UTC"))
        cols = [
            pa.array(op, s), pa.array(schema, s), pa.array(table, s), pa.array(file, s), pos_a,
            pa.array(end_pos, i64), row_a, inner_a, pa.array(gtid, s), ts_a, seq,
            _image_array(before), _image_array(after), pa.array(query, s), pa.array(ddl, s),
        ]
        return pa.RecordBatch.from_arrays(cols, schema=CDC_SCHEMA)


def _image_array(images: tuple[Any, ...]) -> pa.Array:
    """JSON images (UTF-8 bytes from the C encoder, str from the Python one, or None) as one
    string array built from a single joined buffer: converting item by item would cost more
    than writing the images did. Arrow checks the UTF-8 once for the whole buffer."""
    vals = [v.encode() if type(v) is str else v for v in images]
    present = [v is not None for v in vals]
    data = b"".join([v for v in vals if v is not None])
    if len(data) >= 1 << 31:
        raise ValueError("a CDC batch holds 2 GiB of row images or more: lower its size")
    offsets = array("i", [0])
    offsets.extend(accumulate([len(v) if v is not None else 0 for v in vals]))
    validity = None if all(present) else pa.array(present, pa.bool_()).buffers()[1]
    arr = pa.Array.from_buffers(pa.string(), len(vals),
                                [validity, pa.py_buffer(offsets), pa.py_buffer(data)])
    arr.validate(full=True)
    return arr


MAX_BATCH_BYTES = 64 << 20
"""A batch is cut when its images reach this size: 10,000 rows of 16 KB documents would
otherwise hold 160 MB in Python and again in Arrow."""


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
                      statements: bool = True, max_bytes: int = MAX_BATCH_BYTES
                      ) -> Iterator[pa.RecordBatch]:
    """Decoded events -> CDC batches: exactly the records `iter_changes(events, tables)`.

    Rows events go in whole (`add_rows`), without a ChangeRecord per row; with a decoder
    made with `json_images=True` the images are already JSON, so the Python work per row is
    one tuple.
    """
    tracker = ChangeTracker(tables)
    builder = CdcBatchBuilder()
    for ev in events:
        if isinstance(ev, RowsEvent):
            tm = ev.table
            if tables is not None and not tables(tm.schema, tm.table):
                continue
            i, n = 0, len(ev.rows)
            while i < n:  # a big event is cut to keep batches within batch_size
                step = max(1, batch_size - len(builder))
                builder.add_rows(ev, tracker.gtid, i, i + step)
                i += step
                if i < n and (len(builder) >= batch_size or builder.image_bytes >= max_bytes):
                    yield builder.flush()
        else:
            for rec in tracker.records(ev):
                if rec.table_map is None and not statements:
                    continue
                builder.add(rec)
        if len(builder) >= batch_size or builder.image_bytes >= max_bytes:
            yield builder.flush()
    if len(builder):
        yield builder.flush()
