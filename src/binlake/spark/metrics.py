"""Metrics of a running `binlake sync`: lag, rates and totals, for dashboards and alerts.

Two ways out, both in the Prometheus text format (the lingua franca of metrics scrapers):
a file rewritten atomically after every micro-batch (`WAREHOUSE/_binlake/metrics.prom`, for
node_exporter's textfile collector or a plain `cat`), and optionally an HTTP endpoint
(`--metrics-port`, bound to 127.0.0.1) serving `/metrics`.

Lag is measured from the commit timestamp of the newest change in a batch (the binlog
event's timestamp, whole seconds) to the moment the batch's Delta commits are done.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .._util.atomic import atomic_write_text

_HELP = {
    "binlake_sync_batches_total": ("counter", "Micro-batches applied to Delta."),
    "binlake_sync_changes_total": ("counter", "Change records applied to Delta."),
    "binlake_sync_snapshot_rows_total": ("counter", "Rows written by the initial snapshot."),
    "binlake_sync_last_batch_id": ("gauge", "Spark batch id of the last applied micro-batch."),
    "binlake_sync_last_batch_changes": ("gauge", "Change records in the last micro-batch."),
    "binlake_sync_last_batch_seconds": ("gauge", "Seconds the last micro-batch took to apply."),
    "binlake_sync_changes_per_second": ("gauge", "Changes per second of the last micro-batch."),
    "binlake_sync_lag_seconds": ("gauge", "Newest applied commit's age when its batch landed."),
    "binlake_sync_last_success_timestamp_seconds": ("gauge", "Unix time of the last applied batch."),
    "binlake_sync_binlog_file_index": ("gauge", "Binlog file number the last batch ended in."),
    "binlake_sync_binlog_position": ("gauge", "Byte offset the last batch ended at."),
}


@dataclass
class SyncMetrics:
    """Counters and gauges of one sync job; thread-safe (batches may apply concurrently)."""

    path: Path | None = None
    values: dict[str, float] = field(default_factory=lambda: {
        "binlake_sync_batches_total": 0, "binlake_sync_changes_total": 0,
        "binlake_sync_snapshot_rows_total": 0})
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _server: ThreadingHTTPServer | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._write()  # the file describes this run from its start, not a previous one

    def snapshot_done(self, rows: int) -> None:
        with self._lock:
            self.values["binlake_sync_snapshot_rows_total"] += rows
        self._write()

    def batch_applied(self, batch_id: int, changes: int, seconds: float, lag_s: float | None,
                      end: tuple[str, int] | None = None) -> dict[str, Any]:
        """Record one applied micro-batch; returns the figures for the log line."""
        rate = changes / seconds if seconds > 0 else 0.0
        with self._lock:
            v = self.values
            v["binlake_sync_batches_total"] += 1
            v["binlake_sync_changes_total"] += changes
            v["binlake_sync_last_batch_id"] = batch_id
            v["binlake_sync_last_batch_changes"] = changes
            v["binlake_sync_last_batch_seconds"] = round(seconds, 3)
            v["binlake_sync_changes_per_second"] = round(rate, 1)
            v["binlake_sync_last_success_timestamp_seconds"] = round(time.time(), 3)
            if lag_s is not None:
                v["binlake_sync_lag_seconds"] = round(lag_s, 3)
            if end is not None:
                from ..cdc.arrow import file_index

                v["binlake_sync_binlog_file_index"] = file_index(end[0])
                v["binlake_sync_binlog_position"] = end[1]
        self._write()
        return {"apply_s": round(seconds, 3), "changes_per_s": round(rate, 1)}

    def render(self) -> str:
        """The Prometheus text exposition of every value set so far."""
        with self._lock:
            items = dict(self.values)
        lines = []
        for name, value in items.items():
            kind, text = _HELP[name]
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}",
                      f"{name} {int(value) if float(value).is_integer() else value}"]
        return "\n".join(lines) + "\n"

    def _write(self) -> None:
        if self.path is not None:
            atomic_write_text(self.path, self.render())

    def serve(self, port: int) -> int:
        """Serve /metrics on 127.0.0.1:port (0: any free port) from a daemon thread."""
        metrics = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                body = metrics.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass  # scrapes every few seconds would flood the job's log

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self._server.serve_forever, name="binlake-metrics",
                         daemon=True).start()
        return self._server.server_address[1]

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
