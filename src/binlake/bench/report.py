"""Summaries of the measurements: medians per tool, ratios to the peers, a table and JSON.

Medians because the runs are interleaved and few: one slow outlier (a page-cache miss, a
noisy neighbour) should not move the headline.  Peak RSS is the maximum over repeats.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any

from .runners import Measurement

PMR = "pmr-stream"
MARIADB_VV = "mariadb-binlog-vv"


def summarize(measurements: list[Measurement], *, expected_rows: dict[str, int],
              binlog_bytes: int) -> list[dict[str, Any]]:
    """One row per tool label: medians, rows/s, MB/s (10^6 bytes) and ratios.

    ``expected_rows`` maps "" (all tables) and each table name to its row-change count; rows/s
    uses the workload's count, which every run has been checked against.
    """
    by_label: dict[str, list[Measurement]] = {}
    for m in measurements:
        by_label.setdefault(m.tool, []).append(m)
    rows_out: list[dict[str, Any]] = []
    for label, ms in by_label.items():
        table = ms[0].table
        n_rows = expected_rows[table or ""]
        wall = statistics.median(m.wall_s for m in ms)
        server = [m.server_cpu_s for m in ms if m.server_cpu_s is not None]
        self_s = [m.self_seconds for m in ms if m.self_seconds is not None]
        rows_out.append({
            "tool": label.split("[")[0], "label": label, "table": table, "runs": len(ms),
            "rows": n_rows, "wall_s": wall, "wall_s_all": [round(m.wall_s, 3) for m in ms],
            "rows_per_s": n_rows / wall if wall else None,
            "mb_per_s": binlog_bytes / 1e6 / wall if wall else None,
            "cpu_s": statistics.median(m.cpu_s for m in ms),
            "rows_per_cpu_s": None,
            "max_rss_mib": max(m.max_rss_kb for m in ms) / 1024,
            "server_cpu_s": statistics.median(server) if server else None,
            "self_reported_s": statistics.median(self_s) if self_s else None,
        })
    for r in rows_out:
        r["rows_per_cpu_s"] = r["rows"] / r["cpu_s"] if r["cpu_s"] else None
    # Ratios compare time on the same bytes (and the same table for per-table rows): wall
    # time is what a user waits for; CPU time is steadier on a shared machine.
    index = {(r["tool"], r["table"]): r for r in rows_out}
    for r in rows_out:
        for peer, key in ((PMR, "x_vs_pmr"), (MARIADB_VV, "x_vs_mariadb_binlog_vv")):
            ref = index.get((peer, r["table"]))
            r[key] = ref["wall_s"] / r["wall_s"] if ref and r["wall_s"] else None
            r[key + "_cpu"] = ref["cpu_s"] / r["cpu_s"] if ref and r["cpu_s"] else None
    return rows_out


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def format_table(summary: list[dict[str, Any]]) -> str:
    """A fixed-width text table, whole-binlog rows first, then the per-table breakdown."""
    head = (f"{'tool':<26} {'rows':>8} {'wall s':>7} {'rows/s':>9} {'MB/s':>7} {'CPU s':>7} "
            f"{'rows/CPUs':>9} {'RSS MiB':>7} {'srv CPU':>7} {'x pmr':>6} {'x mdb-vv':>8}")
    lines = [head, "-" * len(head)]
    ordered = sorted(summary, key=lambda r: (r["table"] is not None, r["table"] or "", r["label"]))
    last_table: object = object()
    for r in ordered:
        if r["table"] != last_table and r["table"] is not None:
            lines.append(f"-- table {r['table']} (rows/s over that table's rows; every tool "
                         "reads the whole binlog) --")
        last_table = r["table"]
        lines.append(
            f"{r['label']:<26} {r['rows']:>8} {_fmt(r['wall_s'], '.2f'):>7} "
            f"{_fmt(r['rows_per_s'], ',.0f'):>9} {_fmt(r['mb_per_s'], '.1f'):>7} "
            f"{_fmt(r['cpu_s'], '.2f'):>7} {_fmt(r['rows_per_cpu_s'], ',.0f'):>9} "
            f"{_fmt(r['max_rss_mib'], '.0f'):>7} {_fmt(r['server_cpu_s'], '.2f'):>7} "
            f"{_fmt(r['x_vs_pmr'], '.2f'):>6} {_fmt(r['x_vs_mariadb_binlog_vv'], '.3f'):>8}")
    return "\n".join(lines)


def to_json(*, config: dict[str, Any], workload: dict[str, Any], environment: dict[str, Any],
            checks: dict[str, Any], measurements: list[Measurement],
            summary: list[dict[str, Any]], profile: dict[str, Any] | None) -> dict[str, Any]:
    """Everything needed to reproduce and audit the numbers, in one document."""
    return {"config": config, "workload": workload, "environment": environment,
            "checks": checks, "summary": summary,
            "measurements": [asdict(m) for m in measurements], "profile": profile}
