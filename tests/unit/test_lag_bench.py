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
