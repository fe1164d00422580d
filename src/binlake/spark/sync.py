"""`binlake sync`: keep Delta tables equal to MySQL/MariaDB tables, exactly once.

The job: an initial snapshot (parallel primary-key chunks with DBLog watermarks), then the
binlog stream from the snapshot's watermark, both applied by the same MERGE step (seq-ordered
upserts, tombstones, one Delta commit per batch and table carrying txnAppId/txnVersion).

Crash safety: the snapshot's watermarks are recorded (`pending`) before it is applied and the
stream starts at the lowest watermark of every attempt, so a snapshot re-taken after a crash
never leaves a gap; re-applied rows are ignored by the seq guard. Stream offsets live in
Spark's checkpoint and every batch commits with its batch id, so replays change nothing.

Table shapes: the schema history (`WAREHOUSE/_binlake/schema_history.json`) is bootstrapped
from information_schema just before the first snapshot attempt is planned, and that position
is where the stream starts, so the history is exact there without binlog_row_metadata=FULL;
the stream source keeps it up to date across DDL (option `schemaHistory`). Each stream batch
is applied with the shapes the history gives at the batch's end offset (from Spark's offset
log), not with information_schema's shapes at apply time (which may already be past a later
DDL). The snapshot itself is applied with information_schema's shapes (what it read).

Stream batches are read by the driver: the source records the ranges it planned for each
batch (`rangeLog`), `handle` reads them with the same code the executors would run
(`stream_source.read_planned`) and `apply_batch` folds each table per key there (`cdc.net`),
so Spark only MERGEs the net rows. The driver holds one batch's CDC rows and their net at a
time, at most four times the batch limit of them (a larger transaction goes the executor
way); admission control (`--max-bytes-per-trigger`, `default_max_bytes_per_trigger`) keeps
batches below that.
"""
from __future__ import annotations

import json
import logging
import os
import re
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .._util import memory
from .._util.atomic import atomic_write_text
from ..errors import BinlakeError, ConfigError
from ..progress import Progress
from .apply import ApplyConfig, TableOptions, apply_batch
from ..cdc.arrow import file_index
from .metrics import SyncMetrics

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("binlake.sync")

_KILL_AFTER_APPLY = int(os.environ.get("BINLAKE_FAULT_KILL_AFTER_APPLY", "0") or 0)
"""Tests only: SIGKILL the job right after the Nth micro-batch's Delta commits."""

SNAPSHOT_RETRIES = 3
"""Snapshot attempts when a table changes shape (DDL) while it is read."""


PROGRESS_EVERY = 15.0
"""Seconds between progress lines while a snapshot or a catch-up batch runs."""


class Ticker:
    """While a long step runs, a log line every `every` seconds saying what and for how long
    (so a user never watches a silent job); `note` may add fields to each line."""

    def __init__(self, what: str, every: float = PROGRESS_EVERY,
                 note: Callable[[], dict[str, Any]] | None = None) -> None:
        self.what, self.every, self.note = what, every, note
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            extra = {"step": self.what, "elapsed_s": round(time.monotonic() - self.t0, 1)}
            if self.note is not None:
                try:
                    extra.update(self.note())
                except Exception:  # noqa: BLE001 - a progress line is never worth a failure
                    pass
            log.info("still working", extra=extra)

    def __enter__(self) -> "Ticker":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


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
    max_bytes_per_trigger: int | None = None
    """Binlog bytes per micro-batch (None: `default_max_bytes_per_trigger()`; 0: no limit)."""
    trigger_seconds: float = 1.0
    snapshot: bool = True
    chunk_size: int | None = None
    conf: dict[str, str] = field(default_factory=dict)
    metrics_port: int | None = None
    """Also serve the metrics over HTTP on 127.0.0.1 at this port (0: any free port)."""
    writer: str = "auto"
    """Who writes the Delta tables: "driver" (delta-rs in the driver: the first snapshot's
    new tables, read and typed there, and each batch's folded SCD1 MERGEs; no rows through
    Spark), "spark" (a snapshot task per chunk, every MERGE in Spark), or "auto": the
    driver on a local master, Spark on a cluster."""


@dataclass
class SyncReport:
    snapshot_rows: int = 0
    batches: int = 0
    rows: int = 0
    last_lag_s: float | None = None
    stream_start: str | None = None
    metrics_port: int | None = None
    snapshot_s: float | None = None
    """Seconds the snapshot took in this run (None: none taken)."""


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


SYNC_MIN_BYTES_PER_TRIGGER = 64 << 20
SYNC_MAX_BYTES_PER_TRIGGER = 256 << 20


def default_max_bytes_per_trigger(total_memory: int | None = None) -> int:
    """Admission control by default: a backlog is applied in micro-batches of at most this
    many binlog bytes (whole transactions; one larger transaction goes alone), so a batch's
    cached changes and MERGE stay bounded however far behind the sync starts. Bytes, not
    rows: the driver finds the cut without decoding a row image.

    A 96th of the machine's memory, 64 to 256 MiB: the driver's peak while it folds a batch
    is about ten times the batch's binlog bytes, and every batch MERGEs each table it
    touches once, so larger batches rewrite the tables fewer times."""
    total = memory.total_memory() if total_memory is None else total_memory
    if total is None:
        return SYNC_MIN_BYTES_PER_TRIGGER
    return max(SYNC_MIN_BYTES_PER_TRIGGER, min(SYNC_MAX_BYTES_PER_TRIGGER, total // 96))


SYNC_PARTITION_BYTES = 8 << 20
"""Binlog bytes above which a batch's range is split between readers (the source's
`partitionBytes`)."""


def schema_history_path(warehouse: Path) -> Path:
    """The stream's schema history, beside its checkpoint."""
    return warehouse / "_binlake" / "schema_history.json"


def range_log_path(warehouse: Path) -> Path:
    """Where the stream source records each batch's ranges for the driver to read."""
    return warehouse / "_binlake" / "ranges"


def checkpoint_path(warehouse: Path) -> Path:
    return warehouse / "_binlake" / "checkpoint"


def _key(pos: str) -> tuple[int, int]:
    file, _, offset = pos.rpartition(":")
    return file_index(file), int(offset)


def _binlog_boundary(url: str) -> str:
    """The primary's binlog end as FILE:POS, a transaction boundary a stream can start at."""
    from ..replica.url import ServerURL
    from ..snapshot.server import binlog_end, connect

    conn = connect(ServerURL.parse(url))
    try:
        with conn.cursor() as cur:
            f, p = binlog_end(cur)
    finally:
        conn.close()
    return f"{f}:{p}"


def _shape_changed(exc: BaseException) -> bool:
    """A table changed shape under the snapshot: raised in the driver (a table read there)
    or wrapped by Spark from an executor's task."""
    from ..snapshot.server import SnapshotError

    text = str(exc)
    return (isinstance(exc, SnapshotError) or "SnapshotError" in text) and ("snapshot again" in text or "changed shape" in text
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


def batch_end(checkpoint: Path, batch_id: int) -> tuple[str, int] | None:
    """The end offset (file, pos) of a micro-batch, from Spark's offset log ('v1', the batch
    metadata, then one offset per source: ours is the only one); None when unreadable."""
    try:
        lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
        offset = json.loads(lines[-1])
        return str(offset["file"]), int(offset["pos"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


class HistorySpecs:
    """Apply's table shapes from the schema history file, at a batch's binlog position.

    `at(end)` is the `specs` resolver for one batch: each table's shape at the batch's end
    offset (after every DDL in the batch: new columns reach the Delta table even before a row
    carries them); a table dropped by then keeps its last shape (its rows before the drop are
    still in the batch). `shape(schema, table, file, pos)` answers for any position (for an
    apply that cuts a batch at its DDL). Without a history file every answer comes from
    `fallback` (information_schema now).
    """

    def __init__(self, path: Path, fallback: Callable[[str, str], Any]) -> None:
        self.path = path
        self.fallback = fallback
        self._sig: tuple[int, int, int] | None = None
        self._history: Any = None

    def history(self) -> Any:
        """The file's history, read again whenever the file was replaced."""
        from .stream_source import load_schema_history

        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._sig = self._history = None
            return None
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        if sig != self._sig:
            self._history = load_schema_history(self.path)[0]
            self._sig = sig
        return self._history

    def shape(self, schema: str, table: str, file: str | None, pos: int) -> Any:
        """The TableSpec of a table at a binlog position (None: the history never had it)."""
        from ..schema.history import BinlogPos
        from ..schema.spec import TableSpec

        h = self.history()
        if h is None:
            return self.fallback(schema, table)
        key = h.head_catalog().key(schema, table)
        at = BinlogPos(file, pos) if file is not None else None
        td = h.table_at(key, at)
        if td is None:  # dropped (or renamed away) by then: its last shape before
            earlier = [v.table for v in h.versions.get(key, ())
                       if v.table is not None and (at is None or v.since <= at)]
            td = earlier[-1] if earlier else None
        return None if td is None else TableSpec.from_table_def(td)

    def at(self, end: tuple[str, int] | None) -> Callable[[str, str], Any]:
        """The resolver for a batch ending at `end` (None: the history's newest shapes)."""
        if self.history() is None:
            return self.fallback
        return BatchShapes(self, end)


class BatchShapes:
    """`specs` for one batch: `(schema, table)` -> the shape at the batch's end; `shape_at`
    answers for any position of the batch (the shape a row or a DDL saw)."""

    def __init__(self, source: HistorySpecs, end: tuple[str, int] | None) -> None:
        self.source = source
        self.end = end

    def __call__(self, schema: str, table: str) -> Any:
        file, pos = self.end if self.end is not None else (None, 0)
        return self.source.shape(schema, table, file, pos)

    def shape_at(self, schema: str, table: str, file: str, pos: int) -> Any:
        return self.source.shape(schema, table, file, pos)


def _spec_resolver(url: str) -> Callable[[str, str], Any]:
    """Table shapes for the apply step from information_schema (the current shape)."""
    from ..replica.url import ServerURL
    from ..schema.spec import read_table_spec
    from ..snapshot.server import connect

    server = ServerURL.parse(url)

    def resolve(schema: str, table: str) -> Any:
        conn = connect(server)
        try:
            return read_table_spec(conn, schema, table)
        finally:
            conn.close()

    return resolve


def _bootstrap_history(opts: SyncOptions, path: Path) -> str:
    """A new schema history from information_schema at the binlog end now (a boundary), saved
    before anything streams from there; returns that position as FILE:POS."""
    from .stream_source import bootstrap_schema_history, save_schema_history

    h = bootstrap_schema_history(opts.url, opts.tables)
    assert h is not None and h.start is not None
    save_schema_history(path, h, h.start, opts.tables)
    return f"{h.start.file}:{h.start.pos}"


def run_snapshot(spark: "SparkSession | Callable[[], SparkSession]", opts: SyncOptions,
                 state: SyncState, config: ApplyConfig, specs: Callable[[str, str], Any],
                 master: str | None = None) -> int:
    """Take and apply the initial snapshot once; returns its row count.

    New SCD1 tables (the usual first sync) take the direct way (`snapshot_rows`: typed rows,
    one job and one commit per table); anything else (SCD2, the change log, a table left by
    an earlier attempt) goes through the CDC source and `apply_batch`. `spark` may be a
    callable returning the session (one still starting): the MySQL-side work before the
    first Spark job runs meanwhile. `master`: the session's master (default `opts.master`),
    which decides the "auto" snapshot writer."""
    session: Callable[[], "SparkSession"] = spark if callable(spark) else (lambda: spark)
    driver_writes = writes_in_driver(opts, master or opts.master)
    history = schema_history_path(opts.warehouse)
    for tries in range(1, SNAPSHOT_RETRIES + 1):
        # The binlog end before planning: a table created after this point is not in the
        # snapshot, and all of its rows are in the binlog after it, so the stream starts here
        # (changes of snapshot tables before their chunk's HIGH are ignored by the seq guard).
        if not state.data["attempts"] and tries == 1:
            # The first attempt: the schema history starts here (information_schema now is
            # the shape here), and so does the stream (the lowest start of all attempts).
            planned = _bootstrap_history(opts, history)
        else:
            planned = _binlog_boundary(opts.url)
        try:
            if _direct(opts, config):
                rows = _snapshot_direct(session, opts, state, config, planned, driver_writes)
            else:
                rows = _snapshot_via_apply(session(), opts, state, config, specs, planned)
            break
        except Exception as exc:  # Spark wraps the executor's SnapshotError
            if tries == SNAPSHOT_RETRIES or not _shape_changed(exc):
                raise
            log.warning("a table changed shape during the snapshot; taking it again",
                        extra={"attempt": tries})
    state.data["pending"] = False
    state.data["snapshot_done"] = True
    state.data["stream_start"] = min(state.data["attempts"], key=_key)
    state.save()
    return rows


def _any_table(warehouse: Path) -> str | None:
    """A synced Delta table of the warehouse (None: none yet)."""
    for log_dir in sorted(warehouse.glob("*/*/_delta_log")):
        if log_dir.parent.parent.name != "_binlake":
            return str(log_dir.parent)
    return None


def warm_delta(spark: "SparkSession", config: ApplyConfig, path: str | None) -> None:
    """What a DDL batch does first in Spark's Delta, done ahead and idle: open (create) the
    evolve journal, read a synced table's (`path`) history and a row. Nothing is committed
    to a synced table; a failure is only logged (the batch that needs it does it again)."""
    from delta.tables import DeltaTable

    from .evolve import open_journal

    t0 = time.monotonic()
    try:
        open_journal(spark, config, -1)
        if path is not None:
            DeltaTable.forPath(spark, path).history(1).collect()
            spark.read.format("delta").load(path).limit(1).collect()
    except Exception as exc:  # noqa: BLE001 - a warm-up only
        log.debug("Delta warm-up failed", extra={"why": str(exc)})
        return
    log.debug("Delta warmed", extra={"seconds": round(time.monotonic() - t0, 2)})


WRITERS = ("auto", "driver", "spark")


def writes_in_driver(opts: SyncOptions, master: str) -> bool:
    """Whether the driver writes the Delta tables with delta-rs (`SyncOptions.writer`): the
    direct snapshot's new tables and the folded SCD1 MERGEs. On a local master the driver
    is the only executor anyway, and delta-rs's native writes and MERGEs take a fraction of
    Spark's; a cluster's executors write."""
    from ..lake.write import available

    if opts.writer not in WRITERS:
        raise ConfigError(f"writer {opts.writer!r} is not one of {', '.join(WRITERS)}")
    if opts.writer == "spark":
        return False
    if not available():
        if opts.writer == "driver":
            raise ConfigError("the driver's writer needs the deltalake package",
                              hint="pip install deltalake, or --writer spark")
        return False
    return opts.writer == "driver" or master.strip().lower().startswith("local")


def _direct(opts: SyncOptions, config: ApplyConfig) -> bool:
    """Whether the snapshot can write its tables directly (`snapshot_rows`): SCD1, no change
    log, and no table of the sync in the warehouse yet."""
    if config.change_log or opts.scd_type != 1 or config.tables:
        return False
    root = opts.warehouse
    return not any(p.is_dir() and p.name != "_binlake" and any(p.iterdir())
                   for p in root.iterdir()) if root.is_dir() else True


def _start_attempt(state: SyncState, start: str) -> int:
    """Record an attempt's stream start before anything is written (a crash after this
    still streams from it); returns the attempt's number."""
    attempt = len(state.data["attempts"])
    state.data["attempts"].append(start)
    state.data["pending"] = True
    state.save()
    return attempt


def _snapshot_direct(session: Callable[[], "SparkSession"], opts: SyncOptions,
                     state: SyncState, config: ApplyConfig, planned: str,
                     driver_writes: bool) -> int:
    from ..snapshot.plan import DEFAULT_CHUNK_SIZE, plan_snapshot
    from .snapshot import DEFAULT_SERVER_ID_BASE
    from .snapshot_rows import write_tables

    chunks = plan_snapshot(opts.url, opts.tables, chunk_size=opts.chunk_size or DEFAULT_CHUNK_SIZE,
                           no_key="error")  # Delta MERGE needs a key: refused here, loudly
    attempt = _start_attempt(state, planned)  # every chunk's LOW is after `planned`
    log.info("snapshot: reading and writing the tables",
             extra={"tables": len({c.table.name for c in chunks}), "chunks": len(chunks)})
    app_id = f"{state.data['app_id']}-snapshot-{attempt}"
    shown = Progress("snapshot", log)
    with shown:
        done = write_tables(session, opts.url, chunks, config, app_id,
                            server_id_base=DEFAULT_SERVER_ID_BASE,
                            on_table=lambda t: shown.meter(t.name, t.total, "rows",
                                                           lambda m, t=t: t.rows_done()),
                            driver_writes=driver_writes)
    return sum(done.values())


def _snapshot_via_apply(spark: "SparkSession", opts: SyncOptions, state: SyncState,
                        config: ApplyConfig, specs: Callable[[str, str], Any],
                        planned: str) -> int:
    from pyspark.sql import functions as F

    from ..snapshot.watermarks import ROW_OP
    from .snapshot import read_snapshot

    # Delta MERGE needs a key: tables without a primary key are refused at planning, loudly.
    extra: dict[str, Any] = {"noKeyPolicy": "error"}
    if opts.chunk_size:
        extra["chunkSize"] = opts.chunk_size
    log.info("snapshot: reading the tables", extra={"tables": opts.tables})
    with Ticker("snapshot read"):
        df, wm = read_snapshot(spark, opts.url, opts.tables, **extra)
    high = f"{wm.stream_start.file}:{wm.stream_start.pos}"
    attempt = _start_attempt(state, min(planned, high, key=_key))
    # A snapshot reads each key once: a table it creates takes its rows as they are.
    snap_config = replace(config, app_id=f"{state.data['app_id']}-snapshot-{attempt}",
                          inserts_only=True)
    rows = df.where(F.col("op") == ROW_OP).count()  # the snapshot is local-checkpointed
    log.info("snapshot read; writing the Delta tables", extra={"rows": rows})
    with Ticker("snapshot write", note=lambda: {"rows": rows}):
        apply_batch(spark, df, 0, snap_config, specs)
    return rows


class CatchUp:
    """Binlog bytes a catch-up has behind it and ahead of it: from where the stream resumed
    (`start`) to the last applied batch's end (`at`) and to the primary's end now."""

    REFRESH = 5.0
    """Seconds between asks for the primary's binlog files."""

    def __init__(self, url: str, checkpoint: Path, stream_start: str | None) -> None:
        self.url = url
        self.start = _last_offset(checkpoint) or _parse_pos(stream_start)
        self.at: tuple[str, int] | None = self.start
        self._sizes: list[tuple[str, int]] = []
        self._asked = 0.0

    def _offset(self, pos: tuple[str, int]) -> int | None:
        """Bytes from the first listed binlog file's start to `pos`."""
        total = 0
        for name, size in self._sizes:
            if name == pos[0]:
                return total + pos[1]
            total += size
        return None

    def bytes_done(self, meter: Any) -> float:
        """Bytes applied since `start`; sets the meter's total to the bytes up to the end."""
        if time.monotonic() - self._asked >= self.REFRESH:
            self._asked = time.monotonic()
            self._sizes = _binlog_sizes(self.url)
        if self.start is None:  # "latest": starts at the end seen first
            if not self._sizes:
                return 0
            self.start = self.at = (self._sizes[-1][0], self._sizes[-1][1])
        base = self._offset(self.start)
        if base is None or not self._sizes:
            return meter.done
        end = sum(size for _, size in self._sizes)
        meter.total = max(0, end - base)
        now = self._offset(self.at) if self.at is not None else None
        return max(0, (now if now is not None else base) - base)


def _parse_pos(text: str | None) -> tuple[str, int] | None:
    if not text or ":" not in text:
        return None
    file, _, pos = text.rpartition(":")
    return (file, int(pos)) if pos.isdigit() else None


def _newest_batch(checkpoint: Path) -> int | None:
    """The newest batch id in Spark's offset log; None without one (or unreadable)."""
    try:
        ids = [int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    except OSError:
        return None
    return max(ids) if ids else None


def _last_offset(checkpoint: Path) -> tuple[str, int] | None:
    """The end offset of the newest batch in Spark's offset log, if any."""
    last = _newest_batch(checkpoint)
    return batch_end(checkpoint, last) if last is not None else None


def caught_up(url: str, checkpoint: Path, stream_start: str | None) -> bool:
    """Whether the primary's binlog ends where the stream would resume: at the newest
    batch's end when that batch is committed (an uncommitted one must be replayed), or at
    `stream_start` before any batch. False when unsure (e.g. a start at "latest", which
    only a running query records)."""
    last = _newest_batch(checkpoint)
    if last is None:
        if (checkpoint / "offsets").exists():
            return False  # an offset log without a batch we can read: let the query decide
        at = _parse_pos(stream_start)
    elif (checkpoint / "commits" / str(last)).is_file():
        at = batch_end(checkpoint, last)
    else:
        return False
    return at is not None and _parse_pos(_binlog_boundary(url)) == at


def _binlog_sizes(url: str) -> list[tuple[str, int]]:
    """(file, size) of the primary's binlog files, oldest first (SHOW BINARY LOGS)."""
    from ..replica.url import ServerURL
    from ..snapshot.server import connect, query_rows

    conn = connect(ServerURL.parse(url))
    try:
        with conn.cursor() as cur:
            return [(str(r[0]), int(r[1])) for r in query_rows(cur, "SHOW BINARY LOGS")]
    finally:
        conn.close()


def run_sync(opts: SyncOptions, spark: "SparkSession | None" = None,
             on_progress: Callable[[dict[str, Any]], None] | None = None) -> SyncReport:
    """Snapshot if needed, then stream into the Delta tables until stopped (or caught up)."""
    from .session import SessionStart

    if not opts.tables:
        raise ConfigError("choose the tables to sync", hint="--tables 'db.*,db2.t'")
    driver_writes = writes_in_driver(opts, opts.master)  # a bad --writer fails before the JVM
    opts.warehouse.mkdir(parents=True, exist_ok=True)
    # The JVM starts (seconds) while the snapshot does its MySQL-side work.
    session: Callable[[], "SparkSession"]
    if spark is None:
        session = SessionStart("binlake-sync", master=opts.master, conf=opts.conf).get
    else:
        given = spark
        session = lambda: given  # noqa: E731
    state = SyncState(opts.warehouse)
    state.save()
    # Tombstones stay on: a sync applies in binlog order, so no older change arrives late,
    # but `binlake verify` reads them to tell a key deleted after its source read from a
    # missing row (without them it reported such deletes as differences).
    if spark is not None:
        driver_writes = writes_in_driver(opts, spark.sparkContext.master)
    config = ApplyConfig(target=str(opts.warehouse), app_id=state.data["app_id"],
                         default=TableOptions(scd_type=opts.scd_type), include=opts.tables,
                         change_log=opts.change_log, driver_writes=driver_writes)
    specs = _spec_resolver(opts.url)
    history = HistorySpecs(schema_history_path(opts.warehouse), specs)
    ckpt = checkpoint_path(opts.warehouse)
    report = SyncReport()
    metrics = SyncMetrics(opts.warehouse / "_binlake" / "metrics.prom")
    if opts.metrics_port is not None:
        report.metrics_port = metrics.serve(opts.metrics_port)
        log.info("metrics served", extra={"url": f"http://127.0.0.1:{report.metrics_port}/metrics"})
    if not state.data.get("snapshot_done"):
        if opts.snapshot:
            t0 = time.monotonic()
            master = opts.master if spark is None else spark.sparkContext.master
            report.snapshot_rows = run_snapshot(session, opts, state, config, specs, master)
            report.snapshot_s = round(time.monotonic() - t0, 3)
            metrics.snapshot_done(report.snapshot_rows)
            log.info("snapshot applied", extra={"rows": report.snapshot_rows,
                                                "stream_start": state.data["stream_start"]})
        else:
            state.data.update(snapshot_done=True, stream_start="latest")
            state.save()
    report.stream_start = state.data["stream_start"]
    if opts.once and caught_up(opts.url, ckpt, state.data["stream_start"]):
        # Nothing was written since the last applied batch (or the snapshot): a streaming
        # query would start, run an empty batch and stop, seconds for nothing. The next run
        # starts where this one would have (the checkpoint's end, or `stream_start`).
        log.info("caught up: the binlog ends where the stream would start",
                 extra={"position": state.data["stream_start"]})
        shown = Progress("catch-up", log)
        shown.meter("binlog", unit="B", poll=lambda m: 0)
        shown.meter("changes", unit="changes", poll=lambda m: 0)
        with shown:
            pass
        metrics.close()
        return report
    spark_now = session()

    source = {"url": opts.url, "tables": opts.tables,
              "startingPosition": state.data["stream_start"],
              "schemaHistory": str(schema_history_path(opts.warehouse)),
              # A backlog's range is read and decoded in Python, one core per partition:
              # split it finely so every core reads (a split costs a connection and a seek).
              "partitionBytes": str(SYNC_PARTITION_BYTES),
              # The source records each batch's ranges, so the driver reads the batch itself.
              "rangeLog": str(range_log_path(opts.warehouse))}
    if opts.max_rows_per_trigger:
        source["maxRowsPerTrigger"] = str(opts.max_rows_per_trigger)
    max_bytes = (default_max_bytes_per_trigger() if opts.max_bytes_per_trigger is None
                 else opts.max_bytes_per_trigger)
    # The driver reads a batch itself unless its row images pass this (a transaction larger
    # than the limit goes alone, and the executors read it).
    from .stream_source import DRIVER_BATCH_BYTES

    driver_limit = max(DRIVER_BATCH_BYTES, 4 * max_bytes)
    if max_bytes:
        source["maxBytesPerTrigger"] = str(max_bytes)
    reader = spark_now.readStream.format("binlake").options(**source)
    lock = threading.Lock()
    # A long-running sync whose MERGEs run in the driver leaves Spark's Delta cold: warm it
    # once, so the first DDL batch does not pay its first uses (a `--once` run has no later).
    warm = [True] if config.driver_writes and not opts.once else []

    def handle(batch: "DataFrame", batch_id: int) -> None:
        from .stream_source import read_planned

        t0 = time.monotonic()
        end = batch_end(ckpt, batch_id)
        # The driver reads and folds the batch itself (no executor read, no typing in
        # Spark), unless the source did not record its ranges or it is too large.
        arrow = read_planned(source, end, limit=driver_limit) if end is not None else None
        read_s = time.monotonic() - t0
        # Shapes at the batch's end (the offset log is written before the batch runs).
        result = apply_batch(batch.sparkSession, batch, batch_id, config, history.at(end),
                             arrow=arrow)
        catch_up.at = end or catch_up.at  # applied: its bytes are done
        if _KILL_AFTER_APPLY and report.batches + 1 >= _KILL_AFTER_APPLY:
            # Fault injection for the crash tests: die after the Delta commits, before Spark
            # records the batch as done, so the restart replays a batch already applied.
            log.warning("fault injection: SIGKILL after applying batch", extra={"batch": batch_id})
            logging.shutdown()
            os.kill(os.getpid(), signal.SIGKILL)
        t1 = time.monotonic()
        # Counted by apply's own pass over the persisted batch: another action here would
        # read the binlog range from the primary once more.
        n, newest = result.changes, result.newest_ts
        lag = None if newest is None else max(0.0, time.time() - newest.timestamp())
        with lock:
            report.batches += 1
            report.rows += n
            if lag is not None:
                report.last_lag_s = lag
        info = {"batch": batch_id, "rows": n, "lag_s": report.last_lag_s,
                "read_by": "driver" if arrow is not None else "executors",
                "driver_read_s": round(read_s, 2) if arrow is not None else None,
                **metrics.batch_applied(batch_id, n, t1 - t0, lag, end)}
        log.info("batch applied", extra=info)
        if on_progress is not None:
            on_progress(info)
        if warm:
            warm.clear()  # once, after the stream's first batch
            threading.Thread(target=warm_delta, name="binlake-warm", daemon=True,
                             args=(batch.sparkSession, config, _any_table(opts.warehouse))
                             ).start()

    writer = (reader.load().writeStream.foreachBatch(handle)
              .option("checkpointLocation", str(ckpt)))
    writer = writer.trigger(availableNow=True) if opts.once else \
        writer.trigger(processingTime=f"{opts.trigger_seconds} seconds")
    catch_up = CatchUp(opts.url, ckpt, state.data["stream_start"])
    query = writer.start()
    stop = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            last = time.monotonic()
            shown = Progress("catch-up", log)
            shown.meter("binlog", unit="B", poll=catch_up.bytes_done)
            shown.meter("changes", unit="changes", poll=lambda m: report.rows)
            with shown:
                while query.isActive and not stop.is_set():
                    query.awaitTermination(0.5)
                    if not shown.tty and time.monotonic() - last >= PROGRESS_EVERY:
                        last = time.monotonic()
                        status = query.status
                        if status.get("isTriggerActive"):
                            with lock:
                                done = {"batches": report.batches, "rows": report.rows}
                            log.info("catching up", extra={"status": status.get("message"), **done})
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
        metrics.close()
    return report
