"""`binlake bench` at toy scale: every contestant runs and reports the workload's row counts."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from binlake.bench.cli import BenchConfig, run_benchmark
from binlake.bench.workload import TABLES
from binlake.devserver import DevServer


def test_bench_smoke(mariadb_factory: Callable[..., DevServer], tmp_path: Path) -> None:
    server = mariadb_factory()  # private: the benchmark rotates the binlog and drops its schema
    cfg = BenchConfig(scale=1200, repeat=1, seed=5, workdir=tmp_path, timeout=120)
    doc = run_benchmark(cfg, echo=lambda s: None, server=server)

    expected = doc["workload"]["counts"]
    assert expected["total"] == 1200
    by_label = {m["tool"]: m for m in doc["measurements"]}
    assert set(by_label) >= {"binlake-decode", "binlake-decode-jobs", "binlake-stream",
                             "pmr-stream", "mariadb-binlog-vv", "raw-transfer"}
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
    for m in doc["measurements"]:
        assert m["wall_s"] > 0 and m["max_rss_kb"] > 0
    assert {r["label"] for r in doc["summary"]} == set(by_label)
