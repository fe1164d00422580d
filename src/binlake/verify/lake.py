"""The Delta side of `binlake verify` in the driver: the chunk checksums of
`binlake.spark.verify.checksums`, over the Delta table read by delta-rs into Arrow.

On a local master the Spark job paid more than the source server's hashing: 4-6.7 JVM CPU s
for the 1M workload's tables, of which reading the columns was about 3 (benchmarks/README,
Verify). Arrow reads the same Parquet for a fifth of that, and the whole side takes about
1.0-1.3 CPU s. Each column's canonical text is built from Arrow kernels per column kind,
exactly as `spark.verify.value_text` writes it; the C core (`row_sums`, through
`fold_columns`) joins each row's text, hashes it with SHA-1 and folds it into its chunk
(`fold_rows` is its Python twin). The table is read a record batch of about BATCH_BYTES at a
time, so memory stays bounded by a batch. Narrowing differences down, `--repair` and tables
the driver does not read as Spark does (`open_lake`) stay with Spark.
"""
from __future__ import annotations

import hashlib
import logging
from array import array
from bisect import bisect_right
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Iterator

from .._speedups.native import function
from .canonical import Column, VerifyError, boundary_param
from .source import Plan, SourceTable

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

log = logging.getLogger(__name__)

START_AT = "__START_AT"
END_AT = "__END_AT"
READABLE_FEATURES = frozenset({"timestampNtz", "appendOnly", "invariants", "checkConstraints",
                               "changeDataFeed", "generatedColumns", "domainMetadata",
                               "vacuumProtocolCheck", "inCommitTimestamp"})
"""Table features that do not change how the table's rows are read."""
BATCH_ROWS = 8192
BATCH_BYTES = 16 << 20
"""About this much Parquet data per record batch (`_batch_rows`)."""
BOUND_ROWS = 20_000_000
"""Above this many rows (by the Delta log's statistics) a table's keys are not sorted in the
driver's memory for its chunk boundaries: the source is walked instead."""


def open_lake(path: str, plan: Plan) -> "DriverLake | str":
    """The Delta table at `path` (one that exists) for the driver, or why the driver does not
    read it as Spark does (Spark then takes it)."""
    try:
        lake = DriverLake(path, plan)
    except Exception as exc:  # noqa: BLE001 - delta-rs cannot open it: Spark says why
        return f"delta-rs cannot open it ({type(exc).__name__})"
    why = lake.unreadable() or (lake.unread() if lake.comparable else None)
    return lake if why is None else why


class DriverLake:
    """A synced Delta table whose chunk checksums the driver computes (see the module)."""

    def __init__(self, path: str, plan: Plan) -> None:
        import pyarrow as pa
        from deltalake import DeltaTable

        self.path, self.plan = path, plan
        self.table = DeltaTable(path)
        self.types = {f.name: f.type for f in pa.schema(self.table.schema().to_arrow())}
        self.scd2 = END_AT in self.types
        ours = [n for n in self.types if not n.startswith("_binlake_")
                and n not in (START_AT, END_AT)]
        lower = {n.lower(): n for n in ours}
        t = plan.table
        self.names = {c.name: lower[c.name.lower()] for c in t.columns
                      if c.name.lower() in lower}
        self.missing = [c.name for c in t.columns if c.name not in self.names]
        self.extra = sorted(set(ours) - set(self.names.values()))

    def unreadable(self) -> str | None:
        """None when delta-rs reads the table's current rows as Spark does; else why not
        (deletion vectors, column mapping, an unknown feature: Spark reads those)."""
        proto = self.table.protocol()
        if proto.min_reader_version > 3:
            return f"reader protocol {proto.min_reader_version}"
        features = set(proto.reader_features or ()) | set(proto.writer_features or ())
        if proto.min_reader_version == 2:
            return "column mapping"
        if features - READABLE_FEATURES:
            return f"table features {sorted(features - READABLE_FEATURES)}"
        return None

    def unread(self) -> str | None:
        """None when every compared column's Delta type is one `value_text` reads as Spark
        does; else why not (the table then goes to Spark, which says what is wrong)."""
        import pyarrow as pa

        for c in self.plan.table.columns:
            try:
                value_text(c, pa.array([], self.types[self.names[c.name]]))
            except VerifyError as exc:
                return str(exc)
        return None

    def rows_at_most(self, limit: int) -> bool:
        """Whether the Delta log's statistics show at most `limit` rows (False when a file
        has none)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        counts = pa.table(self.table.get_add_actions(flatten=True)).column("num_records")
        if counts.null_count:
            return False
        return bool((pc.sum(counts).as_py() or 0) <= limit)

    @property
    def comparable(self) -> bool:
        return not self.missing and all(k in self.names for k in self.plan.table.key)

    def batches(self, columns: list[str] | None = None) -> Iterator["pa.RecordBatch"]:
        """The current rows (SCD2: the open versions) of the compared columns, or of the
        Delta columns `columns`. A local, unpartitioned table's files are read by Arrow
        directly (delta-rs's dataset reads them through Python's file layer, at twice the
        CPU); others by delta-rs."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        cols = columns or [self.names[c.name] for c in self.plan.table.columns]
        want = pa.schema([pa.field(n, self.types[n]) for n in
                          cols + ([END_AT] if self.scd2 else [])])
        files = [u for u in self.table.file_uris()]
        if self.table.metadata().partition_columns or \
                not all(u.startswith(("file:", "/")) for u in files):
            where = ds.field(END_AT).is_null() if self.scd2 else None
            yield from self.table.to_pyarrow_dataset().to_batches(
                columns=cols, filter=where, batch_size=BATCH_ROWS)
            return
        for uri in files:
            f = pq.ParquetFile(_local(uri))
            have = set(f.schema_arrow.names)
            for batch in f.iter_batches(batch_size=_batch_rows(f.metadata), use_threads=False,
                                        columns=[n for n in want.names if n in have]):
                batch = _conform(batch, want)
                if self.scd2:
                    batch = batch.filter(pc.is_null(batch.column(END_AT)))
                yield batch.select(cols)

    def checksums(self) -> dict[int, tuple[int, int]]:
        """chunk index -> (rows, BIT_XOR of the 64-bit row hashes, unsigned)."""
        t = self.plan.table
        names = [self.names[c.name] for c in t.columns]
        key_at = [names.index(self.names[k]) for k in t.key]
        chunk_of = _chunker(self.plan, [t.columns[i] for i in key_at])
        slots = self.plan.buckets or max((c.index for c in self.plan.chunks), default=-1) + 1
        counts, xors = array("Q", bytes(8 * slots)), array("Q", bytes(8 * slots))
        fold = fold_columns if function("row_sums") else fold_rows
        try:
            for batch in self.batches():
                if not batch.num_rows:
                    continue
                texts = [value_text(c, batch.column(i)) for i, c in enumerate(t.columns)]
                fold(t.columns, texts, chunk_of(batch, key_at, texts), counts, xors)
        except (OSError, ValueError, TypeError, NotImplementedError) as exc:  # Arrow's errors
            raise VerifyError(f"{t.name}: the driver cannot read {self.path}: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                              hint="--engine spark reads it with Spark") from None
        return {c: (counts[c], xors[c]) for c in range(slots) if counts[c]}


def key_bounds(path: str, t: SourceTable, chunk_size: int,
               estimate: int | None) -> list[tuple[str, ...]] | None:
    """Range chunk boundaries every `chunk_size` rows, from the Delta table's own keys in
    the source's order (the key kinds of range chunks order alike on both sides): planning
    then reads nothing on the source, where a walk of the key reads every leaf page. None
    (walk the source) when the driver cannot read the table or it holds fewer than half the
    source's estimated rows (its chunks would be far larger on the source)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    if not t.ranged or not DeltaTable.is_deltatable(path):
        return None
    lake = open_lake(path, Plan(t, [], None))
    if isinstance(lake, str) or not all(k in lake.names for k in t.key) \
            or not lake.rows_at_most(BOUND_ROWS):
        return None
    keys = t.key_columns
    cols = [lake.names[c.name] for c in keys]
    try:
        table = pa.Table.from_batches(list(lake.batches(cols)),
                                      pa.schema([(c, lake.types[c]) for c in cols]))
        n = table.num_rows
        if not n or (estimate and estimate > 2 * chunk_size and n < estimate / 2):
            return None
        if n <= chunk_size:
            return []
        order = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in cols])
        picked = table.take(order.take(pa.array(range(chunk_size, n, chunk_size))))
        texts = [_bound_texts(c, picked.column(i)) for i, c in enumerate(keys)]
    except (OSError, ValueError, TypeError, NotImplementedError, VerifyError) as exc:
        # the walk plans it; the checksums say what is wrong, if anything
        log.debug("verify: %s planned by a walk: %s", t.name, exc)
        return None
    return list(zip(*texts))


def _bound_texts(col: Column, arr: Any) -> list[str]:
    """Key values as the text `canonical.boundary_sql` reads them on the source."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if col.kind == "timestamp":  # UTC wall time (the source session's time zone)
        out: list[str] = pc.cast(pc.cast(arr, pa.timestamp("us")), pa.string()).to_pylist()
    else:
        out = value_text(col, arr).to_pylist()
    if any(v is None for v in out):
        raise VerifyError(f"column {col.name}: a NULL key")
    return out


def delta_version(path: str) -> int | None:
    """The newest committed version of the Delta table at `path` (its highest
    `_delta_log/<version>.json`), or None when that cannot be told cheaply (not a local
    path, no log): callers then assume the table moved."""
    from pathlib import Path

    if "://" in path and not path.startswith("file:"):
        return None
    log = Path(path.removeprefix("file://").removeprefix("file:")) / "_delta_log"
    try:
        versions = [int(p.name[:-5]) for p in log.iterdir()
                    if p.name.endswith(".json") and p.name[:-5].isdigit()]
    except OSError:
        return None
    return max(versions) if versions else None


def lake_table_path(warehouse: str, plan: Plan) -> str:
    """Where the sync writes the plan's table under `warehouse`."""
    return table_path(warehouse, plan.table)


def table_path(warehouse: str, t: SourceTable) -> str:
    """Where the sync writes the source table `t` under `warehouse`."""
    return f"{warehouse.rstrip('/')}/{t.schema}/{t.table}"


def _local(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def _batch_rows(meta: Any) -> int:
    """Rows per record batch of a Parquet file: BATCH_ROWS, fewer where rows are long, so a
    batch holds about BATCH_BYTES (memory freed by one batch is reused by the next, where
    150 MB batches of long texts came from fresh pages: 0.3-0.6 system CPU s at 1M)."""
    rows = meta.num_rows
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if not rows or size <= 0:
        return BATCH_ROWS
    return int(max(64, min(BATCH_ROWS, BATCH_BYTES * rows // size)))


def _conform(batch: "pa.RecordBatch", schema: "pa.Schema") -> "pa.RecordBatch":
    """A file's batch in the table's schema: columns added after the file was written are
    NULL, older narrower types cast (what Spark's reader does)."""
    import pyarrow as pa

    if batch.schema.equals(schema):
        return batch
    cols = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        if i < 0:
            cols.append(pa.nulls(batch.num_rows, f.type))
        else:
            col = batch.column(i)
            cols.append(col if col.type.equals(f.type) else col.cast(f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


# -- the canonical text in Arrow (spark/verify.py's value_text, kind by kind) ---------------

def value_text(col: Column, arr: "pa.Array") -> "pa.Array":
    """The canonical text of one column's values (NULL stays NULL), as strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    k, typ = col.kind, arr.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or str(typ) == "string_view":
        if k in ("date", "datetime", "timestamp"):
            raise VerifyError(f"column {col.name} is kept as text in Delta (zero_dates="
                              "'string'): verify compares the 'null' policy only")
        if k in ("int", "decimal", "text"):  # one string type for the row text's joins
            return arr if pa.types.is_string(typ) else pc.cast(arr, pa.string())
    if k == "int" and pa.types.is_integer(typ):
        return pc.cast(arr, pa.string())
    if k in ("int", "decimal") and pa.types.is_decimal(typ):
        return _decimal_text(arr)
    if k == "float" and pa.types.is_floating(typ):
        return _float_text(arr)
    if k == "date" and pa.types.is_date32(typ):
        return pc.cast(arr, pa.string())
    if k == "datetime" and pa.types.is_timestamp(typ) and typ.tz is None:
        return pc.cast(pc.cast(arr, pa.timestamp("us")), pa.string())
    if k == "timestamp" and pa.types.is_timestamp(typ) and typ.tz is not None:
        return pc.cast(pc.cast(pc.cast(arr, pa.timestamp("us", typ.tz)), pa.int64()),
                       pa.string())
    if k == "binary" and pa.types.is_binary(typ):
        return _hex_text(arr)
    if k == "geometry" and pa.types.is_struct(typ):  # '<srid>:<hex of the WKB>'
        text = pc.binary_join_element_wise(pc.cast(pc.struct_field(arr, "srid"), pa.string()),
                                           _hex_text(pc.struct_field(arr, "wkb")), ":")
        return pc.if_else(pc.is_null(arr), pa.scalar(None, pa.string()), text)
    raise VerifyError(f"column {col.name}: no driver text for {k} held as {typ}")


def _hex_text(arr: "pa.Array") -> "pa.Array":
    """Upper-case hex of each binary value (NULL stays NULL): the data buffer hexed in one
    call and the offsets doubled, not a Python string per value."""
    import binascii

    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(arr)
    bufs = arr.buffers()
    offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, bufs[1]], offset=arr.offset)
    first, last = offsets[0].as_py(), offsets[n].as_py()
    if 2 * (last - first) >= 2**31:  # past int32 offsets: value by value
        return pa.array([None if v is None else v.hex().upper() for v in arr.to_pylist()],
                        pa.string())
    data = memoryview(bufs[2])[first:last] if bufs[2] is not None else b""
    hexed = binascii.hexlify(data).upper()
    doubled = pc.multiply(pc.subtract(offsets, first), 2).cast(pa.int32())
    valid = pc.is_valid(arr).buffers()[1] if arr.null_count else None
    return pa.Array.from_buffers(pa.string(), n, [valid, doubled.buffers()[1],
                                                  pa.py_buffer(hexed)], arr.null_count)


def _decimal_text(arr: "pa.Array") -> "pa.Array":
    """Plain digits with the column's scale: Arrow writes exponents below 1E-6, Spark and
    MariaDB never do."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.cast(arr, pa.string())
    if arr.type.scale <= 6 or not pc.any(pc.match_substring(text, "E")).as_py():
        return text
    return pa.array([None if v is None else format(v, "f") if "E" in s else s
                     for v, s in zip(arr.to_pylist(), text.to_pylist())], pa.string())


def _float_text(arr: "pa.Array") -> "pa.Array":
    """'<sign><exponent>p<53-bit mantissa>' or '0', from the double's bits (subnormals by
    frexp): what the SQL computes with LOG2 and POW."""
    import math

    import pyarrow as pa
    import pyarrow.compute as pc

    d = pc.cast(arr, pa.float64())
    if isinstance(d, pa.ChunkedArray):
        d = d.combine_chunks()
    bits = d.view(pa.int64())
    biased = pc.bit_wise_and(pc.shift_right(bits, 52), 0x7FF)
    frac = pc.bit_wise_and(bits, (1 << 52) - 1)
    exp = pc.cast(pc.subtract(biased, 1023), pa.string())
    mant = pc.cast(pc.bit_wise_or(frac, 1 << 52), pa.string())
    sign = pc.if_else(pc.less(bits, 0), "-", "+")
    text = pc.binary_join_element_wise(sign, exp, "p", mant, "")
    zero = pc.equal(pc.bit_wise_and(bits, (1 << 63) - 1), 0)
    text = pc.if_else(zero, "0", text)
    odd = pc.and_(pc.equal(biased, 0), pc.invert(zero))
    if pc.any(odd).as_py():  # subnormals (and NaN/inf, which MariaDB cannot hold)
        out = text.to_pylist()
        for i, v in enumerate(d.to_pylist()):
            if v is not None and v != 0 and math.isfinite(v) and abs(v) < 2.2250738585072014e-308:
                m, e = math.frexp(abs(v))
                out[i] = f"{'-' if v < 0 else '+'}{e - 1}p{int(m * 2 ** 53)}"
        text = pa.array(out, pa.string())
    return text


LONG = 256
"""Mean bytes per value above which a column's text is hashed where it lies, not copied into
the row's text (a copy costs about as much as the hash)."""


def row_text(cols: tuple[Column, ...], texts: list["pa.Array"]) -> list["pa.Array"]:
    """A row's text, which is hashed (`canonical.row_sql`): text values framed by their byte
    length, NULL as 'N', joined by ','. Given as pieces whose concatenation is the text:
    the short values joined into one array per stretch, each long text value as it is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pieces: list[Any] = []
    run: list[Any] = []

    def close() -> None:  # a run always ends with an array (each column adds one)
        if run:
            pieces.append(run[0] if len(run) == 1 else pc.binary_join_element_wise(*run, ""))
            run.clear()

    n = len(texts[0]) if texts else 0
    for c, v in zip(cols, texts):
        if run or pieces:
            run.append(",")
        if c.kind == "text":  # '<bytes>:' (or 'N') then the text (or '')
            length = pc.cast(pc.binary_length(v), pa.string())
            run.append(pc.fill_null(pc.binary_join_element_wise(length, ":", ""), "N"))
            v = pc.fill_null(v, "") if v.null_count else v
            if n and v.nbytes > LONG * n:
                close()
                pieces.append(v)
                continue
            run.append(v)
        else:
            run.append(pc.fill_null(v, "N") if v.null_count else v)
    close()
    return pieces


def key_texts(cols: list[Column], texts: list["pa.Array"]) -> list[str]:
    """The key's canonical text per row (each value framed, `canonical.text_sql`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = []
    for v in texts:
        framed = pc.binary_join_element_wise(
            "V", pc.cast(pc.binary_length(v), pa.string()), ":", v, "")
        parts.append(pc.fill_null(framed, "N"))
    joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "")
    out: list[str] = joined.to_pylist()
    return out


def fold_rows(cols: tuple[Column, ...], texts: list["pa.Array"], chunks: list[int],
              counts: "array[int]", xors: "array[int]") -> None:
    """Each row's canonical text (`row_text` of the columns' value texts) hashed with SHA-1
    and folded into its chunk: one more row in counts[chunk], the hash's first 64 bits
    (big-endian) XORed into xors[chunk]. The Python twin of the C core's `row_sums`
    (`fold_columns`)."""
    import pyarrow as pa

    sha1 = hashlib.sha1
    views = []
    for p in row_text(cols, texts):
        if isinstance(p, pa.ChunkedArray):
            p = p.combine_chunks()
        if p.null_count:
            raise AssertionError("a row text piece is never NULL")
        bufs = p.buffers()
        views.append((memoryview(bufs[1]).cast("q" if _wide(p.type) else "i"),
                      memoryview(bufs[2] if bufs[2] is not None else b""), p.offset))
    for i, c in enumerate(chunks):
        h = sha1()
        for offsets, data, start in views:
            h.update(data[offsets[start + i]:offsets[start + i + 1]])
        counts[c] += 1
        xors[c] ^= int.from_bytes(h.digest()[:8], "big")


def fold_columns(cols: tuple[Column, ...], texts: list["pa.Array"], chunks: list[int],
                 counts: "array[int]", xors: "array[int]") -> None:
    """`fold_rows` by the C core: each row's text is assembled and hashed in C from the
    value texts' Arrow buffers (no joined copy)."""
    import pyarrow as pa

    columns = []
    for c, v in zip(cols, texts):
        if isinstance(v, pa.ChunkedArray):
            v = v.combine_chunks()
        if not (pa.types.is_string(v.type) or pa.types.is_binary(v.type) or _wide(v.type)):
            raise TypeError(f"column {c.name}: a value text must be a string array, "
                            f"not {v.type}")  # (row_sums reads offsets and data buffers)
        bufs = v.buffers()
        columns.append((bufs[0] if v.null_count else None, bufs[1],
                        bufs[2] if bufs[2] is not None else b"", v.offset, _wide(v.type),
                        c.kind == "text"))
    _row_sums(columns, chunks, counts, xors)


def _wide(typ: "pa.DataType") -> bool:
    import pyarrow as pa

    return bool(pa.types.is_large_string(typ) or pa.types.is_large_binary(typ))


def _row_sums(*args: Any) -> None:
    """The C core's row_sums (`fold_columns` runs only where it is in use)."""
    fast = function("row_sums")
    if fast is None:
        raise RuntimeError("the C core is not in use")
    fast(*args)


def _chunker(plan: Plan, keys: list[Column]) -> Any:
    """A function (batch, key column indexes, value texts) -> each row's chunk index, as
    `spark.verify.chunk_expr` assigns it: the key compared with the chunks' lower bounds
    (SQL's row order), or the hash bucket of the key's text."""
    if plan.buckets:
        buckets = plan.buckets

        def bucket(batch: Any, at: list[int], texts: list[Any]) -> list[int]:
            return [int.from_bytes(hashlib.sha1(k.encode("utf-8", "surrogateescape"))
                                   .digest()[8:12], "big") % buckets
                    for k in key_texts(keys, [texts[i] for i in at])]
        return bucket
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = plan.chunks
    starts = []
    for c in chunks[1:]:
        if c.lo is None:
            raise VerifyError(f"{plan.table.name}: chunk {c.index} has no lower bound")
        starts.append(tuple(_bound(col, v) for col, v in zip(keys, c.lo)))
    index = [c.index for c in chunks]

    one_int = len(keys) == 1 and keys[0].kind == "int"

    def ranged(batch: Any, at: list[int], texts: list[Any]) -> list[int]:
        if one_int and pa.types.is_integer(batch.column(at[0]).type) and \
                not batch.column(at[0]).null_count:  # a batch within one chunk: no bisects
            span = pc.min_max(batch.column(at[0])).as_py()
            lo = bisect_right(starts, (span["min"],))
            if lo == bisect_right(starts, (span["max"],)):
                return [index[lo]] * batch.num_rows
        cols = [_key_values(col, batch.column(i), texts[i]) for col, i in zip(keys, at)]
        if len(cols) == 1:
            found = [bisect_right(starts, (k,)) for k in cols[0]]
        else:
            found = [bisect_right(starts, k) for k in zip(*cols)]
        return [index[i] for i in found]
    return ranged


def _bound(col: Column, text: str) -> Any:
    """A boundary's text as the value `_key_values` gives (datetimes compare as text)."""
    if col.kind in ("date", "datetime", "timestamp"):
        return text
    return boundary_param(col, text)


def _key_values(col: Column, arr: "pa.Array", text: "pa.Array") -> list[Any]:
    """A key column's values as Python values that order as the source orders them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values: list[Any]
    if col.kind == "int":
        values = arr.to_pylist()
        return [int(v) for v in values] if pa.types.is_decimal(arr.type) or \
            pa.types.is_string(arr.type) else values
    if col.kind == "decimal":
        return [Decimal(v) if isinstance(v, str) else v for v in arr.to_pylist()]
    if col.kind == "binary":
        values = arr.to_pylist()
        return values
    if col.kind in ("date", "datetime"):
        values = text.to_pylist()
        return values
    if col.kind == "timestamp":  # the UTC wall time, as the source's boundary text
        values = pc.cast(pc.cast(arr, pa.timestamp("us")), pa.string()).to_pylist()
        return values
    raise VerifyError(f"column {col.name}: no range chunks over a {col.data_type} key")
