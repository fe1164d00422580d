"""The lag benchmark's reading of a real sync: `binlake sync`'s byte limit cuts a backlog into
one batch per transaction, and the benchmark's watcher finds each transaction's batch (Spark's
checkpoint, the Delta commits' txn) and a lag for it."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.bench.lag_bench import BatchWatcher, TxMaker, Writer, lags_of
from binlake.bench.workload import SCHEMA, create_tables
from binlake.spark.sync import SyncOptions, run_sync

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_byte_limit_batches_and_the_watcher_sees_each(spark: Any, mariadb_factory: Any,
                                                       tmp_path: Path) -> None:
    server = mariadb_factory()
    create_tables(server)
    wh = tmp_path / "wh"
    opts = SyncOptions(url=server.url, tables=f"{SCHEMA}.*", warehouse=wh, once=True,
                       master="local[2]", max_bytes_per_trigger=1)
    run_sync(opts, spark)  # the snapshot of the empty tables
    writer = Writer(server, TxMaker({"narrow": [], "wide": []}, seed=5, rows=(10, 20)))
    try:
        txs = [writer.commit_one()[:2] for _ in range(2)]
    finally:
        writer.close()
    assert txs[0][0] < txs[1][0]  # binlog ends, in commit order
    rep = run_sync(opts, spark)
    assert rep.batches == 2  # a 1-byte limit: each transaction alone
    visible = BatchWatcher(wh).visible()
    assert [end for end, _ in visible] == [key for key, _ in txs]
    lags = lags_of(txs, visible)
    assert all(lag is not None and 0 <= lag < time.time() - txs[0][1] + 1 for lag in lags)
    n = server.sql(f"SELECT COUNT(*) FROM {SCHEMA}.narrow", database=None)[0][0]
    assert spark.read.format("delta").load(str(wh / SCHEMA / "narrow")).count() == n > 0
