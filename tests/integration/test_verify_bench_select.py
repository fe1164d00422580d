"""The verify benchmark's full compare reads every column over JDBC; its SELECT list must
bring the types JDBC cannot carry as exact values (checked here through PyMySQL's text
protocol, the same the MariaDB Connector/J reads)."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from binlake.bench.verify_bench import select_list

pytestmark = pytest.mark.integration

DB = "verify_bench_sel"


def test_select_list_reads_exact_values(mariadb: Any) -> None:
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}", database=None)
    mariadb.sql("CREATE TABLE t (id BIGINT PRIMARY KEY, b BIT(13), y YEAR, f FLOAT, "
                "tm TIME(3), d65 DECIMAL(65,30), d18 DECIMAL(18,4), s VARCHAR(8))",
                "INSERT INTO t VALUES (1, b'1011000000100', 2024, 505465.0625, '-203:43:47.430', "
                "'12345678901234567890123456789012345.5', 1.5, 'x')", database=DB)
    cols = select_list(mariadb, "t", DB)
    assert cols.startswith("`id`, `b` + 0 AS `b`, `y` + 0 AS `y`, `f` + 0e0 AS `f`")
    (row,) = mariadb.sql(f"SELECT {cols} FROM t", database=DB)
    assert row[:4] == (1, 0b1011000000100, 2024, 505465.0625)  # FLOAT not printed with 6 digits
    assert row[4] == "-203:43:47.430"
    assert row[5] == "12345678901234567890123456789012345.500000000000000000000000000000"
    assert row[6] == Decimal("1.5000") and row[7] == "x"
