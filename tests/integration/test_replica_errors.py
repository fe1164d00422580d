"""`binlake stream` failures against the shared MariaDB: each one a message that names what
went wrong and what to do, a non-zero exit, and a checkpoint that stays as it was."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from binlake.cli.program import main


def stream_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["stream", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output



@pytest.fixture
def old_checkpoint(mariadb, tmp_path: Path) -> Path:
    """A valid checkpoint at the server's current end, written by an earlier run."""
    f, p, g = mariadb.binlog_end_gtid()
    path = tmp_path / "ckpt.json"
    path.write_text(json.dumps({"version": 1, "position": {"file": f, "pos": p, "gtid_state": g},
                                "extra": {}}))
    return path


def unchanged(path: Path):
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    time.sleep(0.01)
    return lambda: (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_wrong_password(mariadb, tmp_path: Path, old_checkpoint: Path) -> None:
    bad = mariadb.url.replace(f":{mariadb.password}@", ":not-the-password@")
    ckpt = tmp_path / "new.json"
    code, text = stream_cli(bad, "--until-end", "--checkpoint", str(ckpt))
    assert code != 0
    assert "Access denied" in text and "check the credentials" in text and mariadb.user in text, text
    assert "not-the-password" not in text
    assert not ckpt.exists()
    same = unchanged(old_checkpoint)
    code, text = stream_cli(bad, "--checkpoint", str(old_checkpoint))
    assert code != 0 and "Access denied" in text and "left unchanged" in text
    assert same()


def test_unknown_host(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt.json"
    code, text = stream_cli("mysql://u:p@no-such-host.invalid:3306", "--until-end", "--checkpoint", str(ckpt))
    assert code != 0
    assert "cannot resolve host 'no-such-host.invalid'" in text and "check the host name" in text, text
    assert not ckpt.exists()


@pytest.mark.parametrize("gtid, words", [
    ("0-1-999999999", ["0-1-999999999", "not in the master's binlog"]),  # beyond the end
    ("7-1-5", ["7-1-5", "has no GTIDs of domain 7"]),  # a domain the primary never had
    ("0-1-1,7-1-5", ["0-1-1,7-1-5", "domain 7"]),
])
def test_gtid_the_primary_does_not_have(mariadb, tmp_path: Path, gtid: str, words: list[str]) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS re_gtid (id INT PRIMARY KEY)", "REPLACE INTO re_gtid VALUES (1)")
    ckpt = tmp_path / "ckpt.json"
    code, text = stream_cli(mariadb.url, "--gtid", gtid, "--until-end", "--checkpoint", str(ckpt))
    assert code != 0
    assert f"cannot stream from GTID position {gtid}" in text, text
    assert all(w in text for w in words), text
    assert ("start from a position it still has" in text or "name only domains the primary has" in text)
    assert "left unchanged" in text
    assert not ckpt.exists()


def test_position_beyond_the_end_of_a_file(mariadb, tmp_path: Path) -> None:
    f, p, _ = mariadb.binlog_end_gtid()
    ckpt = tmp_path / "ckpt.json"
    code, text = stream_cli(mariadb.url, "--start", f"{f}:{p + 1_000_000}", "--until-end",
                            "--checkpoint", str(ckpt))
    assert code != 0 and f"cannot stream from {f}:{p + 1_000_000}" in text, text
    assert not ckpt.exists()


@pytest.mark.parametrize("args, words", [
    (["--start", "mariadb-bin.000001:4", "--gtid", "0-1-1"], ["--start and --gtid exclude each other"]),
    (["--start", "mariadb-bin.000001:x"], ["invalid start position", "FILE:POS"]),
    (["--gtid", "0-1"], ["0-1"]),
    (["--gtid", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"], ["is MariaDB", "MySQL GTID set", "0-1-42"]),
])
def test_bad_start_positions(mariadb, tmp_path: Path, args: list[str], words: list[str]) -> None:
    ckpt = tmp_path / "ckpt.json"
    code, text = stream_cli(mariadb.url, *args, "--until-end", "--checkpoint", str(ckpt))
    assert code != 0
    assert all(w in text for w in words), text
    assert not ckpt.exists()


def test_corrupt_checkpoint_is_refused(mariadb, tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt.json"
    ckpt.write_text('{"version":1,"position":{"file":"mariadb-bin.000001","pos":"oops"}}')
    same = unchanged(ckpt)
    code, text = stream_cli(mariadb.url, "--until-end", "--checkpoint", str(ckpt))
    assert code != 0 and "pos must be a non-negative integer" in text, text
    assert same()
