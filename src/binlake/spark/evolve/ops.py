"""Executing one planned operation on Delta, and folder moves on the Hadoop FileSystem."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..tables import ApplyError, KNOWN, delta_ref, quote_name
from ..typing import typed_value
from .journal import Context, DETAILS
from .retype import converted_col
from .shapes import col_from_json

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def run_op(spark: "SparkSession", op: dict[str, Any], ctx: Context) -> None:
    from pyspark.sql import functions as F

    kind, path = op["op"], op["path"]
    if kind == "sql":
        spark.sql(op["sql"])
    elif kind == "props":
        pairs = ", ".join(f"{_sql_str(k)} = {_sql_str(v)}" for k, v in op["props"].items())
        spark.sql(f"ALTER TABLE {delta_ref(path)} SET TBLPROPERTIES ({pairs})")
    elif kind == "create":
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(op["schema"]))
        cols = ", ".join(f"{quote_name(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        pairs = ", ".join(f"{_sql_str(k)} = {_sql_str(v)}" for k, v in op["props"].items())
        spark.sql(f"CREATE TABLE {delta_ref(path)} ({cols}) USING delta TBLPROPERTIES ({pairs})")
    elif kind == "rewrite":
        df = spark.read.format("delta").load(path)
        convs = op["columns"]
        out = [converted_col(F.col(quote_name(f.name)), convs[f.name]).alias(f.name) if f.name in convs
               else F.col(quote_name(f.name)) for f in df.schema.fields]
        (df.select(*out).write.format("delta").mode("overwrite")
         .option("overwriteSchema", "true").save(path))
    elif kind == "backfill":
        from delta.tables import DeltaTable

        sets = {}
        for s in op["set"]:
            value = typed_value(F.lit(s["text"]), col_from_json(s["spec"]),
                                ctx.config.zero_dates)
            c = F.col(quote_name(s["column"]))
            sets[quote_name(s["column"])] = F.when(c.isNull(), value).otherwise(c) if s["nulls"] else value
        DeltaTable.forPath(spark, path).update(condition=F.expr(op["where"]), set=sets)
    else:  # pragma: no cover - planner and executor disagree
        raise ApplyError(f"unknown evolution operation {kind!r}")


def _sql_str(v: str) -> str:
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fs(spark: "SparkSession", path: str) -> tuple[Any, Any]:
    jvm = spark._jvm  # type: ignore[attr-defined]
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark._jsc.hadoopConfiguration()), p  # type: ignore[attr-defined]


def _forget(spark: "SparkSession", *paths: str) -> None:
    """Drop what this process and Delta cached about tables at `paths` (moved or deleted)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    for path in paths:
        KNOWN.pop(path, None)
        DETAILS.pop(path, None)
        jvm.org.apache.spark.sql.delta.DeltaLog.invalidateCache(
            spark._jsparkSession, jvm.org.apache.hadoop.fs.Path(path))  # type: ignore[attr-defined]


def move_folder(spark: "SparkSession", src: str, dst: str) -> None:
    """Move a folder; done when `dst` exists (a resumed move), nothing when `src` does not."""
    fs, s = _fs(spark, src)
    d = _fs(spark, dst)[1]
    if fs.exists(d) or not fs.exists(s):
        return
    fs.mkdirs(d.getParent())
    if not fs.rename(s, d):
        raise ApplyError(f"could not move {src} to {dst}")
    _forget(spark, src, dst)


def path_exists(spark: "SparkSession", path: str) -> bool:
    fs, p = _fs(spark, path)
    return bool(fs.exists(p))


def delete_path(spark: "SparkSession", path: str) -> None:
    fs, p = _fs(spark, path)
    if fs.exists(p):
        fs.delete(p, True)
    _forget(spark, path)
