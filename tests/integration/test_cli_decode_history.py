"""`binlake decode --schema-history`: MINIMAL-metadata binlog files decoded with the names,
types and keys of each row's own time, across ADD/RENAME/DROP COLUMN."""
from __future__ import annotations

import json
from pathlib import Path

import pymysql
import pytest
from click.testing import CliRunner

from binlake.cli.program import main
from binlake.schema import bootstrap as bs
from binlake.schema.history import file_seq
from binlake.schema.tracker import SchemaTracker


@pytest.fixture(scope="module")
def minimal_server(mariadb_factory):
    srv = mariadb_factory(binlog_row_metadata="MINIMAL")
    if not Path(srv.binlog_dir).is_dir():
        pytest.skip("needs the server's binlog files on this machine")
    return srv


def _run(server, *statements: str) -> None:
    conn = server.connect(database=None, client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    try:
        with conn.cursor() as cur:
            for st in statements:
                cur.execute(st)
    finally:
        conn.close()


def _decode(*args: str) -> list[dict]:
    res = CliRunner().invoke(main, ["decode", *args])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.output.splitlines() if line.strip()]


def test_decode_with_schema_history_follows_ddl(minimal_server, tmp_path: Path) -> None:
    srv = minimal_server
    _run(srv, "DROP DATABASE IF EXISTS dh", "CREATE DATABASE dh",
         "CREATE TABLE dh.t (id INT UNSIGNED PRIMARY KEY, name VARCHAR(20), gone INT)",
         "FLUSH BINARY LOGS")
    conn = srv.connect(database=None)
    try:
        start = bs.binlog_position(conn.cursor())
    finally:
        conn.close()
    history = tmp_path / "schema_history.json"
    SchemaTracker.from_server(lambda: srv.connect(database=None),
                              tables=lambda s, t: s == "dh").save(history)
    _run(srv, "INSERT INTO dh.t VALUES (4294967295, 'a', 1)",
         "ALTER TABLE dh.t ADD COLUMN price DECIMAL(6,2) DEFAULT 1.50, RENAME COLUMN name TO label, "
         "DROP COLUMN gone",
         "INSERT INTO dh.t VALUES (2, 'b', 9.99)",
         "UPDATE dh.t SET label = 'c' WHERE id = 2",
         "FLUSH BINARY LOGS")
    files = sorted((str(p) for p in Path(srv.binlog_dir).glob("mariadb-bin.[0-9]*")
                    if file_seq(p.name) >= file_seq(start.file)), key=lambda n: file_seq(Path(n).name))

    recs = [r for r in _decode("--schema-history", str(history), "--tables", "dh.*", *files)]
    rows = [r for r in recs if r["op"] in ("insert", "update")]
    assert rows[0]["after"] == {"id": 4294967295, "name": "a", "gone": 1}  # unsigned, old names
    assert rows[1]["after"] == {"id": 2, "label": "b", "price": "9.99"}
    assert rows[2]["before"]["label"] == "b" and rows[2]["after"]["label"] == "c"
    assert [r["primary_key"] for r in rows] == [["id"]] * 3
    assert any(r["op"] == "ddl" for r in recs)  # the ALTER is a record too

    # Without the history, MINIMAL metadata has no column names.
    bare = [r for r in _decode("--tables", "dh.*", *files) if r["op"] == "insert"]
    assert set(bare[0]["after"]) == {"@1", "@2", "@3"}
    assert set(bare[1]["after"]) == {"@1", "@2", "@3"}


def test_decode_refuses_a_history_that_does_not_fit(minimal_server, tmp_path: Path) -> None:
    srv = minimal_server
    _run(srv, "DROP DATABASE IF EXISTS dh2", "CREATE DATABASE dh2",
         "CREATE TABLE dh2.t (id INT PRIMARY KEY)", "FLUSH BINARY LOGS")
    history = tmp_path / "h.json"
    SchemaTracker.from_server(lambda: srv.connect(database=None),
                              tables=lambda s, t: s == "dh2").save(history)
    # Changed behind the binlog's back: the history no longer matches the TABLE_MAP.
    _run(srv, "SET sql_log_bin = 0; ALTER TABLE dh2.t ADD COLUMN x INT; SET sql_log_bin = 1",
         "INSERT INTO dh2.t VALUES (1, 2)", "FLUSH BINARY LOGS")
    files = sorted((str(p) for p in Path(srv.binlog_dir).glob("mariadb-bin.[0-9]*")),
                   key=lambda n: file_seq(Path(n).name))
    res = CliRunner().invoke(main, ["decode", "--schema-history", str(history), "--tables",
                                    "dh2.*", *files[-2:]])
    assert res.exit_code != 0
    assert "does not match the schema history" in res.output


def test_stream_from_a_position_with_minimal_metadata_names_columns(minimal_server) -> None:
    """No schema history and MINIMAL metadata: the DDL in the range (here the CREATE after
    a DROP DATABASE) gives the names; no warning, no @1."""
    srv = minimal_server
    _run(srv, "DROP DATABASE IF EXISTS dh3", "CREATE DATABASE dh3",
         "CREATE TABLE dh3.t (id INT PRIMARY KEY)", "INSERT INTO dh3.t VALUES (1)")
    conn = srv.connect(database=None)
    try:
        start = bs.binlog_position(conn.cursor())
    finally:
        conn.close()
    url = f"mysql://{srv.user}:{srv.password}@127.0.0.1:{srv.port}"
    res = CliRunner().invoke(main, ["stream", url, "--start", f"{start.file}:4", "--until-end",
                                    "--tables", "dh3.*"])
    assert res.exit_code == 0, res.output
    assert res.stderr == ""
    recs = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["after"] for r in recs if r["op"] == "insert"] == [{"id": 1}]
