"""`spark.read.format("binlake-snapshot")`: the initial snapshot as a Spark data source.

The chunk planning, the reads with their watermarks and the value formatting are Spark-free
(`binlake.snapshot`, whose notes give the exactness argument); this module plans on the
driver, reads one chunk per task and hands its rows to Spark as Arrow batches in the CDC
schema (op "insert" rows at the chunk's HIGH, one op "chunk" marker row per chunk).

Options:
  url            mysql://user:password@host:port (required; the user needs SELECT and
                 REPLICATION SLAVE; on MySQL also RELOAD for the brief lock).
  tables         `db.t1,db.t2` or fnmatch patterns `db.*` (required).
  chunks         chunks per keyed table (exact when the table has at least that many rows).
  chunkSize      rows per chunk when `chunks` is not given (default 250000).
  keys           JSON {"db.t": ["col", ...]}: the chunk key (the primary key, or the columns
                 of a UNIQUE index whose columns are all NOT NULL).
  noKeyPolicy    "full" (default) or "error" for tables without a key.
  serverIdBase   replication server_id of the first chunk's backfill (default 6450000); chunk
                 g uses serverIdBase + g (concurrent replicas need distinct ids).
  batchSize      rows per Arrow batch (default 10000).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..cdc.jsontext import dumps, json_string
from ..snapshot.chunks import ChunkResult, read_chunk
from ..snapshot.plan import DEFAULT_CHUNK_SIZE, Chunk, plan_snapshot
from ..snapshot.server import SnapshotError
from ..snapshot.tables import NO_KEY_POLICIES, SnapshotTable
from ..snapshot.values import bound_json
from ..snapshot.watermarks import CHUNK_OP, ROW_OP, SnapshotWatermarks, watermarks_from_rows
from ..cdc.arrow import CDC_DDL, CDC_SCHEMA, SEQ_TYPE, file_index

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

NAME = "binlake-snapshot"
DEFAULT_SERVER_ID_BASE = 6450000


# -- CDC rows -----------------------------------------------------------------------------------

def chunk_batches(res: ChunkResult, batch_size: int = 10000) -> Iterator[pa.RecordBatch]:
    """The chunk as CDC batches: its marker row first, then its rows as inserts at HIGH."""
    t, c = res.chunk.table, res.chunk
    hfile, hpos = res.high
    fidx = file_index(hfile)
    marker = {
        "chunk": c.index, "chunks": c.count, "mode": c.mode, "key": list(t.key),
        "kinds": list(t.kinds),
        "low": {"file": res.low[0], "pos": res.low[1]},
        "high": {"file": hfile, "pos": hpos, "gtid": res.high_gtid},
        "rows": len(res.rows) + len(res.full_rows), "backfilled": res.backfilled,
    }
    lo = _key_image(t, c.lo) if c.lo is not None else None
    hi = _key_image(t, c.hi) if c.hi is not None else None
    yield _batch(t, fidx, hfile, hpos, res.ts, c.index, [CHUNK_OP], [-1], [lo], [hi],
                 [json.dumps(marker, separators=(",", ":"))])
    images = res.full_rows or list(res.rows.values())
    for start in range(0, len(images), batch_size):
        part = images[start:start + batch_size]
        yield _batch(t, fidx, hfile, hpos, res.ts, c.index, [ROW_OP] * len(part),
                     list(range(start, start + len(part))), [None] * len(part), part,
                     [None] * len(part))


def _key_image(t: SnapshotTable, bound: Sequence[Any]) -> str:
    vals = bound_json(t, bound)
    return "{" + ",".join(json_string(k) + ":" + dumps(v) for k, v in zip(t.key, vals)) + "}"


def _batch(t: SnapshotTable, fidx: int, file: str, pos: int, ts: int, chunk: int,
           ops: list[str], rows: list[int], before: list[str | None], after: list[str | None],
           query: list[str | None]) -> pa.RecordBatch:
    n = len(ops)
    i32, i64, s = pa.int32(), pa.int64(), pa.string()
    pos_a, row_a = pa.array([pos] * n, i64), pa.array(rows, i32)
    inner_a = pa.array([chunk] * n, i32)
    seq = pa.StructArray.from_arrays([pa.array([fidx] * n, i32), pos_a, inner_a, row_a],
                                     fields=list(SEQ_TYPE))
    cols = [pa.array(ops, s), pa.array([t.schema] * n, s), pa.array([t.table] * n, s),
            pa.array([file] * n, s), pos_a, pa.array([pos] * n, i64), row_a, inner_a,
            pa.nulls(n, s), pa.array([ts * 1_000_000] * n, pa.timestamp("us", tz="UTC")), seq,
            pa.array(before, s), pa.array(after, s), pa.array(query, s), pa.nulls(n, s)]
    return pa.RecordBatch.from_arrays(cols, schema=CDC_SCHEMA)



# -- watermarks of a materialised snapshot -------------------------------------------------

def snapshot_watermarks(df: "DataFrame") -> SnapshotWatermarks:
    """The watermarks of a *materialised* snapshot DataFrame (see the module notes)."""
    from pyspark.sql import functions as F

    rows = (df.where(F.col("op") == CHUNK_OP)
            .select("op", "schema", "table", "before", "after", "query").collect())
    return watermarks_from_rows(r.asDict() for r in rows)


def read_snapshot(spark: "SparkSession", url: str, tables: str,
                  **options: Any) -> tuple["DataFrame", SnapshotWatermarks]:
    """Run the snapshot once: its DataFrame (materialised with `localCheckpoint`, so every
    later action sees the same rows) and the watermarks taken from exactly those rows."""
    reader = spark.read.format(NAME).option("url", url).option("tables", tables)
    for k, v in options.items():
        reader = reader.option(k, json.dumps(v) if isinstance(v, (dict, list)) else str(v))
    df = reader.load().localCheckpoint(eager=True)
    return df, snapshot_watermarks(df)


# -- the Spark data source ------------------------------------------------------------------------

class ChunkPartition(InputPartition):
    """One chunk for one executor task."""

    def __init__(self, chunk: Chunk) -> None:
        super().__init__(chunk.ordinal)
        self.chunk = chunk


class SnapshotDataSource(DataSource):
    """Initial snapshot rows (op insert) and chunk markers (op chunk), in the CDC schema."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType | str:
        return CDC_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return SnapshotReader(self.options)


class SnapshotReader(DataSourceReader):
    """Plans chunks on the driver; each task reads one chunk with its watermarks."""

    def __init__(self, options: Any) -> None:
        url = options.get("url")
        tables = options.get("tables")
        if not url or not tables:
            raise SnapshotError('binlake-snapshot needs .option("url", ...) and '
                                '.option("tables", "db.table,...")')
        self.url = str(url)
        self.tables = str(tables)
        self.chunks = int(options["chunks"]) if options.get("chunks") else None
        self.chunk_size = int(options.get("chunkSize", DEFAULT_CHUNK_SIZE))
        raw_keys = options.get("keys")
        self.keys: dict[str, list[str]] = json.loads(raw_keys) if raw_keys else {}
        if not isinstance(self.keys, dict):
            raise SnapshotError('option "keys" must be a JSON object {"db.table": ["col", ...]}')
        self.no_key = str(options.get("noKeyPolicy", "full"))
        if self.no_key not in NO_KEY_POLICIES:
            raise SnapshotError(f"noKeyPolicy must be one of {NO_KEY_POLICIES}, "
                                f"not {self.no_key!r}")
        self.server_id_base = int(options.get("serverIdBase", DEFAULT_SERVER_ID_BASE))
        self.batch_size = int(options.get("batchSize", "10000"))

    def partitions(self) -> list[InputPartition]:
        plan = plan_snapshot(self.url, self.tables, chunks=self.chunks,
                             chunk_size=self.chunk_size, keys=self.keys, no_key=self.no_key)
        return [ChunkPartition(c) for c in plan]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, ChunkPartition)
        c = partition.chunk
        res = read_chunk(self.url, c, server_id=self.server_id_base + c.ordinal)
        yield from chunk_batches(res, self.batch_size)
