"""`binlake stream --start`/`--gtid` at a past position, without a schema history and without
FULL row metadata (MariaDB's NO_LOG): names and UNSIGNED values from the DDL replayed for
tables created in the range, from information_schema for tables no DDL touched, and a
one-line refusal naming a table altered in the range but created before it."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from binlake.cli.program import main

MAX_U64 = 18446744073709551615


@pytest.fixture(scope="module")
def past_range(mariadb) -> Iterator[dict[str, Any]]:
    """A range written with binlog_row_metadata=NO_LOG (kept so while the module runs): ps_new
    created and altered in it, ps_old untouched by DDL, ps_alt created before and altered."""
    mariadb.sql("DROP TABLE IF EXISTS ps_new, ps_old, ps_alt",
                "CREATE TABLE ps_old (id INT PRIMARY KEY, v INT UNSIGNED, s VARCHAR(5))",
                "CREATE TABLE ps_alt (id INT PRIMARY KEY, a INT)")
    (was,), = mariadb.sql("SELECT @@global.binlog_row_metadata", database=None)
    mariadb.sql("SET GLOBAL binlog_row_metadata = NO_LOG", database=None)
    try:
        f, p, gtid = mariadb.binlog_end_gtid()
        mariadb.sql("CREATE TABLE ps_new (id INT PRIMARY KEY, big BIGINT UNSIGNED, s VARCHAR(5))",
                    f"INSERT INTO ps_new VALUES (1, {MAX_U64}, 'x')",
                    "ALTER TABLE ps_new ADD COLUMN e ENUM('a', 'b') AFTER id, DROP COLUMN s",
                    "INSERT INTO ps_new VALUES (2, 'b', 5)",
                    "INSERT INTO ps_old VALUES (1, 4294967295, 'y')",
                    "ALTER TABLE ps_alt ADD COLUMN b INT",
                    "INSERT INTO ps_alt VALUES (1, 2, 3)")
        yield {"url": mariadb.url, "start": f"{f}:{p}", "gtid": gtid}
    finally:
        mariadb.sql(f"SET GLOBAL binlog_row_metadata = {was}", database=None)


def _stream(*args: str) -> Any:
    return CliRunner().invoke(main, ["stream", *args, "--until-end", "--heartbeat", "0.5"])


def _rows(stdout: str) -> list[tuple[str, str, Any]]:
    recs = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [(r["table"], r["op"], r.get("after")) for r in recs if r["op"] != "ddl"]


EXPECTED = [
    ("ps_new", "insert", {"id": 1, "big": MAX_U64, "s": "x"}),
    ("ps_new", "insert", {"id": 2, "e": "b", "big": 5}),
    ("ps_old", "insert", {"id": 1, "v": 4294967295, "s": "y"}),
]


def test_past_file_start_names_created_and_untouched_tables(past_range) -> None:
    res = _stream(past_range["url"], "--start", past_range["start"],
                  "--tables", "binlake_test.ps_new,binlake_test.ps_old")
    assert res.exit_code == 0, res.output
    assert _rows(res.stdout) == EXPECTED
    assert "no schema history" not in res.stderr and "UNSIGNED" not in res.stderr


def test_past_gtid_start_names_created_and_untouched_tables(past_range) -> None:
    res = _stream(past_range["url"], "--gtid", past_range["gtid"],
                  "--tables", "binlake_test.ps_new,binlake_test.ps_old")
    assert res.exit_code == 0, res.output
    assert _rows(res.stdout) == EXPECTED


def test_table_altered_in_the_range_but_older_is_refused_by_name(past_range) -> None:
    res = _stream(past_range["url"], "--start", past_range["start"],
                  "--tables", "binlake_test.ps_*")
    assert res.exit_code != 0
    assert "Traceback" not in res.output
    # warned at the start, refused at its first row, after the rows before it went out
    assert "the shape at the start of binlake_test.ps_alt is unknown" in res.stderr
    assert _rows(res.stdout) == EXPECTED
    errors = [line for line in res.stderr.splitlines() if "ps_alt, rows after its TABLE_MAP at " in line]
    assert len(errors) == 1, res.stderr
    assert "ALTER TABLE ps_alt ADD COLUMN b INT at " in errors[0]
    assert "binlog_row_metadata=FULL" in res.stderr and "schema history" in res.stderr


def test_gtid_start_refusal_names_the_start(past_range) -> None:
    res = _stream(past_range["url"], "--gtid", past_range["gtid"], "--tables", "binlake_test.ps_alt")
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert f"stream's start (GTID {past_range['gtid']}) is unknown" in res.stderr


def test_the_history_built_for_a_past_start_is_kept_with_the_checkpoint(past_range, mariadb,
                                                                        tmp_path) -> None:
    f, p, _ = mariadb.binlog_end_gtid()  # (binlog_row_metadata is NO_LOG in this module)
    mariadb.sql("DROP TABLE IF EXISTS ps_ck", "CREATE TABLE ps_ck (id INT PRIMARY KEY, "
                "u BIGINT UNSIGNED)", f"INSERT INTO ps_ck VALUES (1, {MAX_U64})")
    ckpt, out = tmp_path / "c.json", tmp_path / "o.jsonl"
    args = ("--start", f"{f}:{p}", "--tables", "binlake_test.ps_ck",
            "--checkpoint", str(ckpt), "--out", str(out))
    assert _stream(past_range["url"], *args).exit_code == 0
    saved = json.loads((tmp_path / "c.json.schema.json").read_text())
    assert "ps_ck" in [t["name"] for t in saved["tables"]]
    mariadb.sql("ALTER TABLE ps_ck ADD COLUMN e ENUM('a', 'b') FIRST",
                f"INSERT INTO ps_ck VALUES ('b', 2, {MAX_U64 - 1})")
    res = _stream(past_range["url"], *args)  # resumes with the saved history
    assert res.exit_code == 0, res.output
    assert _rows(out.read_text()) == [("ps_ck", "insert", {"id": 1, "u": MAX_U64}),
                                      ("ps_ck", "insert", {"e": "b", "id": 2, "u": MAX_U64 - 1})]


def test_without_the_grants_for_the_history_the_remedy_is_named(past_range, mariadb,
                                                                caplog) -> None:
    """No SELECT: the history for a past start needs it; --no-schema-history streams without
    it, with @N names and the UNSIGNED warning. (BINLOG MONITOR: for --until-end.)"""
    mariadb.sql("DROP USER IF EXISTS 'ps_slave'@'%'",
                "CREATE USER 'ps_slave'@'%' IDENTIFIED BY 'pw'",
                "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'ps_slave'@'%'", database=None)
    url = past_range["url"].replace(past_range["url"].split("//")[1].split("@")[0], "ps_slave:pw")
    args = ("--start", past_range["start"], "--tables", "binlake_test.ps_new")
    res = _stream(url, *args)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "GRANT SELECT ON `binlake_test`.`ps_new`" in res.stderr
    assert "needed for the schema history (or pass --no-schema-history)" in res.stderr
    with caplog.at_level("WARNING", logger="binlake.replica"):
        res = _stream(url, *args, "--no-schema-history")
    assert res.exit_code == 0, res.output
    assert _rows(res.stdout)[0] == ("ps_new", "insert", {"@1": 1, "@2": -1, "@3": "x"})
    assert any("ps_new: the binlog does not say which integer columns are UNSIGNED (@1, @2"
               in r.getMessage() for r in caplog.records)


def test_an_online_schema_change_cut_over_keeps_the_table_named(past_range, mariadb) -> None:
    """gh-ost's swap in the range: the table's shape at the start is that of the old table it
    left behind (not streamed itself), and the new shape follows the RENAME."""
    mariadb.sql("DROP TABLE IF EXISTS sw_t, _sw_t_gho, _sw_t_del",
                "CREATE TABLE sw_t (id INT PRIMARY KEY, u INT UNSIGNED)")
    f, p, _ = mariadb.binlog_end_gtid()  # (binlog_row_metadata is NO_LOG in this module)
    mariadb.sql("INSERT INTO sw_t VALUES (1, 4294967295)",
                "CREATE TABLE _sw_t_gho LIKE sw_t", "ALTER TABLE _sw_t_gho ADD COLUMN w INT",
                "INSERT INTO _sw_t_gho SELECT id, u, 0 FROM sw_t",
                "RENAME TABLE sw_t TO _sw_t_del, _sw_t_gho TO sw_t",
                "INSERT INTO sw_t VALUES (2, 5, 6)")
    res = _stream(past_range["url"], "--start", f"{f}:{p}", "--tables", "binlake_test.sw_t")
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    assert _rows(res.stdout) == [("sw_t", "insert", {"id": 1, "u": 4294967295}),
                                 ("sw_t", "insert", {"id": 2, "u": 5, "w": 6})]


def test_a_table_map_without_rows_of_an_opaque_table_is_no_error(past_range, mariadb) -> None:
    """A trigger that may write an audit table makes the server log that table's TABLE_MAP
    with every INSERT, rows or none: only its rows are refused."""
    mariadb.sql("DROP TABLE IF EXISTS tg_src, tg_aud", "CREATE TABLE tg_aud (id INT)")
    f, p, _ = mariadb.binlog_end_gtid()  # (binlog_row_metadata is NO_LOG in this module)
    mariadb.sql("ALTER TABLE tg_aud ADD COLUMN at INT",
                "CREATE TABLE tg_src (id INT PRIMARY KEY, u INT UNSIGNED)",
                "CREATE TRIGGER tg_trg AFTER INSERT ON tg_src FOR EACH ROW BEGIN "
                "IF NEW.id < 0 THEN INSERT INTO tg_aud VALUES (NEW.id, 0); END IF; END",
                "INSERT INTO tg_src VALUES (1, 4294967295)")
    args = ("--start", f"{f}:{p}", "--tables", "binlake_test.tg_*")
    res = _stream(past_range["url"], *args)
    assert res.exit_code == 0, res.output
    assert _rows(res.stdout) == [("tg_src", "insert", {"id": 1, "u": 4294967295})]
    mariadb.sql("INSERT INTO tg_src VALUES (-1, 2)")
    res = _stream(past_range["url"], *args)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "binlake_test.tg_aud, rows after its TABLE_MAP at " in res.stderr
