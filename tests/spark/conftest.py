"""One SparkSession (with Delta) for every Spark test: starting Spark costs 10-17 s here.

Tests under tests/spark carry `pytest.mark.spark`; they are skipped when pyspark is not
installed. The Delta jars come from the local cache (scripts/spark-jars.sh fills it; an empty
cache is filled on first use when Maven is installed).
"""
from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog.constants import ColumnType as T
from binlake.cdc.changes import ChangeRecord
from binlake.cdc.arrow import file_index

SPARK_DIR = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.spark)


if os.environ.get("CI") and importlib.util.find_spec("pyspark") is None:
    # Locally the Spark tests skip without the spark extra; CI installs it and must run them.
    raise pytest.UsageError("CI: pyspark is not installed, the Spark tests would be skipped; "
                            "run scripts/install-deps.sh")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    from binlake.spark.session import build_session

    session = build_session("binlake-tests", master="local[2]")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def cdc_row_check() -> Any:
    """`check(row, record)`: a CDC row (Arrow or Spark, as a dict) equals the change record."""
    return assert_row_matches


def expected_image(rec: ChangeRecord, which: str) -> dict[str, Any] | None:
    """The record's image as binlake's JSON output has it, JSON columns as their text."""
    out = rec.to_json_dict().get(which)
    if out is None or rec.table_map is None:
        return out
    for name, col in zip(rec.table_map.column_names, rec.table_map.columns):
        value = out.get(name)
        # MySQL JSON arrives as a document; MariaDB's JSON is LONGTEXT and already text.
        if value is not None and (col.type == T.JSON or (col.is_json and not isinstance(value, str))):
            out[name] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return out


def assert_row_matches(row: dict[str, Any], rec: ChangeRecord) -> None:
    assert (row["op"], row["schema"], row["table"]) == (rec.op, rec.schema, rec.table)
    assert (row["file"], row["pos"], row["end_pos"], row["row"], row["inner"]) == (
        rec.file, rec.pos, rec.end_pos, rec.row, rec.inner)
    assert row["gtid"] == rec.gtid
    assert row["ts"].timestamp() == rec.timestamp
    inner = -1 if rec.inner is None else rec.inner
    seq = row["seq"] if isinstance(row["seq"], dict) else row["seq"].asDict()
    assert seq == {"file_index": file_index(rec.file), "pos": rec.pos, "inner": inner,
                   "row": rec.row}
    for which in ("before", "after"):
        got = None if row[which] is None else json.loads(row[which])
        assert got == expected_image(rec, which), (which, rec.position)
    assert row["query"] == rec.statement


@pytest.fixture(scope="module")
def sspark(spark: Any) -> Any:
    """The session SparkSession with format("binlake") able to stream (files + stream)."""
    from binlake.spark.stream_source import BinlakeDataSource

    spark.dataSource.register(BinlakeDataSource)
    return spark


def binlog_position(mariadb: Any) -> tuple[int, int]:
    """The server's binlog end as (file index, position)."""
    file, pos = mariadb.binlog_end()
    return int(file.rsplit(".", 1)[1]), pos


@pytest.fixture(scope="session")
def binlog_batches() -> Any:
    """`binlog_batches(spark, mariadb, db, tables, setup, steps, after_step=None)`: a workload
    cut into one CDC batch per step (see `cut_binlog_batches`)."""
    return cut_binlog_batches


def cut_binlog_batches(spark: Any, mariadb: Any, db: str, tables: Sequence[str],
                   setup: Sequence[str], steps: Sequence[Sequence[str]],
                   after_step: Callable[[], None] | None = None) -> tuple[list[Any], dict[Any, Any]]:
    """Run `setup`, then each step of statements (calling `after_step` after each), and return
    one CDC DataFrame per step (the binlog read back with format("binlake"), cut at the
    step's end positions) and the tables' specs as the server has them at the end."""
    from pyspark.sql import functions as F

    from binlake.schema.spec import read_table_spec

    mariadb.sql(*setup)
    marks = [binlog_position(mariadb)]
    for step in steps:
        mariadb.sql(*step)
        marks.append(binlog_position(mariadb))
        if after_step is not None:
            after_step()
    df = (spark.read.format("binlake").option("tables", ",".join(f"{db}.{t}" for t in tables))
          .load(str(mariadb.binlog_dir)).persist())
    at = F.struct(F.col("seq.file_index"), F.col("seq.pos"))

    def mark(m: tuple[int, int]) -> Any:
        return F.struct(F.lit(m[0]).alias("file_index"), F.lit(m[1]).cast("bigint").alias("pos"))

    batches = [df.where((at >= mark(lo)) & (at < mark(hi))) for lo, hi in zip(marks, marks[1:])]
    conn = mariadb.connect()
    try:
        specs = {(db, t): read_table_spec(conn, db, t) for t in tables}
    finally:
        conn.close()
    return batches, specs
