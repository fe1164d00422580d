"""Sync metrics (Prometheus text, file and HTTP) and the structured log formatters."""
from __future__ import annotations

import json
import logging
import urllib.request
from pathlib import Path

from binlake.cli.logs import JsonFormatter, KeyValueFormatter
from binlake.spark.metrics import SyncMetrics


def _parse(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if not line.startswith("#"))


def test_metrics_count_batches_and_write_the_file(tmp_path: Path) -> None:
    m = SyncMetrics(tmp_path / "metrics.prom")
    m.snapshot_done(500)
    info = m.batch_applied(3, 120, 2.0, 1.5, ("mariadb-bin.000007", 4242))
    m.batch_applied(4, 30, 0.5, None)
    assert info == {"apply_s": 2.0, "changes_per_s": 60.0}
    values = _parse((tmp_path / "metrics.prom").read_text())
    assert values["binlake_sync_snapshot_rows_total"] == "500"
    assert values["binlake_sync_batches_total"] == "2"
    assert values["binlake_sync_changes_total"] == "150"
    assert values["binlake_sync_last_batch_id"] == "4"
    assert values["binlake_sync_changes_per_second"] == "60"
    assert values["binlake_sync_lag_seconds"] == "1.5"  # kept from the last batch that had one
    assert values["binlake_sync_binlog_file_index"] == "7"
    assert values["binlake_sync_binlog_position"] == "4242"
    assert "# TYPE binlake_sync_changes_total counter" in m.render()


def test_metrics_are_served_over_http() -> None:
    m = SyncMetrics()
    port = m.serve(0)
    try:
        m.batch_applied(1, 10, 1.0, 0.2)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert _parse(body)["binlake_sync_changes_total"] == "10"
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=5)
            raise AssertionError("expected 404")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        m.close()


def _record(**extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("binlake.sync", logging.INFO, __file__, 1, "batch applied", None, None)
    rec.__dict__.update(extra)
    return rec


def test_log_formatters_keep_the_extra_fields() -> None:
    text = KeyValueFormatter().format(_record(batch=3, lag_s=1.25, where="a b"))
    assert text.endswith('batch applied batch=3 lag_s=1.25 where="a b"')
    obj = json.loads(JsonFormatter().format(_record(batch=3, lag_s=1.25)))
    assert obj["msg"] == "batch applied" and obj["batch"] == 3 and obj["lag_s"] == 1.25
    assert obj["level"] == "INFO" and obj["logger"] == "binlake.sync"


def test_setup_routes_logs_and_quiets_py4j() -> None:
    import logging

    from binlake.cli import logs

    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("py4j").level
    try:
        logs.setup(logging.INFO)
        assert len(root.handlers) == 1 and root.level == logging.INFO
        assert not logging.getLogger("py4j").isEnabledFor(logging.INFO)
        assert logging.getLogger("binlake.sync").isEnabledFor(logging.INFO)
        logs.setup(logging.DEBUG)
        assert logging.getLogger("py4j").isEnabledFor(logging.WARNING)
    finally:
        root.handlers[:], lvl, py4j = saved
        root.setLevel(lvl)
        logging.getLogger("py4j").setLevel(py4j)
