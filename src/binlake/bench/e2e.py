"""End-to-end lag: a MariaDB commit -> its row visible in the Delta table, at a sustained rate.

A throwaway MariaDB, `binlake sync` (local Spark, `trigger` seconds between micro-batches) and
a writer that commits `rate` single-row transactions per second for `seconds`. The writer
notes each row's commit time; after every applied micro-batch the Delta table is read with
delta-rs (the `deltalake` package: a reader independent of Spark) and each new row's first
sighting noted. Lag = seen - committed, so it includes the trigger interval, reading the
binlog range, the apply (MERGE into Delta) and delta-rs seeing the commit.

Steady state, measured: the sync starts with a snapshot of a one-row table (which creates the
Delta table: Delta's first use in a JVM costs seconds, once) and the writer starts only once
the stream runs, so no row waits for start-up. Rows are never missed: those committed before
the stream's start position are in the snapshot.
"""
from __future__ import annotations

import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable


class E2EError(RuntimeError):
    """The measurement could not complete (rows never became visible, the sync failed)."""


def measure_e2e_lag(rate: float = 200.0, seconds: float = 60.0, trigger: float = 1.0, *,
                    spark: Any = None, echo: Callable[[str], None] = lambda s: None,
                    timeout: float = 300.0) -> dict[str, Any]:
    """Run the measurement; returns rows, rate and p50/p90/p99/max lag in seconds."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    from ..devtools.devserver import DevServer
    from ..spark.session import build_session
    from ..spark.sync import SyncOptions, run_sync

    work = Path(tempfile.mkdtemp(prefix="binlake-e2e-"))
    server = DevServer(work / "mariadb").start()
    spark = spark or build_session("binlake-e2e")
    before = {q.id for q in spark.streams.active}  # a shared session may run other queries
    try:
        server.sql("CREATE DATABASE IF NOT EXISTS e2e", database=None)
        server.sql("CREATE TABLE e2e.t (id BIGINT PRIMARY KEY, v VARCHAR(40), n INT)",
                   "INSERT INTO e2e.t VALUES (0, 'snapshot', 0)", database=None)
        path = str(work / "wh" / "e2e" / "t")
        committed: dict[int, float] = {}
        visible: dict[int, float] = {}
        failure: list[BaseException] = []

        def on_progress(info: dict[str, Any]) -> None:
            now = time.time()
            try:
                ids = DeltaTable(path).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
            except TableNotFoundError:  # not before the snapshot's first commit
                return
            for i in ids:
                visible.setdefault(i, now)

        def sync() -> None:
            try:
                run_sync(SyncOptions(url=server.url, tables="e2e.t", warehouse=work / "wh",
                                     trigger_seconds=trigger), spark, on_progress)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                failure.append(exc)

        threading.Thread(target=sync, daemon=True).start()
        deadline = time.time() + timeout
        while not [q for q in spark.streams.active if q.id not in before]:
            if failure:
                raise E2EError(f"binlake sync failed: {failure[0]}") from failure[0]
            if time.time() > deadline:
                raise E2EError("binlake sync did not start streaming")
            time.sleep(0.2)
        echo(f"end to end: writing {rate:g} commits/s for {seconds:g} s")
        conn = server.connect(database="e2e", autocommit=True)
        try:
            cur = conn.cursor()
            t0 = time.time()
            i = 0
            while time.time() - t0 < seconds:
                i += 1
                cur.execute("INSERT INTO t VALUES (%s, %s, %s)", (i, f"row {i}", i % 97))
                committed[i] = time.time()  # autocommit: returned = committed
                ahead = t0 + i / rate - time.time()
                if ahead > 0:
                    time.sleep(ahead)
            wrote = time.time() - t0
        finally:
            conn.close()
        deadline = time.time() + timeout
        while any(i not in visible for i in committed):
            if failure:
                raise E2EError(f"binlake sync failed: {failure[0]}") from failure[0]
            if time.time() > deadline:
                missing = sum(1 for i in committed if i not in visible)
                raise E2EError(f"{missing} of {len(committed)} rows never became visible")
            time.sleep(0.2)
        lags = sorted(visible[i] - committed[i] for i in committed)
        # inclusive: percentiles within the observed lags (exclusive extrapolates past the max)
        q = statistics.quantiles(lags, n=100, method="inclusive") if len(lags) > 1 else lags * 99
        return {"rows": len(lags), "rate": round(len(lags) / wrote, 1), "seconds": seconds,
                "trigger_s": trigger, "p50_s": round(q[49], 2), "p90_s": round(q[89], 2),
                "p99_s": round(q[98], 2), "max_s": round(lags[-1], 2)}
    finally:
        for query in spark.streams.active:
            if query.id not in before:
                _stop_between_batches(query)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def _stop_between_batches(query: Any, wait: float = 30.0) -> None:
    """Stop a streaming query when no batch is running (a stop in mid-batch interrupts it,
    which Spark reports with a stack trace although nothing is lost)."""
    deadline = time.time() + wait
    while time.time() < deadline and query.isActive and query.status.get("isTriggerActive"):
        time.sleep(0.1)
    query.stop()
