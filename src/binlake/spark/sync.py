"""`binlake sync`: keep Delta tables equal to MySQL/MariaDB tables, exactly once.

The job: an initial snapshot (parallel primary-key chunks with DBLog watermarks), then the
binlog stream from the snapshot's watermark, both applied by the same MERGE step (seq-ordered
upserts, tombstones, one Delta commit per batch and table carrying txnAppId/txnVersion).

Crash safety: the snapshot's watermarks are recorded (`pending`) before it is applied and the
stream starts at the lowest watermark of every attempt, so a snapshot re-taken after a crash
never leaves a gap; re-applied rows are ignored by the seq guard. Stream offsets live in
Spark's checkpoint and every batch commits with its batch id, so replays change nothing.
"""
from __future__ import annotations

import json
import logging
import re
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..atomic import atomic_write_text
from ..errors import BinlakeError, ConfigError
from .apply import ApplyConfig, TableOptions, apply_batch
from .arrow import file_index

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("binlake.sync")

SNAPSHOT_RETRIES = 3
"""Snapshot attempts when a table changes shape (DDL) while it is read."""


class SyncError(BinlakeError):
    """The sync cannot continue exactly (e.g. the binlog it needs is gone)."""


@dataclass
class SyncOptions:
    url: str
    tables: str
    warehouse: Path
    master: str = "local[*]"
    once: bool = False
    """Catch up to the primary's current end, then stop (Trigger.AvailableNow)."""
    scd_type: int = 1
    change_log: bool = False
    max_rows_per_trigger: int | None = None
    trigger_seconds: float = 1.0
    snapshot: bool = True
    chunk_size: int | None = None
    conf: dict[str, str] = field(default_factory=dict)


@dataclass
class SyncReport:
    snapshot_rows: int = 0
    batches: int = 0
    rows: int = 0
    last_lag_s: float | None = None
    stream_start: str | None = None


class SyncState:
    """The job's own small state file: app id and snapshot watermarks (atomic writes)."""

    def __init__(self, warehouse: Path) -> None:
        self.path = warehouse / "_binlake" / "sync.json"
        try:
            self.data: dict[str, Any] = json.loads(self.path.read_text())
        except FileNotFoundError:
            self.data = {"app_id": f"binlake-{uuid.uuid4().hex[:12]}", "attempts": []}

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps(self.data, indent=1))


def _key(pos: str) -> tuple[int, int]:
    file, _, offset = pos.rpartition(":")
    return file_index(file), int(offset)


def _binlog_boundary(url: str) -> str:
    """The primary's binlog end as FILE:POS, a transaction boundary a stream can start at."""
    from ..replica.url import ServerURL
    from .snapshot import _binlog_end, _high_watermark, connect

    conn = connect(ServerURL.parse(url))
    try:
        with conn.cursor() as cur:
            f, p = _high_watermark(cur, _binlog_end(cur))
    finally:
        conn.close()
    return f"{f}:{p}"


def _shape_changed(exc: BaseException) -> bool:
    text = str(exc)
    return "SnapshotError" in text and ("snapshot again" in text or "changed shape" in text
                                        or "changed since the snapshot" in text)


_UNAVAILABLE = re.compile(r"(?:OffsetUnavailable|PositionUnavailable): (.+)")


def _stream_failure(exc: BaseException, opts: SyncOptions) -> BaseException:
    """A stream failure as the user should read it: a purged binlog names the position and
    the way out (a new snapshot); anything else unchanged."""
    text = str(exc)
    if "OffsetUnavailable" not in text and "PositionUnavailable" not in text:
        return exc
    found = _UNAVAILABLE.findall(text)
    detail = (found[-1] if found else text).strip().splitlines()[0]
    detail = detail.split(" (the changes after it")[0].split(" (re-snapshot")[0]
    return SyncError(
        f"binlake sync cannot continue: {detail}",
        hint=f"the changes after that position are gone from the primary: re-snapshot into a "
             f"new warehouse (or delete {opts.warehouse} first) and run binlake sync again; "
             "keep binlog retention longer than the longest pause of the sync")


def _spec_resolver(url: str) -> Callable[[str, str], Any]:
    """Table shapes for the apply step from information_schema (the current shape)."""
    from ..replica.url import ServerURL
    from .snapshot import connect
    from .typing import read_table_spec

    server = ServerURL.parse(url)

    def resolve(schema: str, table: str) -> Any:
        conn = connect(server)
        try:
            return read_table_spec(conn, schema, table)
        finally:
            conn.close()

    return resolve


def run_snapshot(spark: "SparkSession", opts: SyncOptions, state: SyncState,
                 config: ApplyConfig, specs: Callable[[str, str], Any]) -> int:
    """Take and apply the initial snapshot once; returns its row count."""
    from pyspark.sql import functions as F

    from .snapshot import ROW_OP, read_snapshot

    # Delta MERGE needs a key: tables without a primary key are refused at planning, loudly.
    extra: dict[str, Any] = {"noKeyPolicy": "error"}
    if opts.chunk_size:
        extra["chunkSize"] = opts.chunk_size
    for tries in range(1, SNAPSHOT_RETRIES + 1):
        # The binlog end before planning: a table created after this point is not in the
        # snapshot, and all of its rows are in the binlog after it, so the stream starts here
        # (changes of snapshot tables before their chunk's HIGH are ignored by the seq guard).
        planned = _binlog_boundary(opts.url)
        try:
            df, wm = read_snapshot(spark, opts.url, opts.tables, **extra)
            break
        except Exception as exc:  # Spark wraps the executor's SnapshotError
            if tries == SNAPSHOT_RETRIES or not _shape_changed(exc):
                raise
            log.warning("a table changed shape during the snapshot; taking it again",
                        extra={"attempt": tries})
    attempt = len(state.data["attempts"])
    high = f"{wm.stream_start.file}:{wm.stream_start.pos}"
    start = min(planned, high, key=_key)
    state.data["attempts"].append(start)
    state.data["pending"] = True
    state.save()  # before applying: a crash now still streams from this watermark
    snap_config = replace(config, app_id=f"{state.data['app_id']}-snapshot-{attempt}")
    apply_batch(spark, df, 0, snap_config, specs)
    rows = df.where(F.col("op") == ROW_OP).count()
    state.data["pending"] = False
    state.data["snapshot_done"] = True
    state.data["stream_start"] = min(state.data["attempts"], key=_key)
    state.save()
    return rows


def run_sync(opts: SyncOptions, spark: "SparkSession | None" = None,
             on_progress: Callable[[dict[str, Any]], None] | None = None) -> SyncReport:
    """Snapshot if needed, then stream into the Delta tables until stopped (or caught up)."""
    from .session import build_session

    if not opts.tables:
        raise ConfigError("choose the tables to sync", hint="--tables 'db.*,db2.t'")
    opts.warehouse.mkdir(parents=True, exist_ok=True)
    spark = spark or build_session("binlake-sync", master=opts.master, conf=opts.conf)
    state = SyncState(opts.warehouse)
    state.save()
    config = ApplyConfig(target=str(opts.warehouse), app_id=state.data["app_id"],
                         default=TableOptions(scd_type=opts.scd_type), include=opts.tables,
                         change_log=opts.change_log)
    specs = _spec_resolver(opts.url)
    report = SyncReport()
    if not state.data.get("snapshot_done"):
        if opts.snapshot:
            report.snapshot_rows = run_snapshot(spark, opts, state, config, specs)
            log.info("snapshot applied", extra={"rows": report.snapshot_rows,
                                                "stream_start": state.data["stream_start"]})
        else:
            state.data.update(snapshot_done=True, stream_start="latest")
            state.save()
    report.stream_start = state.data["stream_start"]

    reader = (spark.readStream.format("binlake").option("url", opts.url)
              .option("tables", opts.tables).option("startingPosition", state.data["stream_start"]))
    if opts.max_rows_per_trigger:
        reader = reader.option("maxRowsPerTrigger", str(opts.max_rows_per_trigger))
    lock = threading.Lock()

    def handle(batch: "DataFrame", batch_id: int) -> None:
        from pyspark.sql import functions as F

        t0 = time.monotonic()
        apply_batch(batch.sparkSession, batch, batch_id, config, specs)
        t1 = time.monotonic()
        stats = batch.agg(F.count("*").alias("n"), F.max("ts").alias("ts")).collect()[0]
        log.debug("batch timing", extra={"apply_s": t1 - t0, "count_s": time.monotonic() - t1})
        with lock:
            report.batches += 1
            report.rows += int(stats["n"])
            if stats["ts"] is not None:
                report.last_lag_s = max(0.0, time.time() - stats["ts"].timestamp())
        info = {"batch": batch_id, "rows": int(stats["n"]), "lag_s": report.last_lag_s}
        log.info("batch applied", extra=info)
        if on_progress is not None:
            on_progress(info)

    writer = (reader.load().writeStream.foreachBatch(handle)
              .option("checkpointLocation", str(opts.warehouse / "_binlake" / "checkpoint")))
    writer = writer.trigger(availableNow=True) if opts.once else \
        writer.trigger(processingTime=f"{opts.trigger_seconds} seconds")
    query = writer.start()
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            while query.isActive and not stop.is_set():
                query.awaitTermination(0.5)
            if stop.is_set() and query.isActive:
                query.stop()  # graceful: the running batch finishes or is replayed exactly once
            exc = query.exception()
            if exc is not None:
                raise exc
        except Exception as exc:  # awaitTermination raises the query's failure itself
            err = _stream_failure(exc, opts)
            if err is exc:
                raise
            raise err from None
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return report
