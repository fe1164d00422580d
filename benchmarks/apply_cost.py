#!/usr/bin/env python3
"""Cost of applying one small micro-batch: Spark jobs, their time, Delta commits, wall time.

A throwaway MariaDB gets a workload cut into batches at commit positions (the shape of a
`binlake sync` micro-batch); each batch is read with format("binlake"), materialized (so the
binlog read is not counted) and applied with `apply_batch`. Per batch it prints one JSON
line: jobs run, the sum of their durations, Delta commits written (new `_delta_log` JSON
files anywhere under the target) and wall seconds. Numbers on a shared 2-core box vary by
~20 %; job and commit counts do not.

    python benchmarks/apply_cost.py --batches 6 --rows 200
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DB = "bench"


def _commits(target: Path) -> int:
    return sum(1 for _ in target.rglob("_delta_log/*.json"))


def _jobs_since(spark: Any, first: int) -> tuple[int, float, list[str]]:
    """(jobs, their summed seconds, their descriptions) of jobs with id >= first."""
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    n, secs, names = 0, 0.0, []
    for i in range(jobs.size()):
        j = jobs.apply(i)
        if j.jobId() < first:
            continue
        n += 1
        sub, done = j.submissionTime(), j.completionTime()
        if sub.isDefined() and done.isDefined():
            secs += (done.get().getTime() - sub.get().getTime()) / 1000
        names.append(j.name()[:60])
    return n, secs, names


def _next_job(spark: Any) -> int:
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    return max((jobs.apply(i).jobId() for i in range(jobs.size())), default=-1) + 1


def workload(kind: str, b: int, rows: int) -> list[str]:
    """SQL of batch b: `insert` (the e2e benchmark's shape) or `mixed` (inserts, updates,
    deletes, a key change, on an SCD1 and an SCD2 table)."""
    base = b * rows
    ins = ",".join(f"({base + i}, 'row {base + i}', {i % 97})" for i in range(1, rows + 1))
    sql = [f"INSERT INTO t (id, v, n) VALUES {ins}"]
    if kind == "mixed":
        sql += [f"INSERT INTO h (id, v, n) VALUES {ins}"]
        if b > 0:
            prev = base - rows
            sql += [f"UPDATE t SET n = n + 1 WHERE id BETWEEN {prev + 1} AND {prev + rows // 4}",
                    f"DELETE FROM t WHERE id BETWEEN {prev + rows // 2} AND {prev + rows // 2 + 9}",
                    f"UPDATE t SET id = id + 1000000 WHERE id = {prev + rows}",
                    f"UPDATE h SET n = n + 1 WHERE id BETWEEN {prev + 1} AND {prev + 20}",
                    f"DELETE FROM h WHERE id = {prev + 30}"]
    return sql


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--kind", choices=("insert", "mixed", "alter"), default="insert")
    ap.add_argument("--verbose", action="store_true", help="also print every job's name")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting (repeatable), to compare settings")
    args = ap.parse_args(argv)

    from pyspark.sql import functions as F

    from binlake.devtools.devserver import DevServer
    from binlake.spark.apply import ApplyConfig, TableOptions, apply_batch
    from binlake.spark.session import build_session
    from binlake.spark.typing import read_table_spec

    work = Path(tempfile.mkdtemp(prefix="binlake-applycost-"))
    server = DevServer(work / "mariadb").start()
    try:
        server.sql(f"CREATE DATABASE IF NOT EXISTS {DB}", database=None)
        server.sql("CREATE TABLE t (id BIGINT PRIMARY KEY, v VARCHAR(40), n INT)",
                   "CREATE TABLE h (id BIGINT PRIMARY KEY, v VARCHAR(40), n INT)", database=DB)
        spark = build_session("binlake-applycost",
                              conf=dict(c.split("=", 1) for c in args.conf))

        def position() -> tuple[int, int]:
            f, p = server.sql("SHOW MASTER STATUS", database=DB)[0][:2]
            return int(str(f).rsplit(".", 1)[1]), int(p)

        marks = [position()]
        for b in range(args.batches):
            sql = workload("insert" if args.kind == "alter" else args.kind, b, args.rows)
            if args.kind == "alter" and b == args.batches // 2:
                sql.insert(0, f"ALTER TABLE t ADD COLUMN c{b} INT DEFAULT 7")
            server.sql(*sql, database=DB)
            marks.append(position())
        conn = server.connect(database=DB)
        try:
            specs = {(DB, t): read_table_spec(conn, DB, t) for t in ("t", "h")}
        finally:
            conn.close()
        tables = f"{DB}.t,{DB}.h"
        df = spark.read.format("binlake").option("tables", tables).load(str(server.binlog_dir))
        at = F.struct(F.col("seq.file_index"), F.col("seq.pos"))

        def mark(m: tuple[int, int]) -> Any:
            return F.struct(F.lit(m[0]).alias("file_index"),
                            F.lit(m[1]).cast("bigint").alias("pos"))

        df = df.localCheckpoint()
        target = work / "lake"
        config = ApplyConfig(target=str(target), app_id="bench", tables={
            f"{DB}.h": TableOptions(scd_type=2)})
        out = []
        for b, (lo, hi) in enumerate(zip(marks, marks[1:])):
            batch = df.where((at >= mark(lo)) & (at < mark(hi))).localCheckpoint()
            n = batch.count()
            first, c0, t0 = _next_job(spark), _commits(target), time.monotonic()
            apply_batch(spark, batch, b, config, specs)
            wall = time.monotonic() - t0
            jobs, secs, names = _jobs_since(spark, first)
            line = {"batch": b, "changes": n, "jobs": jobs, "job_s": round(secs, 2),
                    "commits": _commits(target) - c0, "wall_s": round(wall, 2)}
            if args.verbose:
                line["job_names"] = names
            out.append(line)
            print(json.dumps(line), flush=True)
        steady = out[1:] or out
        print(json.dumps({"kind": args.kind, "rows": args.rows,
                          "mean_wall_s": round(sum(x["wall_s"] for x in steady) / len(steady), 2),
                          "mean_jobs": round(sum(x["jobs"] for x in steady) / len(steady), 1),
                          "mean_commits": round(sum(x["commits"] for x in steady) / len(steady), 1)}))
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
