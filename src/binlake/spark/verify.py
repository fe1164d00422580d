"""The Delta side of `binlake verify`: the same canonical row text and hash as the source's
SQL (`binlake.verify.canonical`), as Spark expressions over a Delta table.

Per column kind (see canonical.py for the text): integers and decimals cast to string (Spark
prints decimals with their scale, never in exponent form), floats by exponent and mantissa
with the same exact arithmetic as the SQL side, DATE/DATETIME (TIMESTAMP_NTZ) formatted with
6 fraction digits, TIMESTAMP as unix_micros, binary as upper-case hex, geometry as
'<srid>:<hex WKB>', text as it is. A row's chunk is found with the same boundaries as the
source's (struct comparison, lexicographic like SQL's row order) or the same hash bucket.

Only the current rows are compared: binlake's `_binlake_*` columns and SCD2's
`__START_AT`/`__END_AT` are left out, and with SCD2 only the open versions (`__END_AT` NULL)
count. Each function runs one Spark job for all the chunks it is given; `checksums` one
job for all the tables it is given.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..verify.canonical import MANTISSA, Column, VerifyError
from ..verify.lake import END_AT, START_AT, lake_table_path
from ..verify.source import Plan

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SCol, DataFrame, SparkSession

SEQ = "_binlake_seq"
TRUNCATE = "_binlake_truncate"


def _c(name: str) -> "SCol":
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def _ref(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _float_text(x: str) -> str:
    """Spark SQL for a float's text. Written so that Spark's common subexpression
    elimination can share LOG2 and POW between the exponent and the mantissa: no CASE
    around them (Spark does not share work inside a conditional branch); zero is the
    only conditional, taken after the rest came out NULL."""
    d = f"CAST({x} AS DOUBLE)"
    a = f"IF({d} = 0, CAST(NULL AS DOUBLE), ABS({d}))"  # NULL for zero: no LOG2(0)
    e0 = f"LEAST(GREATEST(FLOOR(LOG2({a})), -1074), 1023)"
    q = f"({a} / POW(2.0D, {e0}))"
    e = f"({e0} + CAST({q} >= 2 AS BIGINT) - CAST({q} < 1 AS BIGINT))"
    mant = f"CAST({a} / POW(2.0D, {e}) * {float(MANTISSA)!r}D AS BIGINT)"
    core = f"CONCAT(IF({d} < 0, '-', '+'), CAST({e} AS STRING), 'p', CAST({mant} AS STRING))"
    return f"COALESCE({core}, IF({d} = 0, '0', CAST(NULL AS STRING)))"


def value_text(col: Column, x: str, dtype: Any) -> str:
    """The canonical text of one Delta column as Spark SQL over the expression `x` (NULL
    stays NULL): a whole row's expression is then one string, parsed once by the JVM
    instead of built call by call."""
    from pyspark.sql.types import StringType

    k = col.kind
    if k in ("int", "decimal"):
        return x if isinstance(dtype, StringType) else f"CAST({x} AS STRING)"
    if k == "float":
        return _float_text(x)
    if isinstance(dtype, StringType) and k in ("date", "datetime", "timestamp"):
        raise VerifyError(f"column {col.name} is kept as text in Delta (zero_dates='string'): "
                          "verify compares the 'null' policy only")
    if k == "date":
        return f"date_format({x}, 'yyyy-MM-dd')"
    if k == "datetime":
        return f"date_format({x}, 'yyyy-MM-dd HH:mm:ss.SSSSSS')"
    if k == "timestamp":
        return f"CAST(unix_micros({x}) AS STRING)"
    if k == "binary":
        return f"hex({x})"
    if k == "geometry":
        return f"CONCAT(CAST({x}.srid AS STRING), ':', hex({x}.wkb))"
    return x


def value_expr(col: Column, name: str, dtype: Any) -> "SCol":
    """The canonical text of the Delta column `name` (NULL stays NULL)."""
    from pyspark.sql import functions as F

    return F.expr(value_text(col, _ref(name), dtype))


def frame_text(v: str) -> str:
    return f"COALESCE(CONCAT('V', CAST(octet_length({v}) AS STRING), ':', {v}), 'N')"


def key_text_sql(cols: Sequence[Column], df: "DataFrame", names: dict[str, str]) -> str:
    """Spark SQL for the canonical text of a key's columns (each value framed)."""
    types = {f.name: f.dataType for f in df.schema}  # once: each df.schema asks the JVM
    return "CONCAT(" + ", ".join(frame_text(value_text(c, _ref(names[c.name]),
                                                        types[names[c.name]]))
                                 for c in cols) + ")"


def row_text(cols: Sequence[Column], df: "DataFrame", names: dict[str, str]) -> str:
    """Spark SQL for the canonical text of a row, which is hashed: `canonical.row_sql`'s."""
    types = {f.name: f.dataType for f in df.schema}
    parts = []
    for c in cols:
        v = value_text(c, _ref(names[c.name]), types[names[c.name]])
        parts.append(f"COALESCE(CONCAT(CAST(octet_length({v}) AS STRING), ':', {v}), 'N')"
                     if c.kind == "text" else f"COALESCE({v}, 'N')")
    return "concat_ws(',', " + ", ".join(parts) + ")"


def text_expr(cols: Sequence[Column], df: "DataFrame", names: dict[str, str]) -> "SCol":
    """The key text of `cols` as a Column."""
    from pyspark.sql import functions as F

    return F.expr(key_text_sql(cols, df, names))


def hash64_text(text: str) -> str:
    """The first 64 bits of SHA1(text), as a signed bigint (compare modulo 2**64)."""
    return f"CAST(conv(substring(sha1({text}), 1, 16), 16, -10) AS BIGINT)"


def bucket(key_text: "SCol", buckets: int) -> "SCol":
    from pyspark.sql import functions as F

    return (F.conv(F.substring(F.sha1(key_text), 17, 8), 16, 10).cast("bigint")
            % F.lit(buckets)).cast("int")


def _literal(col: Column, text: str, dtype: Any) -> "SCol":
    from pyspark.sql import functions as F

    if col.kind == "binary":
        return F.unhex(F.lit(text))
    if col.kind == "timestamp":
        return F.lit(text.replace(" ", "T") + "Z").cast("timestamp")
    return F.lit(text).cast(dtype)


def chunk_expr(plan: Plan, df: "DataFrame", names: dict[str, str], key_text: "SCol") -> "SCol":
    """The chunk index of each row: a binary search over the boundaries, or the hash bucket."""
    from pyspark.sql import functions as F

    if plan.buckets:
        return bucket(key_text, plan.buckets)
    keys = plan.table.key_columns
    types = {f.name: f.dataType for f in df.schema}
    dtypes = [types[names[c.name]] for c in keys]
    cols = [_c(names[c.name]) for c in keys]
    key = cols[0] if len(cols) == 1 else F.struct(*[c.alias(f"k{i}") for i, c in enumerate(cols)])

    def bound(b: tuple[str, ...]) -> "SCol":
        lits = [_literal(c, v, t) for c, v, t in zip(keys, b, dtypes)]
        return lits[0] if len(lits) == 1 else F.struct(*[v.alias(f"k{i}")
                                                         for i, v in enumerate(lits)])

    chunks = plan.chunks

    def search(lo: int, hi: int) -> "SCol":  # chunks[lo:hi]; chunk i starts at chunks[i].lo
        if hi - lo == 1:
            return F.lit(chunks[lo].index)
        mid = (lo + hi) // 2
        start = chunks[mid].lo
        if start is None:  # only the first chunk is unbounded below
            raise VerifyError(f"{plan.table.name}: chunk {mid} has no lower bound")
        return F.when(key < bound(start), search(lo, mid)).otherwise(search(mid, hi))

    return search(0, len(chunks))


NO_TABLE = frozenset({"PATH_NOT_FOUND", "DELTA_TABLE_NOT_FOUND", "DELTA_MISSING_DELTA_TABLE"})
"""Spark's error conditions for "there is no Delta table at this path"."""


def read_delta(spark: "SparkSession", path: str) -> "DataFrame | None":
    """The Delta table at `path`, or None when there is none; any other failure (storage,
    a corrupt log) is raised as it is."""
    from pyspark.errors import AnalysisException

    try:
        return spark.read.format("delta").load(path)
    except AnalysisException as exc:
        if exc.getCondition() in NO_TABLE:
            return None
        raise


class LakeTable:
    """A synced Delta table read for comparison with its source table."""

    def __init__(self, spark: "SparkSession", path: str, plan: Plan,
                 tombstones: str | None = None) -> None:
        from pyspark.sql import functions as F

        self.spark, self.path, self.plan = spark, path, plan
        t = plan.table
        df = read_delta(spark, path)
        if df is None:
            raise VerifyError(f"{t.name}: no Delta table at {path}",
                              hint="run binlake sync for it first")
        self.scd2 = END_AT in df.columns
        ours = [c for c in df.columns if not c.startswith("_binlake_")
                and c not in (START_AT, END_AT)]
        lower = {c.lower(): c for c in ours}
        self.names = {c.name: lower[c.name.lower()] for c in t.columns if c.name.lower() in lower}
        self.missing = [c.name for c in t.columns if c.name not in self.names]
        self.extra = sorted(set(ours) - set(self.names.values()))
        self.all_versions = df
        self.df = df.where(F.col(END_AT).isNull()) if self.scd2 else df
        self.tombstones = tombstones

    @property
    def comparable(self) -> bool:
        return not self.missing and all(k in self.names for k in self.plan.table.key)

    def _frame(self, df: "DataFrame") -> "DataFrame":
        from pyspark.sql import functions as F

        t = self.plan.table
        key_text = text_expr(t.key_columns, df, self.names)
        return df.select(chunk_expr(self.plan, df, self.names, key_text).alias("_chunk"),
                         key_text.alias("_key"),
                         F.expr(f"sha1({row_text(t.columns, df, self.names)})").alias("_hash"))

    def hashed(self, tag: int) -> "DataFrame":
        """(_t = tag, _chunk, _h = the row's 64-bit hash) per current row: the input of
        `checksums`, in the same columns for every table so that tables can be unioned."""
        from pyspark.sql import functions as F

        t = self.plan.table
        df = self.df
        key_text = text_expr(t.key_columns, df, self.names)
        return df.select(F.lit(tag).alias("_t"),
                         chunk_expr(self.plan, df, self.names, key_text).cast("int")
                         .alias("_chunk"),
                         F.expr(hash64_text(row_text(t.columns, df, self.names))).alias("_h"))

    def checksums(self) -> dict[int, tuple[int, int]]:
        """chunk index -> (rows, BIT_XOR of the 64-bit row hashes, unsigned): one job."""
        return checksums([self])[0]

    def row_hashes(self, chunks: Iterable[int]) -> dict[int, dict[str, str]]:
        """chunk -> key text -> row SHA-1 (hex), for the given chunks: one job."""
        from pyspark.sql import functions as F

        wanted = sorted(set(chunks))
        rows = self._frame(self.df).where(F.col("_chunk").isin(wanted)).collect()
        out: dict[int, dict[str, str]] = {c: {} for c in wanted}
        for r in rows:
            out[int(r["_chunk"])][r["_key"]] = r["_hash"]
        return out

    def touched_since(self, chunks: Iterable[int], at: tuple[int, int]) -> tuple[set[str], bool]:
        """Keys (of the given chunks) that the sync changed after binlog position `at`
        (file index, offset): a row or version whose seq is later, or a later tombstone.
        The flag says a TRUNCATE came later (every key is then changed)."""
        from pyspark.sql import functions as F

        fi, pos = at

        def after(seq: "SCol") -> "SCol":
            return (seq.getField("file_index") > fi) | (
                (seq.getField("file_index") == fi) & (seq.getField("pos") > pos))

        t = self.plan.table
        wanted = sorted(set(chunks))
        if self.scd2:
            recent = self.all_versions.where(after(F.col(START_AT))
                                             | (F.col(END_AT).isNotNull() & after(F.col(END_AT))))
        else:
            recent = self.df.where(after(F.col(SEQ)))
        keys = {r["_key"] for r in self._frame(recent).where(F.col("_chunk").isin(wanted))
                .select("_key").collect()}
        truncated = False
        # No tombstone table (the sync creates it at the first delete): nothing was deleted.
        tomb = read_delta(self.spark, self.tombstones) if self.tombstones else None
        if tomb is not None:
            tomb = tomb.where(after(F.col(SEQ)))
            names = {k: self.names[k] for k in t.key}
            key_text = text_expr(t.key_columns, tomb, names)
            dead = tomb.select(F.col(TRUNCATE).alias("_trunc"),
                               chunk_expr(self.plan, tomb, names, key_text).alias("_chunk"),
                               key_text.alias("_key"))
            for r in dead.where(F.col("_trunc") | F.col("_chunk").isin(wanted)).collect():
                if r["_trunc"]:
                    truncated = True
                else:
                    keys.add(r["_key"])
        return keys, truncated

    def row_values(self, keys: set[str]) -> dict[str, dict[str, str | None]]:
        """key text -> {column: canonical text} of the given keys."""
        from pyspark.sql import functions as F

        if not keys:
            return {}
        t = self.plan.table
        df = self.df
        key_text = text_expr(t.key_columns, df, self.names)
        types = {f.name: f.dataType for f in df.schema}
        vals = [value_expr(c, self.names[c.name], types[self.names[c.name]])
                .alias(f"v{i}") for i, c in enumerate(t.columns)]
        rows = df.select(key_text.alias("_key"), *vals).where(F.col("_key").isin(sorted(keys))) \
            .collect()
        return {r["_key"]: {c.name: r[f"v{i}"] for i, c in enumerate(t.columns)} for r in rows}


def checksums(lakes: Sequence[LakeTable]) -> list[dict[int, tuple[int, int]]]:
    """Per table, chunk index -> (rows, BIT_XOR of the 64-bit row hashes, unsigned), for
    all the tables in one Spark job (their scans share the cores and the job's fixed cost)."""
    from functools import reduce

    from pyspark.sql import functions as F

    out: list[dict[int, tuple[int, int]]] = [{} for _ in lakes]
    if not lakes:
        return out
    rows = (reduce(lambda a, b: a.unionAll(b), [lk.hashed(i) for i, lk in enumerate(lakes)])
            .groupBy("_t", "_chunk")
            .agg(F.count(F.lit(1)).alias("n"), F.bit_xor("_h").alias("x")).collect())
    for r in rows:
        out[int(r["_t"])][int(r["_chunk"])] = (int(r["n"]), int(r["x"]) & 0xFFFFFFFFFFFFFFFF)
    return out


def lake_table(spark: "SparkSession", warehouse: str, plan: Plan) -> LakeTable:
    t = plan.table
    return LakeTable(spark, lake_table_path(warehouse, plan), plan,
                     f"{warehouse.rstrip('/')}/_binlake/tombstones/{t.schema}/{t.table}")



# -- repair ----------------------------------------------------------------------------------

REPAIR_APP_ID = "binlake-verify-repair"
REPAIR_INNER = 2**31 - 1
"""The seq `inner` of repair rows: after every snapshot row read at the same position."""


def _key_json(col: Column, text: str) -> str:
    """A key column's canonical text as the binlog path's JSON image value."""
    import base64
    import datetime as dt
    import json

    if col.kind == "binary":
        return json.dumps(base64.b64encode(bytes.fromhex(text)).decode("ascii"))
    if col.kind == "timestamp":
        when = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(text))
        return json.dumps(when.isoformat(timespec="microseconds") + "Z")
    if col.kind == "datetime":
        return json.dumps(text.replace(" ", "T", 1))
    return json.dumps(text, ensure_ascii=False)


def repair(spark: "SparkSession", src: Any, warehouse: str, plan: Plan, lake: LakeTable,
           keys: dict[str, dict[str, str | None]]) -> int:
    """Re-read the rows of `keys` (key text -> key column texts) from the source in one
    consistent snapshot at P and apply them through the sync's apply step as one batch:
    upserts of the rows the source has, deletes of the others, all at seq P (after every
    change the sync applied up to P, before every later one), so the seq guard, tombstones
    and SCD2 history treat them like any change. Exactly once: the batch commits with
    binlake's repair txnAppId. Rows of these keys without a seq (written behind binlake's
    back, not by it) are deleted first. Returns the rows applied."""
    import time

    import pyarrow as pa

    from ..verify.progress import file_index
    from .apply import ApplyConfig, TableOptions, apply_batch
    from ..cdc.arrow import CDC_SCHEMA, SEQ_TYPE
    from ..schema.spec import read_table_spec
    from ..snapshot.tables import describe_table
    from ..snapshot.values import RowFormatter

    if not keys:
        return 0
    t = plan.table
    with src.conn.cursor() as cur:
        snap = describe_table(cur, t.schema, t.table)
    fmt = RowFormatter(snap)
    marks = ", ".join(["%s"] * len(keys))
    rows, at = src.read(f"SELECT {t.key_text}, {fmt.select_list} FROM {t.from_sql} "
                        f"WHERE {t.key_text} IN ({marks})", sorted(keys))
    present: dict[str, str] = {}
    for r in rows:
        k = r[0].decode("utf-8", "surrogateescape") if isinstance(r[0], bytes) else str(r[0])
        present[k] = fmt.image(r[1:])[1]
    ops: list[str] = []
    before: list[str | None] = []
    after: list[str | None] = []
    for k in sorted(keys):
        if k in present:
            ops.append("insert")
            before.append(None)
            after.append(present[k])
        else:
            vals = keys[k]
            ops.append("delete")
            before.append("{" + ",".join(
                f"{_key_json_name(c.name)}:{_key_json(c, vals[c.name] or '')}"
                for c in t.key_columns) + "}")
            after.append(None)
    n = len(ops)
    file, pos = at
    i32, i64, s = pa.int32(), pa.int64(), pa.string()
    row = pa.array(range(n), i32)
    seq = pa.StructArray.from_arrays([pa.array([file_index(file)] * n, i32),
                                      pa.array([pos] * n, i64),
                                      pa.array([REPAIR_INNER] * n, i32), row],
                                     fields=list(SEQ_TYPE))
    now = int(time.time() * 1_000_000)
    batch = pa.RecordBatch.from_arrays(
        [pa.array(ops, s), pa.array([t.schema] * n, s), pa.array([t.table] * n, s),
         pa.array([file] * n, s), pa.array([pos] * n, i64), pa.array([pos] * n, i64), row,
         pa.array([REPAIR_INNER] * n, i32), pa.nulls(n, s),
         pa.array([now] * n, pa.timestamp("us", tz="UTC")), seq, pa.array(before, s),
         pa.array(after, s), pa.nulls(n, s), pa.nulls(n, s)], schema=CDC_SCHEMA)
    _drop_foreign(spark, lake, set(keys))
    spec = read_table_spec(src.conn, t.schema, t.table)
    if spec is None:
        raise VerifyError(f"{t.name} is gone from the source: nothing to repair from")
    options = TableOptions(scd_type=2 if lake.scd2 else 1)
    config = ApplyConfig(target=warehouse, app_id=REPAIR_APP_ID, tables={t.name: options})
    # A new batch id every run (Delta skips a txnVersion it has seen for the app id).
    apply_batch(spark, spark.createDataFrame(pa.Table.from_batches([batch])),
                int(time.time() * 1000), config, {(t.schema, t.table): spec})
    return n


def _drop_foreign(spark: "SparkSession", lake: LakeTable, keys: set[str]) -> None:
    """Delete rows of these keys that carry no seq: binlake did not write them (the apply
    step's seq guard cannot order a change after them), so they have no place in the table."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    seq = F.col(START_AT) if lake.scd2 else F.col(SEQ)
    t = lake.plan.table
    cond = seq.isNull() & text_expr(t.key_columns, lake.all_versions, lake.names).isin(
        sorted(keys))
    DeltaTable.forPath(spark, lake.path).delete(cond)


def _key_json_name(name: str) -> str:
    import json

    return json.dumps(name, ensure_ascii=False)
