"""The benchmark's workload generator: deterministic, exact counts, valid accounting."""
from __future__ import annotations

import hashlib

from binlake.bench.report import summarize
from binlake.bench.runners import Measurement
from binlake.bench.workload import TABLES, Workload


def _digest(w: Workload) -> str:
    h = hashlib.sha256()
    for tx in w.transactions():
        for s in tx:
            h.update(s.sql.encode())
    return h.hexdigest()


def test_same_seed_same_sql_and_counts() -> None:
    a, b = Workload(3000, seed=11), Workload(3000, seed=11)
    assert _digest(a) == _digest(b)
    assert a.expected.to_json() == b.expected.to_json()
    assert _digest(Workload(3000, seed=12)) != _digest(Workload(3000, seed=11))


def test_counts_add_up_to_scale_and_statements_agree() -> None:
    w = Workload(20_000, seed=3)
    per_stmt = {t: 0 for t in TABLES}
    for tx in w.transactions():
        assert 1 <= len(tx) <= 4
        for s in tx:
            assert s.rows > 0
            per_stmt[s.table] += s.rows
            assert s.sql.split()[0] == {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE"}[s.op]
    counts = w.expected.to_json()
    assert counts["total"] == 20_000
    assert {t: counts["tables"][t]["total"] for t in TABLES} == per_stmt
    assert per_stmt == w.budget
    # Every op shows up for every table at this scale (deletes need MIN_LIVE rows first).
    for t in TABLES:
        assert all(counts["tables"][t][op] > 0 for op in ("insert", "update", "delete")), t


def test_summary_medians_and_ratios() -> None:
    def m(tool: str, wall: float, cpu: float) -> Measurement:
        return Measurement(tool, None, 0, wall, cpu, cpu, 0.0, 1024, 10, None, None)

    ms = [m("binlake-decode", 1.0, 0.9), m("binlake-decode", 3.0, 1.1), m("binlake-decode", 2.0, 1.0),
          m("pmr-stream", 8.0, 4.0), m("mariadb-binlog-vv", 0.5, 0.5)]
    rows = {r["label"]: r for r in summarize(ms, expected_rows={"": 10}, binlog_bytes=2_000_000)}
    b = rows["binlake-decode"]
    assert b["wall_s"] == 2.0 and b["cpu_s"] == 1.0 and b["rows_per_s"] == 5.0
    assert b["mb_per_s"] == 1.0 and b["x_vs_pmr"] == 4.0 and b["x_vs_mariadb_binlog_vv"] == 0.25
    assert b["x_vs_pmr_cpu"] == 4.0


def test_page_cache_warm_up_reads_every_byte_of_every_file(tmp_path) -> None:
    from binlake.bench.runners import warm_page_cache

    sizes = [0, 1, (1 << 20) + 3, 5]
    paths = []
    for i, n in enumerate(sizes):
        p = tmp_path / f"bin.{i:06d}"
        p.write_bytes(bytes(n))
        paths.append(p)
    # a chunk smaller than a file, so the loop must go round more than once
    assert warm_page_cache(paths, chunk=4096) == sum(sizes)
    assert warm_page_cache([], chunk=4096) == 0
