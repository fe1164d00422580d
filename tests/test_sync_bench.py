"""The pipeline benchmark's row comparison: values read through PyMySQL and through Spark
compare equal exactly when they are the same value in two representations."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from binlake.bench.sync_bench import _normalizer, _time_text, sync_phases


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
