"""The pipeline benchmark's row comparison: values read through PyMySQL and through Spark
compare equal exactly when they are the same value in two representations."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from binlake.bench.common import normalizer as _normalizer
from binlake.bench.common import time_text as _time_text
from binlake.bench.sync_bench import sync_phases


def test_time_text_matches_spark_strings() -> None:
    assert _time_text(timedelta(days=8, seconds=42227, microseconds=430000), 3) == "203:43:47.430"
    assert _time_text(-timedelta(hours=1, microseconds=5000), 3) == "-01:00:00.005"
    assert _time_text(timedelta(seconds=59), 0) == "00:00:59"


def test_normalizer_same_value_two_forms() -> None:
    bit, flt, big = _normalizer("bit", 0), _normalizer("float", 0), _normalizer("bigint", 0)
    assert bit(b"\x0b\x04") == bit(2820) and bit(b"\x0b\x04") != bit(2821)
    assert flt(505465.0) == flt(505465.0625) and flt(505465.0) != flt(505466.0)
    assert big(9223372036854775825) == big(Decimal(9223372036854775825))
    dec = _normalizer("decimal", 0)
    assert dec(Decimal("1.50")) == dec("1.50") and dec(Decimal("1.50")) != dec("1.5")
    assert _normalizer("varchar", 0)(None) is None


def test_sync_phases_from_json_log_lines() -> None:
    """The startup bench's phases come from `binlake sync --log-json` lines, in seconds from
    the launch; other lines (Spark's own, on the same stderr) are skipped."""
    t0 = 1_000.0
    text = "\n".join([
        "26/11/28 13:37:16 WARN SparkStringUtils: Truncated the string",
        '{"ts": 1004.5, "level": "INFO", "logger": "binlake.sync", '
        '"msg": "spark session ready", "start_s": 3.9}',
        '{"ts": 1006.25, "level": "INFO", "logger": "binlake.sync", "msg": "snapshot applied"}',
        '{"ts": 1012.0, "level": "INFO", "logger": "binlake.sync", "msg": "batch applied", '
        '"batch": 0, "rows": 5, "apply_s": 2.5}',
        "{not json",
    ])
    got = sync_phases(text, t0)
    assert got == {"session_ready_s": 4.5, "session_start_s": 3.9, "snapshot_s": 6.25,
                   "batches": [{"start_s": 9.5, "apply_s": 2.5, "rows": 5}]}


def test_summary_names_every_snapshot_comparison() -> None:
    """The printed summary carries the warm, cold and write-floor figures of the JSON."""
    from binlake.bench.sync_bench import format_summary

    cold = {"binlake": {"wall_s": 40.0, "snapshot_s": 30.0, "batches": []},
            "jdbc": {"done_s": 20.0}, "write": {"done_s": 15.0}, "x_jdbc": 0.67, "x_write": 2.0}
    doc = {"snapshot": {"rows": 10, "seconds": 5.0, "rows_per_s": 2, "jdbc_s": 4.0,
                        "x_jdbc": 0.8, "write_s": 2.0, "x_write": 2.5,
                        "warm": {"seconds": 3.0, "x_jdbc": 1.33, "x_write": 1.5}, "cold": cold},
           "catch_up": {"changes": 7, "seconds": 1.0, "changes_per_s": 7, "batches": 1,
                        "merge_s": 0.5, "x_merge": 2.0, "append_s": 0.25, "x_append": 4.0},
           "peak_rss_mb": {"driver_python": 1.0, "jvm": 2.0}, "equal": True}
    text = format_summary(doc)
    assert "write floor (Arrow in the driver -> Delta): 2.0 s" in text
    assert "warm (second run, same session): 3.0 s; x_jdbc 1.33" in text
    assert "binlake 30.0 s (exit 40.0 s), jdbc 20.0 s, write floor 15.0 s" in text
    assert "catch-up: 7 changes in 1.0 s" in text


def test_batch_recorder_keeps_each_batch_with_memory() -> None:
    """Each applied batch is kept with its figures and the driver's memory right after it."""
    from binlake.bench.sync_bench import batch_recorder

    got: list[dict] = []
    record = batch_recorder(None, got)  # no session: the JVM's memory is unknown
    record({"batch": 3, "rows": 120, "apply_s": 1.5, "read_by": "driver", "driver_read_s": 0.2})
    record({"batch": 4, "rows": 7, "apply_s": 0.5, "read_by": "executors", "driver_read_s": None})
    assert [(b["batch"], b["changes"], b["apply_s"], b["read_by"]) for b in got] == \
        [(3, 120, 1.5, "driver"), (4, 7, 0.5, "executors")]
    assert all(b["driver_rss_mb"] > 10 and b["driver_peak_mb"] >= b["driver_rss_mb"] * 0.5
               and b["jvm_rss_mb"] is None for b in got)
