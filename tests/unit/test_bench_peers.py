"""The opt-in peer runners (go-mysql, mysql-binlog-connector-java): their command lines, the
note when a peer program is not built, and how a finished run is checked. The peer programs
themselves are not built here (benchmarks/peers/build.sh does that by hand)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from binlake.bench.runners import (ALL_RUNNERS, DEFAULT_TOOLS, REPO_ROOT, BcjFileJsonl,
                                   BcjStreamJsonl, BenchContext, BenchError, GoMysqlFileJsonl,
                                   PeerJsonl, ProcStats)

PEERS = (GoMysqlFileJsonl, BcjFileJsonl, BcjStreamJsonl)


def _ctx(tmp_path: Path) -> BenchContext:
    files = []
    for i, size in ((1, 1000), (2, 2345)):
        f = tmp_path / "binlog" / f"mariadb-bin.00000{i}"
        f.parent.mkdir(exist_ok=True)
        f.write_bytes(b"\xfebin" + bytes(size - 4))
        files.append(f)
    work = tmp_path / "work"
    work.mkdir()
    return BenchContext(host="127.0.0.1", port=3307, user="bench", password="s3cret",
                        first_file=files[0].name, files=files, binlog_bytes=3345, workdir=work)


def test_peers_are_opt_in_and_known() -> None:
    for peer in PEERS:
        assert ALL_RUNNERS[peer.name] is peer
        assert peer.name not in DEFAULT_TOOLS


def test_a_peer_not_built_is_skipped_with_one_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLAKE_PEERS", str(tmp_path / "none"))
    for peer in PEERS:
        note = peer().missing()
        assert note is not None and "\n" not in note
        assert note.startswith(f"{peer.name}: skipped") and "benchmarks/peers/build.sh" in note
    built = tmp_path / "built"
    built.mkdir()
    for program in {p.program for p in PEERS}:
        (built / program).write_text("#!/bin/sh\n")
        (built / program).chmod(0o755)
    monkeypatch.setenv("BINLAKE_PEERS", str(built))
    assert all(peer().missing() is None for peer in PEERS)


def test_peer_command_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLAKE_PEERS", str(tmp_path / "peers"))
    ctx = _ctx(tmp_path)
    files = [str(p) for p in ctx.files]

    go = GoMysqlFileJsonl().command(ctx)
    assert go == [str(tmp_path / "peers" / "gomysql-jsonl"), "-out",
                  str(ctx.workdir / "go-mysql-file-jsonl.jsonl"), *files]

    bcj = BcjFileJsonl().command(ctx)
    assert bcj == [str(tmp_path / "peers" / "bcj-jsonl"), "file",
                   str(ctx.workdir / "bcj-file-jsonl.jsonl"), *files]

    runner = BcjStreamJsonl()
    stream = runner.command(ctx)
    # BcjJsonl's stream mode takes exactly: OUT HOST PORT USER FIRST LAST END_POS
    assert stream[1:] == ["stream", str(ctx.workdir / "bcj-stream-jsonl.jsonl"), "127.0.0.1",
                          "3307", "bench", "mariadb-bin.000001", "mariadb-bin.000002", "2345"]
    assert runner.needs_server
    assert all("s3cret" not in part for cmd in (go, bcj, stream) for part in cmd)
    assert runner.env(ctx)["MYSQL_PWD"] == "s3cret"

    # the programs the commands name are in the tree, with the modes the commands use
    java = (REPO_ROOT / "benchmarks" / "peers" / "bcj" / "BcjJsonl.java").read_text()
    assert 'args[0].equals("stream") && args.length == 8' in java
    assert 'flag.String("out"' in (REPO_ROOT / "benchmarks" / "peers" / "gomysql" / "main.go").read_text()
    build = REPO_ROOT / "benchmarks" / "peers" / "build.sh"
    assert os.access(build, os.X_OK)
    assert subprocess.run(["bash", "-n", str(build)]).returncode == 0


def _stats(stdout: str) -> ProcStats:
    return ProcStats(returncode=0, wall_s=1.0, user_s=0.5, sys_s=0.1, max_rss_kb=1000,
                     stdout=stdout, stderr_tail="")


def test_peer_output_is_checked_and_removed(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    runner: PeerJsonl = GoMysqlFileJsonl()
    out = ctx.workdir / f"{runner.label}.jsonl"
    tables = {"binlake_bench.narrow": {"insert": 2}}
    line = json.dumps({"rows": 2, "seconds": 0.5, "tables": tables})

    out.write_text('{"op":"insert"}\n{"op":"insert"}\n')
    rows, seconds, extra = runner.parse(ctx, _stats(f"log\n{line}\n"))
    assert (rows, seconds) == (2, 0.5)
    assert extra == {"output_bytes": 32, "tables": tables}
    assert not out.exists()

    out.write_text('{"op":"insert"}\n')  # a line short of the rows it claims: void
    with pytest.raises(BenchError, match="wrote 1 lines"):
        runner.parse(ctx, _stats(line))


def test_text_output_is_checked_a_head_per_row(tmp_path: Path) -> None:
    from binlake.bench.runners import BinlakeDecodeText

    ctx = _ctx(tmp_path)
    runner = BinlakeDecodeText()
    out = ctx.workdir / "binlake-decode-text.txt"
    record = "### {} db.t  at f:4 row 0\n###   after:\n###     id=1\n"
    # the second head straddles the 8 MiB read boundary
    filler = "###     s=\"" + "x" * ((8 << 20) - 64) + "\"\n"
    text = record.format("INSERT") + filler
    text += "\n" * ((8 << 20) - 5 - len(text.encode()))
    text += record.format("UPDATE") + record.format("DELETE")
    stats = ProcStats(returncode=0, wall_s=1.0, user_s=0.5, sys_s=0.1, max_rss_kb=1000,
                      stdout="", stderr_tail='{"rows": 3, "seconds": 0.2}')
    out.write_text(text)
    assert runner.parse(ctx, stats)[:2] == (3, 0.2)
    assert not out.exists()
    out.write_text(text.replace("### DELETE", "#   DELETE"))
    with pytest.raises(BenchError, match="2 record heads"):
        runner.parse(ctx, stats)
