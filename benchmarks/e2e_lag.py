#!/usr/bin/env python3
"""End-to-end lag: MariaDB commit -> row visible in its Delta table, at a sustained write rate.

A throwaway MariaDB, `binlake sync` streaming (local Spark, 1 s trigger) and a writer that
commits `--rate` single-row transactions per second for `--seconds`. The writer notes each
id's commit time; after every applied micro-batch the script reads the Delta table with
delta-rs (the `deltalake` package, a reader independent of Spark) and notes when each new id
became visible. Prints one JSON line: rows, rate, p50/p90/p99/max lag in seconds.

    python benchmarks/e2e_lag.py --rate 200 --seconds 60
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=200.0, help="commits per second")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the writer writes")
    ap.add_argument("--trigger", type=float, default=1.0, help="seconds between micro-batches")
    args = ap.parse_args(argv)

    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    from binlake.devserver import DevServer
    from binlake.spark.session import build_session
    from binlake.spark.sync import SyncOptions, run_sync

    work = Path(tempfile.mkdtemp(prefix="binlake-e2e-"))
    server = DevServer(work / "mariadb").start()
    try:
        server.sql("CREATE DATABASE IF NOT EXISTS e2e", database=None)
        server.sql("CREATE TABLE e2e.t (id BIGINT PRIMARY KEY, v VARCHAR(40), n INT)",
                   database=None)
        warehouse = work / "wh"
        path = str(warehouse / "e2e" / "t")
        spark = build_session("binlake-e2e")
        committed: dict[int, float] = {}
        visible: dict[int, float] = {}
        seen = [0]
        done = threading.Event()

        def on_progress(info: dict) -> None:
            now = time.time()
            try:
                ids = DeltaTable(path).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
            except TableNotFoundError:  # the table is created by the first batch
                return
            for i in ids:
                if i not in visible:
                    visible[i] = now
            seen[0] = len(visible)

        def writer() -> None:
            conn = server.connect(database="e2e", autocommit=True)
            cur = conn.cursor()
            t0 = time.time()
            i = 0
            while time.time() - t0 < args.seconds:
                i += 1
                cur.execute("INSERT INTO t VALUES (%s, %s, %s)", (i, f"row {i}", i % 97))
                committed[i] = time.time()  # autocommit: returned = committed
                ahead = t0 + i / args.rate - time.time()
                if ahead > 0:
                    time.sleep(ahead)
            conn.close()
            done.set()

        opts = SyncOptions(url=server.url, tables="e2e.t", warehouse=warehouse,
                           trigger_seconds=args.trigger, snapshot=False)
        sync = threading.Thread(target=run_sync, args=(opts, spark, on_progress), daemon=True)
        sync.start()
        time.sleep(15)  # let the stream start at the binlog's end before writing
        w = threading.Thread(target=writer)
        w.start()
        w.join()
        deadline = time.time() + 300
        while len(visible) < len(committed) and time.time() < deadline:
            time.sleep(0.5)
        lags = sorted(visible[i] - committed[i] for i in committed if i in visible)
        if len(lags) != len(committed):
            print(f"only {len(lags)} of {len(committed)} rows became visible", file=sys.stderr)
            return 1
        q = statistics.quantiles(lags, n=100)
        out = {"rows": len(lags), "rate": round(len(lags) / args.seconds, 1),
               "p50_s": round(q[49], 2), "p90_s": round(q[89], 2), "p99_s": round(q[98], 2),
               "max_s": round(lags[-1], 2), "trigger_s": args.trigger}
        print(json.dumps(out))
        for query in spark.streams.active:
            query.stop()
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
