"""MySQL column types -> Spark types, and JSON image text -> exact typed values in Spark."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_events
from binlake.schema.spec import (
    ColumnSpec, TableSpec, column_from_information_schema, specs_from_events,
)
from binlake.spark.typing import image_schema, spark_type, typed_value
from binlake.binlog.values import InvalidTemporal, MySQLTime

pytestmark = pytest.mark.spark
CORPUS_FILE = "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"


@pytest.mark.parametrize("col, expected", [
    (ColumnSpec("c", "tinyint"), "tinyint"),
    (ColumnSpec("c", "tinyint", unsigned=True), "smallint"),
    (ColumnSpec("c", "smallint", unsigned=True), "int"),
    (ColumnSpec("c", "mediumint", unsigned=True), "int"),
    (ColumnSpec("c", "int", unsigned=True), "bigint"),
    (ColumnSpec("c", "bigint"), "bigint"),
    (ColumnSpec("c", "bigint", unsigned=True), "decimal(20,0)"),
    (ColumnSpec("c", "decimal", precision=38, scale=10), "decimal(38,10)"),
    (ColumnSpec("c", "decimal", precision=65, scale=30), "string"),
    (ColumnSpec("c", "float"), "float"),
    (ColumnSpec("c", "double"), "double"),
    (ColumnSpec("c", "bit", precision=13), "bigint"),
    (ColumnSpec("c", "bit", precision=64), "decimal(20,0)"),
    (ColumnSpec("c", "year"), "smallint"),
    (ColumnSpec("c", "date"), "date"),
    (ColumnSpec("c", "datetime", fsp=6), "timestamp_ntz"),
    (ColumnSpec("c", "timestamp", fsp=3), "timestamp"),
    (ColumnSpec("c", "time", fsp=6), "string"),
    (ColumnSpec("c", "varchar"), "string"),
    (ColumnSpec("c", "enum"), "string"),
    (ColumnSpec("c", "json"), "string"),
    (ColumnSpec("c", "varbinary"), "binary"),
    (ColumnSpec("c", "longblob"), "binary"),
    (ColumnSpec("c", "geometry"), "struct<srid:bigint,wkb:binary>"),
    (ColumnSpec("c", "vector"), "array<float>"),
    (ColumnSpec("c", "uuid"), "string"),  # MariaDB's UUID/INET: the server's text
    (ColumnSpec("c", "inet6"), "string"),
    (ColumnSpec("c", "inet4"), "string"),
])
def test_spark_types(col: ColumnSpec, expected: str) -> None:
    assert spark_type(col).simpleString() == expected


def test_zero_dates_string_policy_keeps_temporal_text() -> None:
    for t in ("date", "datetime", "timestamp"):
        assert spark_type(ColumnSpec("c", t), "string").simpleString() == "string"


def test_information_schema_rows() -> None:
    row = ("price", "decimal", "decimal(12,3) unsigned", 12, 3, None, "NO", None)
    assert column_from_information_schema(row) == ColumnSpec("price", "decimal", True, 12, 3, 0, False)
    row = ("flags", "bit", "bit(7)", 7, None, None, "YES", None)
    assert column_from_information_schema(row).precision == 7
    row = ("raw", "varchar", "varbinary(8)", None, None, None, "YES", "binary")
    assert column_from_information_schema(row).type == "varbinary"
    row = ("at", "datetime", "datetime(3)", None, None, 3, "YES", None)
    assert column_from_information_schema(row).fsp == 3
    row = ("u", "uuid", "uuid", None, None, None, "YES", None)
    assert spark_type(column_from_information_schema(row)).simpleString() == "string"


def test_uuid_and_inet_of_the_schema_history_are_strings() -> None:
    """A history column of MariaDB's UUID/INET types, and the TABLE_MAP column it marks
    (BINARY(16)/(4) in the binlog), type as strings; an unmarked BINARY(16) stays binary."""
    from binlake.binlog.constants import ColumnType as T
    from binlake.binlog.table_map import ColumnInfo, TableMapEvent
    from binlake.schema.model import Column, TableDef
    from binlake.spark.typing import TableSpec

    td = TableDef("db", "t", (Column("u", "uuid"), Column("a", "inet6"), Column("b", "inet4")))
    assert [c.type for c in TableSpec.from_table_def(td).columns] == ["uuid", "inet6", "inet4"]
    cols = [ColumnInfo(index=i, type=T.STRING, binlog_type=T.STRING, meta=(T.STRING << 8) | 16,
                       nullable=True, name=n, collation=63, plugin_type=k)
            for i, (n, k) in enumerate([("u", "uuid"), ("raw", None)])]
    tm = TableMapEvent.__new__(TableMapEvent)
    for name, value in (("columns", cols), ("schema", "db"), ("table", "t"),
                        ("primary_key", None), ("row_decoders", {})):
        object.__setattr__(tm, name, value)
    spec = TableSpec.from_table_map(tm)
    assert [spark_type(c).simpleString() for c in spec.columns] == ["string", "binary"]


def _expected(c: ColumnSpec, v: Any) -> Any:
    """What Spark must hold for a decoded value (zero dates policy 'null')."""
    if v is None or isinstance(v, InvalidTemporal):
        return None
    if c.type == "decimal":
        return v if (c.precision or 0) <= 38 else format(v, "f")
    if (c.type == "bigint" and c.unsigned) or (c.type == "bit" and c.precision == 64):
        return Decimal(v)
    if c.type == "timestamp":
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(v, MySQLTime):
        return v.format(c.fsp)
    if c.type == "geometry":
        return (v.srid, v.wkb)
    return v


def _spark_value(c: ColumnSpec, v: Any) -> Any:
    if v is None:
        return None
    if c.type == "timestamp":
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(v, bytearray):
        return bytes(v)
    if c.type == "geometry":
        return (v["srid"], bytes(v["wkb"]))
    return v


def test_images_become_exact_typed_values(spark: Any, corpus_dir: Path) -> None:
    """Every column type of the corpus survives binlog -> CDC JSON -> Spark exactly."""
    from pyspark.sql import functions as F

    path = corpus_dir / CORPUS_FILE
    specs = specs_from_events(read_events(path))
    df = spark.read.format("binlake").load(str(path)).where("op = 'insert'").persist()
    checked = 0
    for rec_table, spec in specs.items():
        records = [r for r in iter_changes(read_events(path))
                   if r.op == "insert" and (r.schema, r.table) == rec_table]
        if not records:
            continue
        js = image_schema(spec, spec.names)
        parsed = df.where((F.col("schema") == spec.schema) & (F.col("table") == spec.table))
        parsed = parsed.select("seq", F.from_json("after", js).alias("a"))
        typed = parsed.select("seq", *[typed_value(F.col("a").getField(c.name), c).alias(c.name)
                                       for c in spec.columns])
        rows = typed.orderBy("seq").collect()
        assert len(rows) == len(records)
        for row, rec in zip(rows, records):
            assert rec.after is not None
            for c in spec.columns:
                assert _spark_value(c, row[c.name]) == _expected(c, rec.after[c.name]), (
                    spec.table, c.name, rec.after[c.name])
            checked += 1
    df.unpersist()
    assert checked >= 20


def test_zero_dates_policies(spark: Any) -> None:
    from pyspark.sql import functions as F

    spec = TableSpec("s", "t", (ColumnSpec("d", "date"), ColumnSpec("dt", "datetime")))
    images = ['{"d":"0000-00-00","dt":"2024-02-00 00:00:00"}', '{"d":"2024-02-29","dt":null}']
    df = spark.createDataFrame([(i,) for i in images], "j string")
    js = image_schema(spec, spec.names)

    def run(policy: str) -> list[tuple[Any, ...]]:
        cols = [typed_value(F.from_json("j", js).getField(c.name), c, policy).alias(c.name)
                for c in spec.columns]
        return [tuple(r) for r in df.select(*cols).collect()]

    assert run("null") == [(None, None), (dt.date(2024, 2, 29), None)]
    assert run("string") == [("0000-00-00", "2024-02-00 00:00:00"), ("2024-02-29", None)]
    with pytest.raises(Exception):
        run("error")


def test_a_local_session_gets_a_driver_heap(spark: Any) -> None:
    from binlake.spark.session import local_driver_memory

    expected = local_driver_memory()
    assert expected is not None  # the tests choose no heap of their own
    assert spark.sparkContext.getConf().get("spark.driver.memory") == expected


def test_driver_typing_equals_spark_typing(spark: Any, corpus_dir: Path) -> None:
    """`lake.values.typed_column` (the driver's MERGE source) gives each corpus value the
    value Spark's `typed_value` gives it, for every column type a fold carries; a value it
    refuses (`Untyped`: zero or invalid dates here, which send the batch to Spark) is one
    Spark makes NULL under the default zero-dates policy."""
    import json

    import pyarrow as pa
    from pyspark.sql import functions as F

    from binlake.cdc.net import NESTED_TYPES
    from binlake.lake.values import Untyped, typed_column
    from binlake.schema.spec import BINARY_TYPES
    from binlake.spark.typing import arrow_schema, spark_schema

    def text(v: Any) -> Any:  # the fold's text of a parsed image value
        return {True: "true", False: "false"}.get(v, v) if isinstance(v, bool) else v

    path = corpus_dir / CORPUS_FILE
    specs = specs_from_events(read_events(path))
    df = spark.read.format("binlake").load(str(path)).where("op = 'insert'")
    rows = df.select("schema", "table", F.col("seq.pos").alias("p"), F.col("seq.row").alias("r"),
                     "after").collect()
    compared, refused = set(), set()
    for (schema, table), spec in specs.items():
        mine = [r for r in rows if (r["schema"], r["table"]) == (schema, table)]
        cols = [c for c in spec.columns if c.type not in NESTED_TYPES]
        if not mine or not cols:
            continue
        target = arrow_schema(spark_schema(spec, "null", [c.name for c in cols]))
        images = [json.loads(r["after"], parse_int=str, parse_float=str) for r in mine]
        arrays, names = [], []
        for c in cols:
            texts = pa.array([text(img.get(c.name)) for img in images], pa.string())
            t, binary = target.field(c.name).type, c.type in BINARY_TYPES
            try:
                arrays.append(typed_column(texts, t, name=c.name, binary=binary))
            except Untyped:  # value by value: what the driver refuses, Spark makes NULL
                refused.add(c.type)
                one = []
                for v in texts:
                    try:
                        one.append(typed_column(pa.array([v]), t, name=c.name,
                                                binary=binary)[0].as_py())
                    except Untyped:
                        one.append(None)
                arrays.append(pa.array(one, t))
            names.append(c.name)
        ids = pa.array([f"{r['p']}/{r['r']}" for r in mine])
        driver = spark.createDataFrame(pa.Table.from_arrays([ids, *arrays], ["_id", *names]))
        js = image_schema(spec, names)
        by_spark = (df.where((F.col("schema") == schema) & (F.col("table") == table))
                    .select(F.concat_ws("/", "seq.pos", "seq.row").alias("_id"),
                            F.from_json("after", js).alias("a"))
                    .select("_id", *[typed_value(F.col("a").getField(n), spec.column(n))
                                     .alias(n) for n in names]))
        assert by_spark.count() == driver.count() == len(mine)
        differ = driver.exceptAll(by_spark).count() + by_spark.exceptAll(driver).count()
        assert differ == 0, (table, driver.exceptAll(by_spark).limit(3).collect())
        compared |= {spec.column(n).type for n in names}
    # every flat type of the corpus went through the driver's typing at least once
    assert {"int", "bigint", "decimal", "double", "float", "datetime", "timestamp",
            "date", "varchar", "blob", "bit", "year"} <= compared, compared
    assert refused <= {"date", "datetime", "timestamp"}, refused
