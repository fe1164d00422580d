"""The end-to-end lag measurement (`binlake bench --e2e-seconds`): every committed row must
become visible in Delta, and the lag figures must be ordered and positive."""
from __future__ import annotations

from typing import Any

from binlake.bench.e2e import measure_e2e_lag


def test_every_commit_becomes_visible_and_lags_are_ordered(spark: Any) -> None:
    before = {q.id for q in spark.streams.active}
    out = measure_e2e_lag(rate=20, seconds=3, trigger=1, spark=spark)
    assert 50 <= out["rows"] <= 61  # 20/s for 3 s; the function fails if any row stays unseen
    assert 0 < out["p50_s"] <= out["p90_s"] <= out["p99_s"] <= out["max_s"] < 120
    assert {q.id for q in spark.streams.active} == before  # its own query stopped, others kept
