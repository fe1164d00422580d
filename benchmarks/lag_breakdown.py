"""Where each micro-batch of `binlake sync` spent its time, from a Spark event log.

Run the sync (or `binlake bench --lag`) with an uncompressed event log, e.g.
`python -m binlake.bench.lag_bench ... --keep --sync-arg=--conf
--sync-arg=spark.eventLog.enabled=true --sync-arg=--conf --sync-arg=spark.eventLog.dir=DIR
--sync-arg=--conf --sync-arg=spark.eventLog.compress=false`, then
`python benchmarks/lag_breakdown.py DIR/*/events_*` (a `.zstd` log: `zstd -dc` it first).

One JSON line per batch: `handle` (seconds in foreachBatch), `outside` (the streaming
loop's own time around it: latestOffset, offset and commit logs, planning), `before_jobs`
(the driver's read, fold and DataFrame set-up before the first Spark job), each table's MERGE
statement, each tombstone append over 0.5 s, and each Delta state reconstruction job
("Compute snapshot", over 0.3 s). A last line has the medians over batches 3 on.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from typing import Any


def breakdown(path: str) -> list[dict[str, Any]]:
    sqls: dict[int, dict[str, Any]] = {}
    progress: dict[int, dict[str, int]] = {}
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            ev = e["Event"]
            if ev.endswith("SQLExecutionStart"):
                sqls[e["executionId"]] = {"start": e["time"], "desc": e.get("description", "")}
            elif ev.endswith("SQLExecutionEnd") and e["executionId"] in sqls:
                sqls[e["executionId"]]["end"] = e["time"]
            elif "QueryProgressEvent" in ev:
                p = e["progress"]
                progress[p["batchId"]] = p["durationMs"]
    out = []
    for i, root in sorted(sqls.items()):
        m = re.search(r"batch = (\d+)", root["desc"])
        if not m or "end" not in root:
            continue
        kids = [s for j, s in sqls.items() if j != i and "end" in s
                and root["start"] <= s["start"] <= root["end"]]

        def spans(pred: Any, least: float = 0.0) -> list[float]:
            return [round((s["end"] - s["start"]) / 1000, 2) for s in kids
                    if pred(s["desc"]) and s["end"] - s["start"] > least * 1000]

        first = min((s["start"] for s in kids), default=root["end"])
        d = progress.get(int(m.group(1)), {})
        out.append({
            "batch": int(m.group(1)),
            "handle": round((root["end"] - root["start"]) / 1000, 2),
            "outside": round((d.get("triggerExecution", 0) - d.get("addBatch", 0)) / 1000, 2),
            "before_jobs": round((first - root["start"]) / 1000, 2),
            "merges": spans(lambda t: t.startswith("sql at")),
            "tombstone_appends": spans(lambda t: t.startswith("save at"), 0.5),
            "state_jobs": spans(lambda t: "Compute snapshot" in t, 0.3)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("event_log")
    args = ap.parse_args(argv)
    try:
        rows = breakdown(args.event_log)
    except (OSError, ValueError, KeyError) as exc:
        print(f"lag_breakdown: cannot read {args.event_log}: {exc} (an uncompressed Spark "
              "event log is needed)", file=sys.stderr)
        return 2
    for r in rows:
        print(json.dumps(r))
    steady = [r for r in rows if r["batch"] >= 3]
    if steady:
        def med(xs: list[float]) -> float | None:
            return round(statistics.median(xs), 2) if xs else None
        print(json.dumps({"median_from_batch_3": {
            "handle": med([r["handle"] for r in steady]),
            "outside": med([r["outside"] for r in steady]),
            "before_jobs": med([r["before_jobs"] for r in steady]),
            "merge": med([x for r in steady for x in r["merges"]]),
            "tombstone_append": med([x for r in steady for x in r["tombstone_appends"]]),
            "state_job": med([x for r in steady for x in r["state_jobs"]])}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
