"""`binlake stream` with binlog_row_metadata=MINIMAL: names and types stay right across ALTERs,
and the schema history saved beside the checkpoint carries them across restarts."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from binlake.cli.program import main


def _stream(url: str, ckpt: Path, out: Path) -> None:
    res = CliRunner().invoke(main, ["stream", url, "--checkpoint", str(ckpt), "--out", str(out),
                                    "--until-end", "--heartbeat", "0.5"], catch_exceptions=False)
    assert res.exit_code == 0, res.output


def test_minimal_metadata_names_across_alter_and_restart(mariadb_factory, tmp_path: Path) -> None:
    srv = mariadb_factory(binlog_row_metadata="MINIMAL")
    srv.sql("CREATE TABLE s1 (id INT PRIMARY KEY, a INT UNSIGNED, b VARCHAR(10))")
    ckpt, out = tmp_path / "ckpt.json", tmp_path / "out.jsonl"
    _stream(srv.url, ckpt, out)  # bootstraps the schema at the current end, writes nothing
    assert (tmp_path / "ckpt.json.schema.json").exists() or any(tmp_path.glob("*.schema.json"))
    srv.sql("INSERT INTO s1 VALUES (1, 4294967295, 'x')",
            "ALTER TABLE s1 ADD COLUMN c DATE FIRST, DROP COLUMN b",
            "INSERT INTO s1 VALUES ('2024-01-02', 2, 7)")
    _stream(srv.url, ckpt, out)  # resumes from the checkpoint with the saved history
    srv.sql("ALTER TABLE s1 RENAME COLUMN a TO a2", "UPDATE s1 SET a2 = 8 WHERE id = 2")
    _stream(srv.url, ckpt, out)
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    rows = [(r["op"], r.get("before"), r.get("after")) for r in recs if r["op"] != "ddl"]
    assert rows == [
        ("insert", None, {"id": 1, "a": 4294967295, "b": "x"}),
        ("insert", None, {"c": "2024-01-02", "id": 2, "a": 7}),
        ("update", {"c": "2024-01-02", "id": 2, "a2": 7}, {"c": "2024-01-02", "id": 2, "a2": 8}),
    ]
    ddl = [r for r in recs if r["op"] == "ddl"]
    assert [r["statement"].split()[0].upper() for r in ddl] == ["ALTER", "ALTER"]
