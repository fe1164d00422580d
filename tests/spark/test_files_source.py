"""spark.read.format("binlake") returns exactly the change records binlake decodes."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.cdc.changes import iter_changes, table_filter
from binlake.binlog.files import read_files

pytestmark = pytest.mark.spark

GENERATED = "generated-mariadb-10.11"


def expected_records(files: list[Path], tables: str | None = None, **decoder: Any) -> list[Any]:
    """One decoder per file, as the source has (a partition per file), and one tracker over
    them all: an XA transaction prepared in one file and committed in a later one comes out
    at its commit, as the source finds and re-reads it."""
    return list(iter_changes(read_files(files, **decoder), table_filter(tables)))


def collect_in_order(df: Any) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.orderBy("file", "seq").collect()]


def test_corpus_files(spark: Any, corpus_dir: Path, cdc_row_check: Any) -> None:
    folder = corpus_dir / GENERATED
    files = sorted(p for p in folder.glob("mariadb-10.11.19-*.000001") if "encrypted" not in p.name)
    df = spark.read.format("binlake").load([str(f) for f in files])
    assert df.rdd.getNumPartitions() == len(files)
    rows = collect_in_order(df)
    records = sorted(expected_records(files), key=lambda r: (r.file, r.position))
    assert len(rows) == len(records) > 250
    for row, rec in zip(rows, records):
        cdc_row_check(row, rec)


def test_encrypted_file_with_key(spark: Any, corpus_dir: Path, cdc_row_check: Any) -> None:
    from binlake.binlog.encryption import load_key_file

    folder = corpus_dir / GENERATED
    path = folder / "mariadb-10.11.19-encrypted-row-full-crc32.000001"
    key_file = folder / "binlog-key.txt"
    df = (spark.read.format("binlake").option("keyFile", str(key_file))
          .option("tables", "*.t_dec,*.t_time").load(str(path)))
    rows = collect_in_order(df)
    keys = load_key_file(key_file.read_text())
    records = expected_records([path], "*.t_dec,*.t_time", keys=keys)
    assert len(rows) == len(records) > 0
    for row, rec in zip(rows, records):
        cdc_row_check(row, rec)


def test_live_server_binlogs(spark: Any, mariadb: Any, cdc_row_check: Any) -> None:
    """A real MariaDB's binlog folder, across a rotation, filtered to one table."""
    mariadb.sql(
        "DROP TABLE IF EXISTS spk_src",
        "CREATE TABLE spk_src (id INT PRIMARY KEY, v VARCHAR(20), amount DECIMAL(8,2))",
        "INSERT INTO spk_src VALUES (1,'a',1.10),(2,'b',2.20),(3,'c',3.30)",
        "FLUSH BINARY LOGS",
        "UPDATE spk_src SET v = CONCAT(v, '!'), amount = amount * 2",
        "BEGIN", "DELETE FROM spk_src WHERE id = 2", "INSERT INTO spk_src VALUES (4,'d',NULL)",
        "COMMIT",
        "TRUNCATE TABLE spk_src",
        "INSERT INTO spk_src VALUES (5,'e',5.55)",
        # An XA group numbers its records over every table: the left-out table's rows are
        # counted by the filtered decode, so row 3 here is row 3 as an unfiltered read has it.
        "DROP TABLE IF EXISTS spk_other", "CREATE TABLE spk_other (id INT PRIMARY KEY)",
        "XA START 'spk-xa'", "INSERT INTO spk_other VALUES (1),(2),(3)",
        "INSERT INTO spk_src VALUES (6,'f',6.60)", "XA END 'spk-xa'", "XA PREPARE 'spk-xa'",
        "XA COMMIT 'spk-xa'",
    )
    folder = Path(mariadb.binlog_dir)
    files = sorted(p for p in folder.iterdir() if p.suffix[1:].isdigit())
    tables = "binlake_test.spk_src"
    df = spark.read.format("binlake").option("tables", tables).load(str(folder))
    assert df.rdd.getNumPartitions() == len(files) >= 2
    rows = collect_in_order(df)
    records = sorted(expected_records(files, tables), key=lambda r: (r.file, r.position))
    ops = [r["op"] for r in rows]
    assert ops[-11:] == ["insert"] * 3 + ["update"] * 3 + ["delete", "insert", "truncate", "insert",
                                                         "insert"]
    assert rows[-1]["row"] == 3  # after spk_other's three
    assert len(rows) == len(records)
    for row, rec in zip(rows, records):
        cdc_row_check(row, rec)


def test_files_read_in_parts(spark: Any, corpus_dir: Path, cdc_row_check: Any) -> None:
    """splitBytes cuts files at GTID events: more partitions, the same records; the XA
    transaction prepared in one part of its file and committed in the next is found there."""
    from binlake.binlog.files import split_points

    folder = corpus_dir / GENERATED
    files = sorted(p for p in folder.glob("mariadb-10.11.19-*.000001")
                   if "encrypted" not in p.name and p.stat().st_size < 1 << 20)
    xa = folder / "mariadb-10.11.19-gtid-domains-xa.000001"
    assert xa in files and split_points(xa, 700) == [701, 1741]  # PREPARE 1325, COMMIT 1741
    df = spark.read.format("binlake").option("splitBytes", 700).load([str(f) for f in files])
    assert df.rdd.getNumPartitions() == sum(len(split_points(f, 700)) + 1 for f in files) > 60
    rows = collect_in_order(df)
    records = sorted(expected_records(files), key=lambda r: (r.file, r.position))
    assert len(rows) == len(records) > 250
    assert any(r.file == xa.name and r.pos == 1786 for r in records)  # at the XA COMMIT
    for row, rec in zip(rows, records):
        cdc_row_check(row, rec)
