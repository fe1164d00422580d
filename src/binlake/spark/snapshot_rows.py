"""The sync's first snapshot written straight into new Delta tables.

Each chunk's rows are typed in Python as Arrow batches in the table's Spark schema (no JSON
text, no `from_json`), and each table is one Spark job (`RowsDataSource`, one chunk per
task) and one Delta commit, the tables written at once. What the CDC source and the apply
step do for a snapshot in several jobs (materialise, count, collect the markers, type the
JSON images, write) happens here in one pass.

Rows the backfill replayed from the binlog are JSON images (the binlog path's text); they,
and any row with a value the Python typing declines (a temporal Python cannot hold, such as
year 0), travel as JSON in `AFTER_COL` and are typed by the apply step's own `typed_value`,
so both ways give the same values.

Where the stream starts does not need the chunks' watermarks: the sync takes the binlog end
before planning, which is before every chunk's LOW, and streams from there (the seq guard
skips what a chunk already holds).
"""
from __future__ import annotations

import base64
import collections
import itertools
import os
import signal
import datetime as dt
import json
import pickle
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..cdc.jsontext import json_text
from ..schema.spec import (
    BINARY_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, SERVER_TEXT_TYPES, TEXT_TYPES, ColumnSpec,
)
from .._speedups.native import function
from ..protocol.results import split_text_rows
from ..snapshot.chunks import ChunkResult, PackedRows, read_chunk
from ..snapshot.plan import Chunk
from ..snapshot.server import SnapshotError, raw_is_bytes
from ..snapshot.values import RowFormatter, server_text
from ..binlog.values import Geometry
from ..cdc.arrow import SEQ_TYPE, file_index
from .tables import (
    KNOWN, SEQ_COL, TS_COL, plan_table, quote_name, table_path, target_schema,
)
from .typing import arrow_schema, image_schema, spark_schema, typed_value

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from .apply import ApplyConfig

log = logging.getLogger("binlake.snapshot")

AFTER_COL = "_binlake_after"
SEQ = "_binlake_chunk_seq"
TS = "_binlake_chunk_ts"
_KILL_IN_SNAPSHOT = int(os.environ.get("BINLAKE_FAULT_KILL_IN_SNAPSHOT", "0") or 0)
"""Tests only: SIGKILL the job once the driver has written this many snapshot chunks (rows
handed to delta-rs, their table not yet committed)."""
_CHUNKS_WRITTEN = itertools.count(1)

READ_AHEAD = 2
"""Chunks of a table the driver reads (each on its own connection) while it types and
writes the one before them."""

BATCH_ROWS = 10_000
BATCH_BYTES = 64 << 20
"""A packed chunk's Arrow batch also ends once its rows hold this many bytes."""
_UTC = dt.timezone.utc


class Decline(Exception):
    """A value the Python typing does not decide: the row goes as JSON (see the notes)."""


# -- raw SELECT values -> Python values of the column's Spark type ----------------------------

def _zero_part(s: str) -> bool:
    return s[5:7] == "00" or s[8:10] == "00"


def _temporal(kind: str, zero_dates: str) -> Callable[[Any], Any]:
    if zero_dates == "string":
        # The text the JSON path keeps (values.fragment_fn): DATE as read; DATETIME and
        # TIMESTAMP in ISO form when they are dates, else as read.
        if kind == "date":
            return lambda s: s
        zone = "Z" if kind == "timestamp" else ""

        def text(s: str) -> str:
            try:
                dt.date(int(s[0:4]), int(s[5:7]), int(s[8:10]))
            except ValueError:
                return s
            return s.replace(" ", "T", 1) + zone
        return text
    parse: Callable[[str], Any]
    if kind == "date":
        parse = dt.date.fromisoformat
    elif kind == "datetime":
        parse = dt.datetime.fromisoformat
    else:
        def parse(s: str) -> Any:
            return dt.datetime.fromisoformat(s).replace(tzinfo=_UTC)

    def value(s: str) -> Any:
        try:
            return parse(s)
        except ValueError:
            if zero_dates == "null" and _zero_part(s):
                return None
            raise Decline(s) from None  # "error", or not a zero date: the JSON path decides
    return value


def raw_converter(col: ColumnSpec, zero_dates: str, mariadb: bool) -> Callable[[Any], Any]:
    """Raw SELECT value (not NULL, as `snapshot.values` selects it) -> the Python value of
    the column's Spark type (`spark_type`), the same value `typed_value` makes of the JSON
    text the binlog path writes for it; raises `Decline` when it cannot say."""
    t = col.type
    if t in INTEGER_TYPES or t == "year":
        if t == "bigint" and col.unsigned:
            return lambda s: Decimal(s)
        return int
    if t == "bit":
        if (col.precision or 64) < 64:
            return lambda b: int.from_bytes(b, "big")
        return lambda b: Decimal(int.from_bytes(b, "big"))
    if t in ("float", "double"):
        return float  # FLOAT is selected as DOUBLE: exact, and Arrow rounds it back exactly
    if t == "decimal":
        if (col.precision or 10) <= 38:
            return Decimal
        return lambda s: format(Decimal(s), "f")
    if t in ("date", "datetime", "timestamp"):
        return _temporal(t, zero_dates)
    if t == "time":
        return str
    if t == "json":
        if mariadb:
            return str
        return lambda s: json_text(json.loads(s))
    if t in BINARY_TYPES:
        return bytes
    if t in SERVER_TEXT_TYPES:
        return server_text
    if t in GEOMETRY_TYPES:
        def geometry(b: bytes) -> dict[str, Any]:
            g = Geometry.from_storage(b)
            return {"srid": g.srid, "wkb": g.wkb}
        return geometry
    if t in TEXT_TYPES:
        return str
    raise SnapshotError(f"column {col.name}: type {t} is not supported by the snapshot")


def vector_cast(col: ColumnSpec, zero_dates: str, mariadb: bool, target: pa.DataType
                ) -> Callable[[pa.Array], pa.Array] | None:
    """A column's raw SELECT text (an Arrow binary array) -> its typed Arrow array by
    pyarrow casts, giving exactly `raw_converter`'s values; None where only Python decides
    (BIT, geometry, MySQL's JSON, DECIMAL over 38 digits, temporals kept as text). A value
    the cast cannot take raises `pa.ArrowInvalid` (the caller types that batch in Python)."""
    t = col.type
    if t in INTEGER_TYPES or t == "year" or t == "double":
        return lambda a: a.cast(pa.string()).cast(target)
    if t == "float":  # selected as DOUBLE: parsed as one, then rounded as Arrow rounds it
        return lambda a: a.cast(pa.string()).cast(pa.float64()).cast(target)
    if t == "decimal":
        if not pa.types.is_decimal(target):
            return None
        return lambda a: a.cast(pa.string()).cast(target)
    if t in ("date", "datetime", "timestamp"):
        if zero_dates == "string":
            return None
        naive = pa.date32() if t == "date" else pa.timestamp("us")
        least = pa.scalar(dt.date(1, 1, 1) if t == "date" else dt.datetime(1, 1, 1), naive)

        def temporal(a: pa.Array) -> pa.Array:
            out = a.cast(pa.string()).cast(naive)
            low = pc.min(out)
            if low.is_valid and pc.less(low, least).as_py():
                raise pa.ArrowInvalid("a year 0 value: Python cannot hold it")
            return out.cast(target)
        return temporal
    if t == "json" and not mariadb:
        return None
    if t in BINARY_TYPES:
        return lambda a: a
    if t in SERVER_TEXT_TYPES or t in TEXT_TYPES or t in ("time", "json"):
        return lambda a: a.cast(pa.string())
    return None


class ChunkTyper:
    """A chunk's rows -> Arrow batches: the table's columns typed, `AFTER_COL`, seq, ts."""

    def __init__(self, chunk: Chunk, zero_dates: str, schema: pa.Schema) -> None:
        t = chunk.table
        self.schema = schema
        self.fmt = RowFormatter(t)
        self.fns = [raw_converter(c, zero_dates, t.mariadb) for c in t.spec.columns]
        self.width = len(self.fns)
        self.casts = [vector_cast(c, zero_dates, t.mariadb, f.type)
                      for c, f in zip(t.spec.columns, schema)]

    def batches(self, res: ChunkResult, size: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        if res.packed is not None:
            yield from self._packed(res, res.packed, size)
            return
        rows = res.full_rows or list(res.rows.values())
        for start in range(0, len(rows), size):
            yield self._rows_batch(res, rows[start:start + size], start)

    def _tail(self, res: ChunkResult, n: int, start: int,
              after: pa.Array) -> list[pa.Array]:
        """`AFTER_COL`, seq and ts of `n` rows from row `start`."""
        hfile, hpos = res.high
        fidx, inner, ts = file_index(hfile), res.chunk.index, res.ts * 1_000_000
        i32, i64 = pa.int32(), pa.int64()
        seq = pa.StructArray.from_arrays(
            [pa.array([fidx] * n, i32), pa.array([hpos] * n, i64),
             pa.array([inner] * n, i32), pa.array(range(start, start + n), i32)],
            fields=list(SEQ_TYPE))
        return [after, seq, pa.array([ts] * n, self.schema.field(TS).type)]

    def _rows_batch(self, res: ChunkResult, part: Sequence[Any], start: int) -> pa.RecordBatch:
        n = len(part)
        cols: list[list[Any]] = [[] for _ in range(self.width)]
        after: list[str | None] = []
        for r in part:
            vals = self._typed(r)
            if vals is None:
                vals = [None] * self.width
                after.append(r if isinstance(r, str) else self.fmt.image(r)[1])
            else:
                after.append(None)
            for c, v in zip(cols, vals):
                c.append(v)
        arrays = [pa.array(c, f.type) for c, f in zip(cols, self.schema)]
        arrays += self._tail(res, n, start, pa.array(after, pa.string()))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _packed(self, res: ChunkResult, packed: PackedRows,
                size: int) -> Iterator[pa.RecordBatch]:
        """Rows split into columns by the C core (or its twin) and typed by Arrow casts; a
        batch with a value a cast cannot take, or a column only Python types, is typed
        (that batch, or that column) in Python as above, so the values are the same."""
        split = text_columns()
        binary = [raw_is_bytes(c) for c in packed.columns]
        data, pos, start = packed.data, 0, 0
        while pos < len(data):
            pos, n, bufs = split(data, pos, self.width, size, BATCH_BYTES)
            raw = [pa.Array.from_buffers(pa.binary(), n,
                                         [None if v is None else pa.py_buffer(v),
                                          pa.py_buffer(o), pa.py_buffer(d)], null_count=nn)
                   for v, o, d, nn in bufs]
            batch = self._typed_columns(raw, binary)
            if batch is None:
                part = list(zip(*[self._values(res, a, b, c.name, start)
                                  for a, b, c in zip(raw, binary, packed.columns)]))
                yield self._rows_batch(res, part, start)
            else:
                arrays = batch + self._tail(res, n, start, pa.nulls(n, pa.string()))
                yield pa.RecordBatch.from_arrays(arrays, schema=self.schema)
            start += n

    @staticmethod
    def _values(res: ChunkResult, a: pa.Array, binary: bool, name: str,
                start: int) -> list[Any]:
        """A raw column as Python values: bytes for binary columns, else text (the server
        sends utf8mb4); a text value that is not UTF-8 stops the snapshot in one line."""
        if binary:
            return a.to_pylist()
        out: list[Any] = []
        for i, v in enumerate(a.to_pylist()):
            try:
                out.append(None if v is None else v.decode("utf-8"))
            except UnicodeDecodeError as exc:
                t = res.chunk.table
                raise SnapshotError(
                    f"{t.schema}.{t.table} chunk {res.chunk.index}, row {start + i}: column "
                    f"{name} holds bytes that are not UTF-8 (at byte {exc.start})",
                    hint="check the column's character set; the snapshot reads utf8mb4"
                ) from None
        return out

    def _typed_columns(self, raw: Sequence[pa.Array],
                       binary: Sequence[bool]) -> list[pa.Array] | None:
        out = []
        for a, cast, fn, f, b in zip(raw, self.casts, self.fns, self.schema, binary):
            try:
                if cast is not None:
                    out.append(cast(a))
                    continue
                vals = [None if v is None else fn(v if b else v.decode("utf-8"))
                        for v in a.to_pylist()]
                out.append(pa.array(vals, f.type))
            except (pa.ArrowInvalid, Decline, UnicodeDecodeError):
                return None
        return out

    def _typed(self, r: Any) -> list[Any] | None:
        if isinstance(r, str):
            return None  # a backfilled JSON image
        try:
            return [None if v is None else f(v) for f, v in zip(self.fns, r)]
        except Decline:
            return None


def text_columns() -> Callable[..., tuple[int, int, list[Any]]]:
    """`split_text_rows`, from the C core when it is in use (see `_speedups.native`)."""
    fast = function("text_columns")
    return fast if fast is not None else split_text_rows


# -- one Spark job per table ------------------------------------------------------------------

NAME = "binlake-snapshot-rows"


def chunk_schema(chunk: Chunk, zero_dates: str) -> "StructType":
    """The Spark schema of `table_frame`'s rows: every column typed, then the extra three."""
    from pyspark.sql.types import (
        IntegerType, LongType, StringType, StructField, StructType, TimestampType,
    )

    seq = StructType([StructField("file_index", IntegerType()), StructField("pos", LongType()),
                      StructField("inner", IntegerType()), StructField("row", IntegerType())])
    return StructType([*spark_schema(chunk.table.spec, zero_dates).fields,
                       StructField(AFTER_COL, StringType()), StructField(SEQ, seq),
                       StructField(TS, TimestampType())])


class RowsDataSource(DataSource):
    """One table's planned chunks (option "plan"), typed rows in a user-given schema."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def reader(self, schema: "StructType") -> DataSourceReader:
        return RowsReader(self.options, schema)


class _ChunkPartition(InputPartition):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


class RowsReader(DataSourceReader):
    """A task per chunk: read it (LOW, SELECT, HIGH, backfill) and type its rows."""

    def __init__(self, options: Any, schema: "StructType") -> None:
        self.url = str(options["url"])
        self.chunks: list[Chunk] = pickle.loads(base64.b64decode(options["plan"]))
        self.zero_dates = str(options.get("zeroDates", "null"))
        self.server_id_base = int(options["serverIdBase"])
        self.arrow = arrow_schema(schema)

    def partitions(self) -> list[InputPartition]:
        return [_ChunkPartition(i) for i in range(len(self.chunks))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, _ChunkPartition)
        c = self.chunks[partition.index]
        res = read_chunk(self.url, c, server_id=self.server_id_base + c.ordinal, raw=True,
                         packed=True)
        yield from ChunkTyper(c, self.zero_dates, self.arrow).batches(res)


def table_frame(spark: "SparkSession", url: str, chunks: Sequence[Chunk], zero_dates: str,
                server_id_base: int) -> "DataFrame":
    """One table's chunks read and typed, one chunk per task."""
    spark.dataSource.register(RowsDataSource)
    plan = base64.b64encode(pickle.dumps(list(chunks))).decode("ascii")
    return (spark.read.format(NAME).schema(chunk_schema(chunks[0], zero_dates))
            .option("url", url).option("plan", plan).option("zeroDates", zero_dates)
            .option("serverIdBase", str(server_id_base)).load())


def typed_table(frame: "DataFrame", chunk: Chunk, cols: Sequence[str],
                zero_dates: str) -> list[Any]:
    """The target's data columns from `table_frame`: typed rows as they are, JSON rows typed
    by `typed_value` (the apply step's conversion)."""
    from pyspark.sql import functions as F

    spec = chunk.table.spec
    parsed = F.from_json(F.col(AFTER_COL), image_schema(spec, cols))
    out = []
    for c in cols:
        col = spec.column(c)
        out.append(F.when(F.col(AFTER_COL).isNull(), F.col(quote_name(c)))
                   .otherwise(typed_value(parsed.getField(c), col, zero_dates)).alias(c))
    return out


DRIVER_ROWS = 50_000
"""A table planned as one chunk of at most this many rows is read in the driver and handed
to Spark as Arrow (`createDataFrame`): no Python data source to plan, no Python worker to
start, which for a small table cost more than its rows. Larger tables keep one chunk per
executor task."""


def reads_in_driver(chunks: Sequence[Chunk]) -> bool:
    """Whether a table's planned chunks are read in the driver (see `DRIVER_ROWS`)."""
    rows = chunks[0].table_rows
    return len(chunks) == 1 and rows is not None and rows <= DRIVER_ROWS


def driver_frame(spark: "SparkSession", chunk: Chunk, res: ChunkResult,
                 zero_dates: str) -> "DataFrame":
    """A chunk read in the driver (`read_chunk(raw=True)`) as a DataFrame in `table_frame`'s
    schema: the same typed Arrow batches, handed to Spark without a Python worker."""
    schema = chunk_schema(chunk, zero_dates)
    arrow = arrow_schema(schema)
    batches = list(ChunkTyper(chunk, zero_dates, arrow).batches(res))
    if not batches:  # an empty table: Spark cannot take columns without a chunk
        batches = [pa.RecordBatch.from_pylist([], schema=arrow)]
    table = pa.Table.from_batches(batches, schema=arrow)
    # One task and one file, as a one-chunk table read by an executor (Spark would slice the
    # rows into a file per core, and two small files already set off auto compaction).
    return spark.createDataFrame(table, schema=schema).coalesce(1)


class TableProgress:
    """How far one table's write is, without an extra job: a table read in the driver counts
    its rows once read; otherwise Spark's own task counts (the chunks finished), turned into
    rows with the planning's COUNT(*)."""

    def __init__(self, name: str, chunks: int, total: int | None) -> None:
        self.name, self.chunks, self.total = name, chunks, total
        self.spark: "SparkSession | None" = None
        """The session, once the table's job runs in it."""
        self.group = f"binlake-snapshot-{uuid.uuid4().hex[:8]}"
        self.read: int | None = None
        """Rows read in the driver, before the write."""
        self.rows: int | None = None
        """Rows written, once the table is committed."""

    def chunks_done(self) -> int:
        if self.spark is None:
            return 0
        tracker = self.spark.sparkContext.statusTracker()
        done = 0
        for job in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(job)
            for sid in (info.stageIds if info else ()):
                stage = tracker.getStageInfo(sid)
                if stage is not None and stage.numTasks == self.chunks:
                    done = max(done, stage.numCompletedTasks)
        return done

    def rows_done(self) -> int:
        if self.rows is not None:
            return self.rows
        if self.read is not None:
            return self.read
        if not self.total:
            return 0
        return min(self.total, self.total * self.chunks_done() // max(1, self.chunks))


def write_tables(spark: Any, url: str, chunks: Sequence[Chunk], config: "ApplyConfig",
                 app_id: str, *, server_id_base: int,
                 on_table: Callable[[TableProgress], None] | None = None,
                 driver_writes: bool = False) -> dict[str, int]:
    """Write every planned table as a new SCD1 Delta table, in one commit each (txn app_id,
    version 0), the tables at once. Returns rows written per 'schema.table'.

    `spark` is the session or a callable that returns it (a session still starting: tables
    read in the driver are read before it is asked for). `on_table` gets each table's
    `TableProgress` before the writes start. `driver_writes`: the driver reads every chunk
    and writes the table itself (`driver_write`), for a local session whose warehouse the
    driver can write; else Spark's tasks read the chunks and write."""
    from pyspark.sql import functions as F

    from .apply import create_tombstones, together

    session: Callable[[], "SparkSession"] = spark if callable(spark) else (lambda: spark)
    by_table: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_table.setdefault(c.table.name, []).append(c)
    progress = {name: TableProgress(name, len(cs), cs[0].table_rows)
                for name, cs in by_table.items()}

    def one(name: str) -> None:
        t0 = time.monotonic()
        cs = by_table[name]
        t = cs[0].table
        opts = config.options_for(t.schema, t.table)
        plan = plan_table(t.spec, opts)
        if driver_writes:
            path = table_path(config.target, t.schema, t.table)
            seq_type = chunk_schema(cs[0], config.zero_dates)[SEQ].dataType
            together(lambda: driver_write(session, url, cs, config, plan, opts, path, app_id,
                                          server_id_base, progress[name]),
                     lambda: create_tombstones(None, config, t.spec, seq_type))
            progress[name].rows = progress[name].read
            KNOWN[path] = {f.lower() for f in plan.cols} | {SEQ_COL.lower(), TS_COL.lower()}
            log.debug("snapshot table written", extra={
                "table": name, "chunks": len(cs), "rows": progress[name].rows,
                "driver": True, "write_s": round(time.monotonic() - t0, 2)})
            return
        driver = reads_in_driver(cs)
        res = None
        if driver:
            c = cs[0]
            res = read_chunk(url, c, server_id=server_id_base + c.ordinal, raw=True, packed=True)
            progress[name].read = (res.packed.count if res.packed is not None
                                   else len(res.full_rows or res.rows))
        t_read = time.monotonic()
        ss = progress[name].spark = session()
        if res is not None:
            frame = driver_frame(ss, cs[0], res, config.zero_dates)
        else:
            frame = table_frame(ss, url, cs, config.zero_dates, server_id_base)
        target = target_schema(t.spec, plan, opts, frame.schema[SEQ].dataType, config.zero_dates)
        cols = typed_table(frame, cs[0], plan.cols, config.zero_dates)
        cols += [F.col(SEQ), F.col(TS)]
        out = frame.select(*[c.cast(f.dataType).alias(f.name) for c, f in zip(cols, target)])
        path = table_path(config.target, t.schema, t.table)
        t1 = time.monotonic()
        ss.sparkContext.setJobGroup(progress[name].group, f"binlake snapshot of {name}")
        try:  # the table's tombstone table is created beside it (`create_tombstones`)
            together(lambda: out.write.format("delta").mode("append")
                     .options(**config.table_properties())
                     .option("txnAppId", app_id).option("txnVersion", 0).save(path),
                     lambda: create_tombstones(ss, config, t.spec, frame.schema[SEQ].dataType))
        finally:
            ss.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        t2 = time.monotonic()
        KNOWN[path] = {f.name.lower() for f in target.fields}
        # Read in the driver, the rows written are the rows read (one commit, all or none).
        progress[name].rows = progress[name].read if driver else _rows_written(ss, path)
        log.debug("snapshot table written", extra={
            "table": name, "chunks": len(cs), "rows": progress[name].rows, "driver": driver,
            "read_s": round(t_read - t0, 2), "plan_s": round(t1 - t_read, 2),
            "write_s": round(t2 - t1, 2), "history_s": round(time.monotonic() - t2, 2)})

    if on_table is not None:
        for name in sorted(progress):
            on_table(progress[name])
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(name: str) -> None:
        try:
            one(name)
        except BaseException as exc:  # noqa: BLE001 - raised below, after the other tables
            with lock:
                errors.append(exc)

    with ThreadPoolExecutor(max_workers=max(1, min(config.parallelism, len(by_table)))) as pool:
        list(pool.map(run, sorted(by_table)))
    if errors:
        raise errors[0]
    return {name: p.rows or 0 for name, p in progress.items()}


def driver_write(session: Callable[[], "SparkSession"], url: str, chunks: Sequence[Chunk],
                 config: "ApplyConfig", plan: Any, opts: Any, path: str, app_id: str,
                 server_id_base: int, progress: TableProgress) -> None:
    """One table's chunks read and typed in the driver, the next two chunks read while one is
    written, and written as a new Delta table in one commit by delta-rs (`binlake.lake`).

    Rows the Python typing declined (`AFTER_COL`: backfilled JSON images, year-0 temporals)
    are typed by Spark's `typed_value`, as on the Spark way, and go into the same commit;
    Spark is asked for only when a table has such rows."""
    from pyspark.sql import functions as F

    from ..lake import write_new_table

    first, zero_dates = chunks[0], config.zero_dates
    source = chunk_schema(first, zero_dates)
    source_arrow = arrow_schema(source)
    target = target_schema(first.table.spec, plan, opts, source[SEQ].dataType, zero_dates)
    target_arrow = arrow_schema(target)
    picked = [*plan.cols, SEQ, TS]
    progress.read = 0
    declined: list[pa.RecordBatch] = []

    def typed(batch: pa.RecordBatch) -> pa.RecordBatch:
        cols = [batch.column(c) for c in picked]
        return pa.RecordBatch.from_arrays(cols, names=target_arrow.names).cast(target_arrow)

    def read(c: Chunk) -> ChunkResult:
        return read_chunk(url, c, server_id=server_id_base + c.ordinal, raw=True, packed=True)

    def by_spark() -> Iterator[pa.RecordBatch]:
        """The declined rows so far, typed by Spark (`typed_table`, as the Spark way)."""
        frame = session().createDataFrame(
            pa.Table.from_batches(declined, schema=source_arrow), schema=source)
        declined.clear()
        cols = typed_table(frame, first, plan.cols, zero_dates) + [F.col(SEQ), F.col(TS)]
        out = frame.select(*[c.cast(f.dataType).alias(f.name) for c, f in zip(cols, target)])
        for batch in out.toArrow().to_batches():
            progress.read = (progress.read or 0) + batch.num_rows
            yield batch.cast(target_arrow)

    def batches() -> Iterator[pa.RecordBatch]:
        with ThreadPoolExecutor(max_workers=READ_AHEAD,
                                thread_name_prefix="binlake-chunk") as ahead:
            pending = collections.deque(ahead.submit(read, c) for c in chunks[:READ_AHEAD])
            for i, c in enumerate(chunks):
                res = pending.popleft().result()
                if i + READ_AHEAD < len(chunks):
                    pending.append(ahead.submit(read, chunks[i + READ_AHEAD]))
                for batch in ChunkTyper(c, zero_dates, source_arrow).batches(res):
                    json_rows = batch.column(AFTER_COL).null_count != batch.num_rows
                    if json_rows:
                        keep = pc.is_null(batch.column(AFTER_COL))
                        declined.append(batch.filter(pc.invert(keep)))
                        batch = batch.filter(keep)
                    progress.read = (progress.read or 0) + batch.num_rows
                    if batch.num_rows:
                        yield typed(batch)
                    if sum(b.nbytes for b in declined) >= BATCH_BYTES:
                        yield from by_spark()  # a bounded hold, whatever the table's size
                if _KILL_IN_SNAPSHOT and next(_CHUNKS_WRITTEN) >= _KILL_IN_SNAPSHOT:
                    log.warning("fault injection: SIGKILL in the snapshot",
                                extra={"table": c.table.name, "chunk": c.index})
                    logging.shutdown()
                    os.kill(os.getpid(), signal.SIGKILL)
        if declined:
            yield from by_spark()

    write_new_table(path, target_arrow, batches(), properties=config.table_properties(),
                    app_id=app_id, version=0)


def _rows_written(spark: "SparkSession", path: str) -> int:
    """Rows of the table the write created (Delta answers from its file statistics)."""
    return int(spark.read.format("delta").load(path).count())
