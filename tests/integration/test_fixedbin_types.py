"""MariaDB's UUID, INET6 and INET4 columns, written by the real test server (10.11), decoded
with a schema history to the server's own text (SELECT CAST(col AS CHAR)) in JSON lines and
text output, by the C writers and by their pure-Python twins; without a history they stay
base64 binary, as the binlog names them BINARY(16)/(4) even with FULL row metadata.

One table is in the history from information_schema (it exists at the bootstrap), the other
from the DDL parser (created after it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from binlake.cli.program import main
from binlake.schema import bootstrap as bs
from binlake.schema.history import file_seq
from binlake.schema.tracker import SchemaTracker

pytestmark = pytest.mark.integration

VALUES = [
    "(1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '::1', '192.0.2.1')",
    "(2, '00000000-0000-0000-0000-000000000000', '::', '0.0.0.0')",
    "(3, NULL, NULL, NULL)",
    "(4, '6ccd780c-baba-1026-9564-5b8c656024d0', '::ffff:192.0.2.128', '255.255.255.255')",
    "(5, 'FFFFFFFF-FFFF-7FFF-BFFF-FFFFFFFFFFFF', '2001:db8::ff00:42:8329', '10.0.0.0')",
    "(6, '12345678-1234-0234-0234-123456789abc', '1:0:2:0:3:0:4:0', '1.2.3.4')",
    "(7, NULL, '::1.2.3.4', NULL)",
    "(8, NULL, '1::', NULL)",
]
SELECT_TEXT = ("SELECT id, CAST(u AS CHAR), CAST(i6 AS CHAR), CAST(i4 AS CHAR) FROM fbt.{t} "
               "ORDER BY id")


def _texts(server, table: str) -> dict[int, dict[str, str | None]]:
    return {int(r[0]): {"u": r[1], "i6": r[2], "i4": r[3]}
            for r in server.sql(SELECT_TEXT.format(t=table), database=None)}


@pytest.fixture(scope="module")
def written(mariadb, tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not Path(mariadb.binlog_dir).is_dir():
        pytest.skip("needs the server's binlog files on this machine")
    ddl = "(id INT PRIMARY KEY, u UUID, i6 INET6, i4 INET4)"
    mariadb.sql("DROP DATABASE IF EXISTS fbt", "CREATE DATABASE fbt",
                f"CREATE TABLE fbt.known {ddl}", "FLUSH BINARY LOGS", database=None)
    conn = mariadb.connect(database=None)
    try:
        start = bs.binlog_position(conn.cursor())
    finally:
        conn.close()
    history = tmp_path_factory.mktemp("fbt") / "schema_history.json"
    SchemaTracker.from_server(lambda: mariadb.connect(database=None),
                              tables=lambda s, t: s == "fbt").save(history)
    rows = ", ".join(VALUES)
    mariadb.sql(f"CREATE TABLE fbt.t {ddl}", f"INSERT INTO fbt.t VALUES {rows}",
                f"INSERT INTO fbt.known VALUES {rows}", database=None)
    inserted = {"t": _texts(mariadb, "t"), "known": _texts(mariadb, "known")}
    mariadb.sql("UPDATE fbt.t SET u = '00000000-0000-1000-8000-000000000000', i6 = NULL, "
                "i4 = '1.0.0.0' WHERE id = 3", "DELETE FROM fbt.t WHERE id = 1",
                "FLUSH BINARY LOGS", database=None)
    files = sorted((str(p) for p in Path(mariadb.binlog_dir).glob("mariadb-bin.[0-9]*")
                    if file_seq(p.name) >= file_seq(start.file)),
                   key=lambda n: file_seq(Path(n).name))
    return {"history": str(history), "files": files, "inserted": inserted,
            "final": _texts(mariadb, "t")}


def _decode_args(w: dict, *extra: str) -> list[str]:
    return ["decode", "--schema-history", w["history"], "--tables", "fbt.*", *extra, *w["files"]]


def _decode(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output[-2000:]
    return res.output


def _pure_python(args: list[str]) -> str:
    run = subprocess.run([sys.executable, "-m", "binlake.cli", *args], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "BINLAKE_PURE_PYTHON": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_jsonl_has_the_servers_text(written: dict) -> None:
    out = _decode(_decode_args(written))
    recs = [json.loads(x) for x in out.splitlines()]
    for table in ("t", "known"):
        inserts = {r["after"]["id"]: {k: r["after"][k] for k in ("u", "i6", "i4")}
                   for r in recs if r["op"] == "insert" and r["table"] == table}
        assert inserts == written["inserted"][table]
    update, = [r for r in recs if r["op"] == "update"]
    assert update["before"]["u"] is None and update["before"]["i6"] is None
    assert {k: update["after"][k] for k in ("u", "i6", "i4")} == written["final"][3]
    delete, = [r for r in recs if r["op"] == "delete"]
    assert delete["before"]["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert written["inserted"]["t"][5]["u"] == "ffffffff-ffff-7fff-bfff-ffffffffffff"
    assert written["inserted"]["t"][6]["i6"] == "1::2:0:3:0:4:0"
    # the pure-Python decoder and writer print the same bytes
    assert _pure_python(_decode_args(written)) == out


def test_text_output_has_the_servers_text(written: dict) -> None:
    out = _decode(_decode_args(written, "--output", "text"))
    assert '###     u="a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"\n' in out
    assert '###     i6="::ffff:192.0.2.128"\n' in out and '###     i4="192.0.2.1"\n' in out
    assert '###     i6=null\n' in out
    assert _pure_python(_decode_args(written, "--output", "text")) == out


def test_without_a_history_the_values_stay_binary(written: dict) -> None:
    out = _decode(["decode", "--tables", "fbt.t", *written["files"]])
    first = json.loads(out.splitlines()[0])
    assert first["after"]["u"] == "oO68mZwLTvi7bWu5vTgKEQ=="  # base64 of the 16 bytes
    assert first["after"]["i4"] == "wAACAQ=="
