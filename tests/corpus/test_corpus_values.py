"""Values are checked, not just counted: the corpus' own expectations (generated-mariadb-10.11
workload.sql, rust_mysql_common's assertions) against what binlake decodes."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

from binlake.binlog.encryption import load_key_file
from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_events
from binlake.binlog.values import ABSENT, Geometry, InvalidTemporal, MySQLTime

GEN = "generated-mariadb-10.11"
UTC = dt.timezone.utc


def changes(path: Path, **kw):
    return list(iter_changes(read_events(path, **kw)))


def first_inserts(path: Path, **kw) -> dict[str, list[dict]]:
    """The INSERTs of the scenario, per table, in binlog order."""
    out: dict[str, list[dict]] = {}
    for c in changes(path, **kw):
        if c.op == "insert":
            out.setdefault(c.table, []).append(c.after)
    return out


@pytest.fixture(scope="module")
def full(corpus_dir: Path) -> dict[str, list[dict]]:
    return first_inserts(corpus_dir / GEN / "mariadb-10.11.19-row-full-metafull-crc32.000001")


def test_integers_bits_year(full) -> None:
    r1, r2, r3 = full["t_int"][:3]
    assert r1 == {"id": 1, "ti": -128, "tiu": 255, "si": -32768, "siu": 65535, "mi": -8388608,
                  "miu": 16777215, "i": -2147483648, "iu": 4294967295,
                  "bi": -9223372036854775808, "biu": 18446744073709551615, "b1": 1,
                  "b13": 0b1010101010101, "b64": 2**64 - 1, "y": 1901, "bo": 1}
    assert r2["ti"] == 127 and r2["bi"] == 9223372036854775807 and r2["y"] == 2155
    assert all(v is None for k, v in r3.items() if k != "id")


def test_decimals_are_exact_with_scale(full) -> None:
    r1, r2 = full["t_dec"][:2]
    assert str(r1["d1"]) == "12345678.90"
    assert r1["d2"] == Decimal("-12345678901234567890123456789012345.123456789012345678901234567890")
    assert str(r1["d4"]) == "1234567890.0123456789"
    assert str(r2["d1"]) == "-0.01" and str(r2["d4"]) == "0E-10"
    assert r2["dbl"] == 1.7976931348623157e308


def test_temporals_with_fsp_and_zero_dates(full) -> None:
    r1, r2 = full["t_time"][:2]
    assert r1["d"] == dt.date(2024, 2, 29)
    assert r1["t0"] == MySQLTime(True, 838, 59, 59, 0)
    assert r1["t3"] == MySQLTime(False, 12, 34, 56, 789000)
    assert r1["t6"] == MySQLTime(True, 0, 0, 0, 1)
    assert r1["dt0"] == dt.datetime(1000, 1, 1)
    assert r1["dt6"] == dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert r1["ts0"] == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert r1["ts3"] == dt.datetime(2038, 1, 19, 3, 14, 7, 999000, tzinfo=UTC)
    assert r2["d"] == InvalidTemporal("0000-00-00")
    assert r2["dt0"] == InvalidTemporal("0000-00-00 00:00:00")
    assert r2["ts0"] == InvalidTemporal("0000-00-00 00:00:00")
    assert r2["t3"] == MySQLTime(False, 838, 59, 59, 999000)


def test_strings_by_charset(full) -> None:
    r1, r2 = full["t_str"][:2]
    assert r1["c_u8"] == "héllo" and r1["c_big"] == "é" * 80
    assert r1["c_l1"] == "café" and r1["v_l1"] == "naïve £"
    assert r1["bn"] == b"\x00\x01\x02\x03\x04\x00\x00\x00"  # BINARY(8) keeps its zero padding
    assert r1["vbn"] == bytes.fromhex("DEADBEEF00FF")
    assert r1["u3"] == "ǅx" and r1["ucs"] == "Ω" and r1["sj"] == "ｶﾀｶﾅ"
    assert r2["c_u8"] == "" and r2["vbn"] == b""  # empty, not NULL


def test_enum_set_labels(full) -> None:
    r1, r2 = full["t_enum"][:2]
    assert r1 == {"id": 1, "e": "a", "e_nul": "y", "s": "x,z", "s64": "m0,m31,m32,m63", "e_l1": "ü"}
    assert r2["s"] == "" and r2["e_nul"] is None and r2["e_l1"] == "é"


def test_geometry_is_srid_plus_wkb(full) -> None:
    g = full["t_geo"][0]["p"]
    assert isinstance(g, Geometry) and g.srid == 0
    assert g.wkb[:5] == b"\x01\x01\x00\x00\x00"  # little-endian WKB point


def test_variants_agree(corpus_dir: Path, full) -> None:
    """The same workload through NONE checksums, compression and encryption gives the same rows."""
    key = load_key_file((corpus_dir / GEN / "binlog-key.txt").read_text())
    for name, kw in [("row-full-metafull-nochecksum", {}), ("row-compressed-crc32", {}),
                     ("encrypted-row-full-crc32", {"keys": key})]:
        other = first_inserts(corpus_dir / GEN / f"mariadb-10.11.19-{name}.000001", **kw)
        for table in ("t_int", "t_dec", "t_time", "t_enum"):
            assert other[table][:3] == full[table][:3], (name, table)


def test_minimal_and_noblob_images_mark_absent(corpus_dir: Path) -> None:
    minimal = changes(corpus_dir / GEN / "mariadb-10.11.19-row-minimal-metaminimal-crc32.000001")
    upd = [c for c in minimal if c.op == "update" and c.table == "t_int"]
    assert upd, "the minimal scenario updates t_int"
    before = upd[0].before
    assert any(v is ABSENT for v in before.values())
    noblob = changes(corpus_dir / GEN / "mariadb-10.11.19-row-noblob-metafull-crc32.000001")
    blob_updates = [c for c in noblob if c.op == "update" and c.table == "t_blob"]
    assert blob_updates and any(v is ABSENT for v in blob_updates[0].before.values())


def test_rust_mysql_common_expectations(corpus_dir: Path) -> None:
    rmc = corpus_dir / "rust_mysql_common"
    (t,) = changes(rmc / "time_issue.000001")
    assert list(t.after.values()) == [MySQLTime(True, 21 * 24 + 3, 48, 27, 0)]
    bits = changes(rmc / "mysql_type_bit.000001")
    assert [list(c.after.values()) for c in bits] == [[0b100, "foo", 0b100000]]  # b is TEXT (utf8mb4)
    (m,) = changes(rmc / "minimal_row_metadata.000001")
    assert m.after["@5"] == 3230202323 and m.after["@2"] is ABSENT
    vec = [c for c in changes(rmc / "vector.binlog") if c.table == "foo"][:2]
    assert vec[0].after["vector_column"] == pytest.approx([1.1, 2.2, 3.3], rel=1e-6)
    assert vec[1].after["vector_column"] == [1.0, -1.0, 0.0]
    ess = changes(rmc / "mysql-enum-string-set.000001")
    ins = ess[0].after
    assert list(ins.values())[4] == "0123456789"
    upd = ess[1]
    assert list(upd.after.values())[:2] == ["field1", "field_2"]
    maria = changes(rmc / "mariadb-bin.000001")
    assert list(maria[0].after) == ["id", "topic", "event_type", "event", "created"]
    assert maria[0].schema == "toddy_test" and maria[0].table == "outbox"
    assert maria[0].primary_key == ("id",)


def test_table_map_metadata(corpus_dir: Path) -> None:
    from binlake.binlog.table_map import TableMapEvent

    tms = {e.table: e for e in read_events(corpus_dir / "rust_mysql_common/vector.binlog")
           if isinstance(e, TableMapEvent)}
    assert [c.vector_dimensions for c in tms["foo"].columns if c.vector_dimensions] == [3]
    assert [c.vector_dimensions for c in tms["bar"].columns if c.vector_dimensions] == [2, 4]


def test_statement_logged_dml_is_never_silent(corpus_dir: Path) -> None:
    recs = changes(corpus_dir / GEN / "mariadb-10.11.19-statement-mixed.000001")
    stmts = [c for c in recs if c.op == "statement"]
    assert [c.statement.split()[0].upper() for c in stmts][:5] == ["INSERT", "INSERT", "INSERT", "INSERT", "LOAD"]
    assert {(c.schema, c.table) for c in stmts} == {("corpus", "t_auto")}
    assert any(c.op == "insert" for c in recs)  # the row-logged part of the mixed binlog
