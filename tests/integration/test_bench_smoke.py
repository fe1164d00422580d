"""`binlake bench` at toy scale: every contestant runs and reports the workload's row counts."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from binlake.bench.cli import BenchConfig, run_benchmark
from binlake.bench.runners import DEFAULT_TOOLS
from binlake.bench.workload import TABLES
from binlake.devtools.devserver import DevServer


def test_bench_smoke(mariadb_factory: Callable[..., DevServer], tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    server = mariadb_factory()  # private: the benchmark rotates the binlog and drops its schema
    monkeypatch.setenv("BINLAKE_PEERS", str(tmp_path / "no-peers"))  # (none built: skipped)
    cfg = BenchConfig(scale=1200, repeat=1, seed=5, workdir=tmp_path, timeout=120,
                      tools=(*DEFAULT_TOOLS, "transfer-floor", "bcj-stream-jsonl"))
    said: list[str] = []
    doc = run_benchmark(cfg, echo=said.append, server=server)

    expected = doc["workload"]["counts"]
    assert expected["total"] == 1200
    by_label = {m["tool"]: m for m in doc["measurements"]}
    assert set(by_label) >= {"binlake-decode", "binlake-decode-jobs", "binlake-stream",
                             "pmr-stream", "mariadb-binlog-vv", "raw-transfer"}
    for label in ("binlake-decode-jsonl", "binlake-stream-jsonl"):  # a line per row, checked
        assert by_label[label]["rows"] == 1200, label
        assert by_label[label]["extra"]["output_bytes"] > 1200 * 100, label
    assert not list(tmp_path.glob("*.jsonl"))  # (removed after each run)
    for label in ("binlake-decode", "binlake-decode-jobs", "binlake-stream", "pmr-stream"):
        assert by_label[label]["rows"] == 1200, label
        for t in TABLES:
            assert by_label[f"{label}[{t}]"]["rows"] == expected["tables"][t]["total"], (label, t)
    pmr_tables = by_label["pmr-stream"]["extra"]["tables"]
    for t in TABLES:
        want = {op: n for op, n in expected["tables"][t].items() if op != "total" and n}
        assert pmr_tables[f"binlake_bench.{t}"] == want
        assert doc["checks"]["mariadb_binlog_vv_rows"][f"binlake_bench.{t}"] == want
    assert by_label["raw-transfer"]["extra"]["bytes_checked"] == doc["workload"]["binlog_bytes"]
    # the floor's dump went past the end of the workload's last binlog file
    floor = by_label["transfer-floor"]["extra"]
    last, size = list(doc["workload"]["binlog_files"].items())[-1]
    end_file, end_pos = floor["end"].rsplit(":", 1)
    assert end_file > last or (end_file == last and int(end_pos) == size), floor
    assert floor["packets"] > 100
    assert by_label["transfer-floor"]["rows"] is None
    for m in doc["measurements"]:
        assert m["wall_s"] > 0 and m["max_rss_kb"] > 0
    # an opt-in peer that is not built: one line, listed as skipped, never run
    assert list(doc["config"]["skipped"]) == ["bcj-stream-jsonl"]
    assert "bcj-stream-jsonl" not in by_label
    assert [s for s in said if s.startswith("bcj-stream-jsonl: skipped")]
    assert {r["label"] for r in doc["summary"]} == set(by_label)


def test_source_read_script(mariadb, tmp_path: Path) -> None:
    """benchmarks/source_read.py reads a live range as the Spark source's executors do: every
    row change of it (and, with a schema history that replays the range's CREATE TABLE, its
    DDL record), ending at the stop position."""
    import json
    import subprocess
    import sys

    from binlake.schema.history import SchemaHistory

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "source_read.py"
    start = mariadb.binlog_end()
    mariadb.sql("CREATE TABLE src_read (id INT PRIMARY KEY, v TEXT)",  # (its DDL record: one)
                *(f"INSERT INTO src_read VALUES ({i}, 'v{i}')" for i in range(25)),
                "UPDATE src_read SET v = 'w' WHERE id < 5")
    stop = mariadb.binlog_end()
    history = tmp_path / "history.json"
    SchemaHistory().save(history)
    base = [sys.executable, str(script), mariadb.url, "--start", f"{start[0]}:{start[1]}",
            "--stop", f"{stop[0]}:{stop[1]}", "--batch-size", "10"]
    for extra, rows in (([], 30), (["--schema-history", str(history)], 31)):
        out = subprocess.run(base + extra, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["rows"] == rows and got["batches"] >= 3, got
        assert got["end"] == f"{stop[0]}:{stop[1]}"
