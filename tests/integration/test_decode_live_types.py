"""Every column type, written into the real MariaDB and read back from its binlog files:
the decoded values must equal what the server itself returns for the same rows."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_files
from binlake.binlog.values import ABSENT, InvalidTemporal, MySQLTime

DDL = """
CREATE TABLE types_all (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  f FLOAT, d DOUBLE, d1 DECIMAL(10,2), d65 DECIMAL(65,30), d0 DECIMAL(5,0), du DECIMAL(20,4) UNSIGNED,
  bt BIT(17), y YEAR, dte DATE, t0 TIME, t6 TIME(6), t2 TIME(2),
  dt0 DATETIME, dt3 DATETIME(3), dt6 DATETIME(6), ts0 TIMESTAMP NULL, ts4 TIMESTAMP(4) NULL,
  c CHAR(5), vc VARCHAR(300), vl VARCHAR(20) CHARACTER SET latin1, bn BINARY(4), vb VARBINARY(10),
  tx TEXT, mt MEDIUMTEXT, bl BLOB, lb LONGBLOB, j JSON,
  e ENUM('red','green','blue'), s SET('a','b','c','d'), g POINT
) ENGINE=InnoDB
"""

ROWS = [
    "(1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, "
    "-9223372036854775808, 18446744073709551615, -1.5, 2.2250738585072014e-308, '-0.00', "
    "'99999999999999999999999999999999999.999999999999999999999999999999', '-99999', "
    "'1234567890123456.7890', b'10101010101010101', 1901, '1000-01-01', '-838:59:59', "
    "'838:59:59.999999', '-00:00:00.01', '1000-01-01 00:00:00', '2024-02-29 12:34:56.789', "
    "'9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', '2038-01-19 03:14:07.9999', "
    "'abc', CONCAT('😀 ', REPEAT('x', 290)), 'Ünïcödé', 0x0102, 0x00FF00, '', "
    "REPEAT('m', 70000), '', 0x00, "
    "'{\"a\": [1, 2.5, \"x\", null, true], \"b\": {\"c\": 18446744073709551615}}', "
    "'green', 'a,d', ST_GeomFromText('POINT(1 2)'))",
    "(2, " + ", ".join(["NULL"] * 40) + ")",
    "(3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0, '0.00', '0', '0', '0', 0, 0, '0000-00-00', "
    "'00:00:00', '00:00:00', '00:00:00', '0000-00-00 00:00:00', '2000-00-10 00:00:00', "
    "'2000-01-01 00:00:00.000001', '0000-00-00 00:00:00', '2000-01-01 00:00:00.0001', "
    "'', '', '', '', '', '', '', '', '', '[]', '', '', NULL)",
]


def _normalize_server(col: str, value, ctype: str):
    """What pymysql returns, mapped to binlake's value types."""
    if value is None:
        return None
    if col == "bt":
        return int.from_bytes(value, "big")
    if col.startswith("ts") and isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.timezone.utc)  # session time_zone is +00:00
    if isinstance(value, dt.timedelta):
        neg = value < dt.timedelta(0)
        v = -value if neg else value
        secs = v.days * 86400 + v.seconds
        return MySQLTime(neg, secs // 3600, secs // 60 % 60, secs % 60, v.microseconds)
    return value


@pytest.fixture(scope="module")
def written(mariadb):
    mariadb.sql("DROP TABLE IF EXISTS types_all", DDL, "SET time_zone = '+00:00'")
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00', sql_mode = ''")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("INSERT INTO types_all VALUES " + ",".join(ROWS))
        cur.execute("UPDATE types_all SET vc = 'changed', j = JSON_SET(j, '$.z', 1) WHERE id = 1")
        cur.execute("DELETE FROM types_all WHERE id = 2")
        cur.execute("SELECT *, ST_AsBinary(g) AS g_wkb FROM types_all ORDER BY id")
        cols = [d[0] for d in cur.description]
        server_rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        cur.execute("FLUSH BINARY LOGS")
    conn.close()
    files = sorted(mariadb.binlog_dir.glob("mariadb-bin.[0-9]*"))
    records = [c for c in iter_changes(read_files(files)) if c.table == "types_all"]
    return records, server_rows


def test_inserts_equal_server_values(written) -> None:
    records, server_rows = written
    inserts = {c.after["id"]: c.after for c in records if c.op == "insert"}
    assert sorted(inserts) == [1, 2, 3]
    final = {r["id"]: r for r in server_rows}
    ours = inserts[3]
    for col, value in final[3].items():
        if col in ("g_wkb",):
            continue
        expect = _normalize_server(col, value, "")
        got = ours[col]
        if isinstance(got, InvalidTemporal):
            assert str(value) in (got.text, "None") or value is None, (col, value, got)
            continue
        if col == "j":
            assert json.loads(got) == json.loads(value)
            continue
        if col == "f":
            assert got == pytest.approx(float(value), abs=1e-6)
            continue
        assert got == expect, col
    assert all(v is None for k, v in inserts[2].items() if k != "id")


def test_edge_values_row1(written) -> None:
    records, server_rows = written
    r = next(c.after for c in records if c.op == "insert" and c.after["id"] == 1)
    s = next(x for x in server_rows if x["id"] == 1)
    assert r["biu"] == 18446744073709551615 and r["bi"] == -9223372036854775808
    assert r["d65"] == Decimal("99999999999999999999999999999999999.999999999999999999999999999999")
    assert str(r["d1"]) == "0.00"  # negative zero decimal is zero with its scale
    assert r["bt"] == 0b10101010101010101
    assert r["t0"] == MySQLTime(True, 838, 59, 59, 0)
    assert r["t2"] == MySQLTime(True, 0, 0, 0, 10000)
    assert r["dt3"] == dt.datetime(2024, 2, 29, 12, 34, 56, 789000)
    assert r["ts4"] == dt.datetime(2038, 1, 19, 3, 14, 7, 999900, tzinfo=dt.timezone.utc)
    assert r["vc"].startswith("😀 ") and len(r["vc"]) == 292  # 4-byte UTF-8 survives
    assert r["vl"] == "Ünïcödé"
    assert r["bn"] == b"\x01\x02\x00\x00" == s["bn"]
    assert r["tx"] == "" and r["mt"] == "m" * 70000
    assert r["e"] == "green" and r["s"] == "a,d"
    assert r["g"].wkb == s["g_wkb"]
    assert json.loads(r["j"]) == json.loads(s["j"]) or "z" in json.loads(s["j"])


def test_update_and_delete_images(written) -> None:
    records, _ = written
    upd = next(c for c in records if c.op == "update")
    assert upd.before["vc"].startswith("😀") and upd.after["vc"] == "changed"
    assert json.loads(upd.after["j"])["z"] == 1
    dele = next(c for c in records if c.op == "delete")
    assert dele.before["id"] == 2 and dele.after is None
    assert all(v is not ABSENT for v in dele.before.values())  # FULL row image
    # positions are exact and increasing
    pos = [c.position for c in records]
    assert pos == sorted(pos)


def test_mariadb_signedness_bitmap_counts_year(mariadb) -> None:
    """MariaDB gives YEAR a bit in the signedness metadata; flags after it must not shift."""
    mariadb.sql("DROP TABLE IF EXISTS year_sign", "CREATE TABLE year_sign (y YEAR, a INT UNSIGNED, b INT)",
                "FLUSH BINARY LOGS")
    mariadb.sql("INSERT INTO year_sign VALUES (2024, 4294967295, -1)", "FLUSH BINARY LOGS")
    files = sorted(mariadb.binlog_dir.glob("mariadb-bin.[0-9]*"))
    (rec,) = [c for c in iter_changes(read_files(files)) if c.table == "year_sign"]
    assert rec.after == {"y": 2024, "a": 4294967295, "b": -1}
