"""The Delta floor under one table of a small `binlake sync` batch, in a warm local session.

Per round, on a 7,000-row table in two files (like the lag benchmark's `narrow`): one MERGE
of 300 rows carrying a txn (appId, version), the way `binlake sync` commits a batch; then a
10-row blind append to a second table, with the txn (as the tombstones are appended) or
without it (`--no-txn`); then an empty append with a txn (the least one exactly-once commit
costs). Each step's seconds and Spark jobs per round, then the medians from round 3 on.
`--conf KEY=VALUE` (repeatable) tries a session setting.

    python benchmarks/delta_commit_floor.py [--rounds 8] [--no-txn] [--conf KEY=VALUE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--no-txn", action="store_true", help="the 10-row append without a txn")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)
    bad = [c for c in args.conf if "=" not in c]
    if bad:
        print(f"delta_commit_floor: --conf {bad[0]!r}: write it as KEY=VALUE", file=sys.stderr)
        return 2
    if args.rounds < 3:
        print("delta_commit_floor: --rounds must be at least 3 (the first two warm up)",
              file=sys.stderr)
        return 2
    from binlake.spark.session import build_session

    conf = dict(c.split("=", 1) for c in args.conf)
    spark = build_session("delta-commit-floor", master=args.master, conf=conf, register=False)
    sc = spark.sparkContext
    root = tempfile.mkdtemp(prefix="delta-floor-")
    t, tb, te = f"{root}/t", f"{root}/tb", f"{root}/te"
    (spark.range(7000).selectExpr("id", "repeat('x', 80) AS v", "id AS _seq").repartition(2)
     .write.format("delta").save(t))
    spark.range(1).selectExpr("id", "0L AS _seq").write.format("delta").save(tb)
    spark.range(0).selectExpr("id", "0L AS _seq").write.format("delta").save(te)
    rounds = []
    for i in range(args.rounds):
        base = 10_000 + 1_000 * i
        (spark.range(base, base + 300)
         .selectExpr("id % 9000 AS id", "repeat('y', 80) AS v", "id AS _seq")
         .createOrReplaceTempView("src"))
        steps = {}
        sc.setJobGroup(f"merge{i}", "merge")
        t0 = time.monotonic()
        spark.conf.set("spark.databricks.delta.write.txnAppId", "floor")
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(i))
        try:
            spark.sql(f"MERGE INTO delta.`{t}` t USING src s ON t.id = s.id "
                      "WHEN MATCHED AND s._seq > t._seq THEN UPDATE SET * "
                      "WHEN NOT MATCHED THEN INSERT *")
        finally:
            spark.conf.unset("spark.databricks.delta.write.txnAppId")
            spark.conf.unset("spark.databricks.delta.write.txnVersion")
        steps["merge"] = time.monotonic() - t0
        sc.setJobGroup(f"append{i}", "append")
        t0 = time.monotonic()
        w = (spark.range(base, base + 10).selectExpr("id", "id AS _seq").coalesce(1)
             .write.format("delta").mode("append"))
        if not args.no_txn:
            w = w.option("txnAppId", "floor").option("txnVersion", i)
        w.save(tb)
        steps["append"] = time.monotonic() - t0
        sc.setJobGroup(f"empty{i}", "empty")
        t0 = time.monotonic()
        (spark.range(0).selectExpr("id", "id AS _seq").write.format("delta").mode("append")
         .option("txnAppId", "floor").option("txnVersion", i).save(te))
        steps["empty_commit"] = time.monotonic() - t0
        jobs = {k: len(sc.statusTracker().getJobIdsForGroup(f"{k}{i}"))
                for k in ("merge", "append", "empty")}
        rounds.append(steps)
        print(json.dumps({"round": i, **{k: round(v, 3) for k, v in steps.items()},
                          "jobs": jobs}), flush=True)
    warm = rounds[2:]
    print(json.dumps({"median": {k: round(statistics.median(r[k] for r in warm), 3)
                                 for k in warm[0]},
                      "no_txn": args.no_txn, "conf": conf}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
