"""The lag benchmark's pure parts: rates, pacing, percentiles, visibility, the bounded-lag
decision, the transaction maker's accounting, and `binlake sync`'s size option."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from binlake.bench.lag_bench import (
    Pacer, TxMaker, batch_visibility, highest_bounded, lag_trend, lags_of, main, parse_rates,
    parse_span, percentile, read_commit,
)
from binlake.spark.cli import parse_size


def test_parse_rates() -> None:
    assert parse_rates("500,1000, 2k,5000") == (500, 1000, 2000, 5000)
    assert parse_rates("1.5k") == (1500,)
    for bad in ("", "fast", "0", "500,-1"):
        with pytest.raises(ValueError):
            parse_rates(bad)


def test_parse_span() -> None:
    assert parse_span("10-50") == (10, 50)
    assert parse_span("30") == (30, 30)
    for bad in ("1-5", "50-10", "x"):
        with pytest.raises(ValueError):
            parse_span(bad)


def test_bad_arguments_are_one_line_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--rates", "fast"], ["--tx-rows", "50-10"], ["--seconds", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "error:" in err and "Traceback" not in err


def test_percentile_interpolates_within_the_observed_range() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile(values, 100) == 100.0 and percentile(values, 0) == 1.0
    assert percentile([3.0], 99) == 3.0
    assert percentile([], 50) is None
    assert percentile([5.0, 1.0, 3.0], 50) == 3.0  # unsorted input


def test_pacer_schedules_changes_not_transactions() -> None:
    p = Pacer(1000, start=100.0)
    assert p.due(0) == 100.0
    assert p.due(500) == pytest.approx(100.5)
    assert p.delay(500, now=100.2) == pytest.approx(0.3)
    assert p.delay(500, now=101.0) == 0.0  # late: no sleep, catch up
    with pytest.raises(ValueError):
        Pacer(0, 0.0)


def _phase(lag_at: "callable", n: int = 300, seconds: float = 120.0) -> tuple[list[float], list[float]]:
    commits = [i * seconds / n for i in range(n)]
    return commits, [lag_at(t) for t in commits]


def test_steady_sawtooth_lag_is_bounded() -> None:
    # batches every 3 s: lag between 1 and 4 s, repeating
    commits, lags = _phase(lambda t: 1.0 + (3.0 - t % 3.0))
    trend = lag_trend(commits, lags)
    assert trend["bounded"] is True
    assert abs(trend["slope"]) < 0.01


def test_lag_growing_with_the_backlog_is_not_bounded() -> None:
    # the sync applies 80% of the rate: lag grows 0.2 s per s on top of the sawtooth
    commits, lags = _phase(lambda t: 1.0 + (3.0 - t % 3.0) + 0.2 * t)
    trend = lag_trend(commits, lags)
    assert trend["bounded"] is False
    assert trend["growth_s"] > 10 and trend["slope"] == pytest.approx(0.2, abs=0.02)
    assert lag_trend([1.0, 2.0], [1.0, 1.0])["bounded"] is None  # too few to judge


def test_highest_bounded_rate_stops_at_the_first_failure() -> None:
    def ph(rate: int, bounded: bool = True, drained: bool = True, kept: bool = True) -> dict:
        return {"rate": rate, "bounded": bounded, "drained": drained, "writer_kept_rate": kept}

    assert highest_bounded([ph(2000), ph(500), ph(1000), ph(5000, bounded=False)]) == 2000
    assert highest_bounded([ph(500), ph(1000, drained=False), ph(2000)]) == 500
    assert highest_bounded([ph(500, kept=False)]) is None
    assert highest_bounded([]) is None


def test_visibility_is_the_first_batch_ending_at_or_past_a_commit() -> None:
    ends = {0: (3, 100), 1: (3, 500), 2: (3, 900), 3: (4, 200)}
    # batch 1 committed to two tables (10.0 and 10.5): visible at the later one;
    # batch 2 touched nothing: left out
    seen = {0: [5.0], 1: [10.0, 10.5], 3: [20.0]}
    visible = batch_visibility(ends, seen)
    assert visible == [((3, 100), 5.0), ((3, 500), 10.5), ((4, 200), 20.0)]
    txs = [((3, 100), 4.0), ((3, 300), 9.0), ((3, 500), 9.5), ((3, 950), 12.0), ((4, 300), 30.0)]
    assert lags_of(txs, visible) == [1.0, 1.5, 1.0, 8.0, None]


def test_read_commit_takes_the_txn_and_the_file_time(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000007.json"
    lines = [{"commitInfo": {"operation": "MERGE"}},
             {"txn": {"appId": "binlake-abc", "version": 42, "lastUpdated": 1}},
             {"add": {"path": "part-0.parquet", "dataChange": True}}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    os.utime(path, ns=(1_700_000_000_250_000_000, 1_700_000_000_250_000_000))
    c = read_commit(7, path)
    assert c.version == 7 and c.txn == ("binlake-abc", 42)
    assert c.at == pytest.approx(1_700_000_000.25)
    path.write_text(json.dumps({"commitInfo": {"operation": "OPTIMIZE"}}) + "\n")
    assert read_commit(8, path).txn is None  # compaction: no batch


def _target(sql: str) -> tuple[str, list[int]]:
    """The table and the keys a TxMaker statement touches."""
    words = sql.split()
    if words[0] == "INSERT":
        return words[2], [int(m) for m in re.findall(r"\((\d+),", sql)]
    table = words[2] if words[0] == "DELETE" else words[1]
    return table, [int(x) for x in re.search(r"IN \(([\d,]+)\)", sql).group(1).split(",")]


def test_tx_maker_counts_and_keeps_keys_consistent() -> None:
    live = {"narrow": list(range(1, 201)), "wide": list(range(1, 101))}
    maker = TxMaker(live, seed=3, rows=(10, 50))
    alive = {t: set(ids) for t, ids in live.items()}
    total = 0
    for seq in range(1, 300):
        tx = maker.make(seq)
        assert 10 <= tx.changes <= 50
        total += tx.changes
        for sql, n in tx.statements:
            table, ids = _target(sql)
            assert len(ids) == n == len(set(ids))
            if sql.startswith("INSERT"):
                assert not alive[table] & set(ids)
                alive[table] |= set(ids)
            else:  # updates and deletes hit live keys only
                assert set(ids) <= alive[table]
                if sql.startswith("DELETE"):
                    alive[table] -= set(ids)
        assert tx.sql().startswith("START TRANSACTION;") and tx.sql().endswith("SHOW MASTER STATUS")
    assert {t: set(ids) for t, ids in maker.live.items()} == alive
    ops = " ".join(s for seq in range(5) for s, _ in maker.make(1000 + seq).statements)
    assert all(op in ops for op in ("INSERT", "UPDATE", "DELETE"))
    assert total > 300 * 10


def test_parse_size() -> None:
    assert parse_size("128M") == 128 << 20
    assert parse_size("1g") == 1 << 30
    assert parse_size("64KiB") == 64 << 10
    assert parse_size("4096") == 4096
    assert parse_size("0") == 0
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_binlake_bench_lag_forwards_its_options() -> None:
    from click.testing import CliRunner

    from binlake.bench.cli import bench

    result = CliRunner().invoke(bench, ["--lag", "--rates", "fast", "--seconds", "5"])
    assert result.exit_code == 2
    assert "rate 'fast' is not a number" in result.output + str(result.stderr_bytes or b"")


def test_batch_model_fits_fixed_and_marginal_cost() -> None:
    from binlake.bench.lag_bench import batch_model

    # 30 s per batch plus 2,500 changes/s (a tiny batch pins the fixed part)
    fixed, marginal = batch_model([(50, 30.02), (100_000, 70.0), (150_000, 90.0)])
    assert fixed == pytest.approx(30.0, abs=0.1) and marginal == pytest.approx(2500, rel=0.01)
    assert batch_model([(100, 5.0)]) is None  # one size: no slope
    assert batch_model([(100, 5.0), (100, 6.0)]) is None
    assert batch_model([(100, 9.0), (50_000, 5.0)]) is None  # bigger was faster: no cost seen


def test_keeping_up_needs_drain_no_growth_and_a_rate_below_the_marginal() -> None:
    from binlake.bench.lag_bench import keeps_up

    assert keeps_up(True, True, marginal_per_s=2500, written_per_s=2000)
    assert keeps_up(None, True, marginal_per_s=2500, written_per_s=2000)  # too few for a trend
    assert keeps_up(True, True, marginal_per_s=None, written_per_s=2000)  # no cost seen
    assert not keeps_up(True, True, marginal_per_s=2500, written_per_s=5000)  # a queue grows
    assert not keeps_up(False, True, marginal_per_s=9000, written_per_s=2000)  # lag grew
    assert not keeps_up(True, False, marginal_per_s=9000, written_per_s=2000)  # never drained


def test_summary_names_each_rate_and_the_verdicts() -> None:
    from binlake.bench.lag_bench import format_summary

    def ph(rate: int, bounded: bool, trend: bool | None, cap: int) -> dict:
        return {"rate": rate, "achieved_per_s": rate, "writer_kept_rate": True, "transactions": 9,
                "p50_s": 1.0, "p99_s": 2.0, "max_s": 2.5, "batches": 5, "batch_apply_s": 1.2,
                "batch_fixed_s": 1.0, "batch_marginal_per_s": cap, "growth_s": 0.1,
                "drained": True,
                "trend_bounded": trend, "bounded": bounded, "load_avg": {"end": [1.5, 1, 1]}}

    rss = {"driver_mb": 90.0, "jvm_mb": 1500.0, "python_worker_mb": 100.0, "tree_mb": 2000.0}
    doc = {"mode": "lag", "config": {"trigger": 0.5}, "highest_bounded_rate": 500,
           "phases": [ph(500, True, True, 900), ph(2000, False, None, 1200),
                      ph(5000, False, False, 6000)],
           "sync": {"peak_rss_mb": rss}, "equal": True}
    text = format_summary(doc)
    assert "500/s" in text and "-> bounded" in text and "NOT keeping up" in text
    assert "GROWING" in text and "highest rate with bounded lag: 500/s" in text
    assert "JVM 1500.0 MB" in text and "Delta == MariaDB after the run: True" in text


def test_split_lead_times_only_what_was_written_after_the_warm_up() -> None:
    from binlake.bench.lag_bench import split_lead

    txs = [((1, 100 + i), 1000.0 + i) for i in range(10)]  # one transaction a second
    wrote = {"txs": txs, "sizes": [10 + i for i in range(10)], "t0": 999.5,
             "changes": sum(10 + i for i in range(10)), "seconds": 9.5, "achieved_per_s": 0.0}
    timed, lead = split_lead(wrote, 4.0)  # the cut at 1003.5
    assert lead == txs[:4] and timed["txs"] == txs[4:]
    assert timed["changes"] == sum(10 + i for i in range(4, 10)) and timed["t0"] == 1003.5
    assert timed["seconds"] == 5.5 and timed["achieved_per_s"] == timed["changes"] / 5.5
    assert split_lead(wrote, 0.0) == (wrote, [])
