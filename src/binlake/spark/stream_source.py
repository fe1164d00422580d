"""`spark.readStream.format("binlake")`: a live MySQL/MariaDB primary as a Spark stream.

Why it is shaped like this (measured facts in shared/research/spark.md §2-3):

* **Offsets are binlog positions between transactions** (`Position.to_json()`: file, pos and,
  when known, the GTID state/set before it). A micro-batch is the half-open byte range
  `[start, end)` of the primary's binlog, so it never holds half a transaction, and Spark's
  offset log makes a replayed batch read exactly the same range again.
* **The driver finds the ends.** `latestOffset` walks the new binlog once over a non-blocking
  dump (`scan`): it finds every transaction boundary up to the primary's current end, counts
  records (only with `maxRowsPerTrigger`: rows are decoded then, which costs about as much as
  reading them; `maxBytesPerTrigger` needs no decoding) and binlog bytes, and cuts at
  the last boundary inside the read limit (a transaction larger than the limit goes alone).
  Rows of other tables and, without a row limit, all row images are left undecoded, so the
  walk costs little more than the transfer. The same walk remembers split points, so a
  backlog can be read by several executors at once.
* **Executors read.** `read()` runs on an executor, on an unpickled copy of the reader that
  never sees driver state: everything it needs travels in the `BinlogRange`. It replays the
  range with a `BinlogStream` (`stop_at=end`, reconnecting and resuming inside the range after
  a network failure) and fails unless it stopped exactly at `end`: a purged file, a primary
  with less binlog (failover) or a range that is not on transaction boundaries stop the query
  with the position and the recovery in the message; rows are never skipped.
* `commit(end)` acknowledges nothing on the primary: the Spark checkpoint owns the offsets
  (binlog retention is the primary's business: keep it longer than the longest pause of the
  query). With a schema history it forgets the versions no later batch can need (below `end`).

Schema history (option `schemaHistory`, a path on the driver's file system):

* Column names, types and keys come from a `SchemaHistory` (versions by binlog position), so
  they are right for every row even when the stream lags an ALTER and the primary logs
  binlog_row_metadata=MINIMAL; DDL on the tracked tables becomes `op='ddl'` records.
* The driver's walk sees every QUERY event: a `SchemaTracker` applies the DDL there and the
  history is saved (atomically, JSON) *before* the offset is handed to Spark, so the file is
  never behind an offset in the offset log. It may be ahead of the committed offset (saved by a
  later walk before a crash): lookups are by position, and DDL seen again is recognised by its
  position. The file also records how far the binlog was walked (`covered`) and the table
  filter; a query that starts past `covered` walks the gap first.
* A query without a history bootstraps one from information_schema at its start. That is
  exact when no DDL on the tracked tables was logged between the start and the primary's end
  (always so for startingPosition "latest", and for `binlake sync`, which bootstraps before
  its snapshot). Otherwise the query falls back to the TABLE_MAP metadata when the primary
  logs binlog_row_metadata=FULL, and fails with the way out when it does not.
* Executors never see driver state: every `BinlogRange` carries the history (compacted to the
  range's start) and `read()` decodes with a tracker built from it; DDL inside the range is
  recognised from the history's log, so every executor names columns as the driver decided.

Options (names are case-insensitive):
  url                 mysql://user[:password]@host:port[/?ssl_mode=...] (required)
  password            the password, if not in the URL; else $BINLAKE_PASSWORD
  tables              'db.table,db2.*' filter (as `binlake stream --tables`)
  startingPosition    where a new query starts (a restart always uses the checkpoint):
                      "latest" (default: the primary's current end), "earliest" (first
                      binlog file, offset 4), FILE:POS, an offset as JSON, or GTIDs (MariaDB
                      '0-1-42', MySQL 'uuid:1-42'): the place of the first transaction they
                      lack; refused when no single offset is that place (domains interleaved
                      so that a later transaction is held) or a domain is unknown there
  maxRowsPerTrigger   records per micro-batch, cut at transaction boundaries (ReadMaxRows)
  maxBytesPerTrigger  binlog bytes per micro-batch, cut likewise (ReadMaxBytes)
  serverIdBase        replica server ids used: base (the driver's walk) and base+1+i for
                      partition i; two queries on one primary need disjoint ranges
                      (default 6450000)
  heartbeat           seconds between the primary's heartbeats while a read waits (default 5)
  partitionBytes      a range with more binlog bytes than this is split (default 64 MiB)
  maxPartitions       at most this many partitions per micro-batch (default 8)
  batchSize           rows per Arrow batch (default 10000)
  schemaHistory       path of the schema history file (driver side; one per query, like the
                      checkpoint); without it names and types come from the TABLE_MAPs
  rangeLog            folder (driver side) where each batch's ranges are recorded, so the
                      driver can read the batch itself (`read_planned`) instead of Spark

Rows are in the CDC schema of `arrow.py`; truncate and statement records flow through like
row changes. Without `schemaHistory` names and types come from the TABLE_MAPs, so the
primary needs binlog_row_metadata=FULL (MariaDB >= 10.5, MySQL >= 8.0.1), and DDL produces no
'ddl' records (as with `binlake decode`).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxRows, SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ..binlog.constants import ROWS_EVENT_TYPES, ChecksumAlg
from ..binlog.constants import EventType as E
from ..binlog.events import (
    GtidEvent, HeartbeatEvent, MariaGtidEvent, QueryEvent, RotateEvent, RowsEvent,
)
from ..cdc.changes import no_table
from ..errors import BinlakeError, ConfigError, ServerError
from ..replica.position import BoundaryError, Position, TransactionBoundaries
from ..replica.stream import PositionUnavailable
from ..replica.url import ServerURL
from ..cdc.xa import PreparedRange, XaLedger
from ..cdc.arrow import file_index
from .files_source import BinlogFilesDataSource

if TYPE_CHECKING:  # pragma: no cover
    from ..schema.history import BinlogPos, SchemaHistory
    from ..schema.tracker import SchemaTracker

log = logging.getLogger("binlake.spark.stream")

NAME = "binlake"
DEFAULT_SERVER_ID_BASE = 6_450_000
DEFAULT_PARTITION_BYTES = 64 << 20
DEFAULT_MAX_PARTITIONS = 8
_ARTIFICIAL = 0x20  # LOG_EVENT_ARTIFICIAL_F: made up by the dump thread, not in the file
_MARIA_GTID = re.compile(r"^\s*\d+-\d+-\d+(\s*,\s*\d+-\d+-\d+)*\s*$")
_MYSQL_GTID = re.compile(r"^\s*[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                         r"[0-9a-fA-F]{12}:")
_RECOVERY = ("the changes after it are no longer on this server: re-snapshot the tables, then "
             "start the query with a new checkpoint location and startingPosition at the "
             "snapshot's position; keep binlog retention (binlog_expire_logs_seconds) longer "
             "than the longest pause of the query")


class OffsetUnavailable(PositionUnavailable):
    """A Spark offset the primary cannot serve (purged, or a server with less binlog)."""


class RangeIncomplete(BinlakeError):
    """A micro-batch range could not be read to its end: fail rather than deliver less."""


Key = tuple[int, int]


def offset_key(file: str | None, pos: int) -> Key:
    """Binlog order of a position: (file number, offset)."""
    return (file_index(file), pos)


def position_of(offset: dict[str, Any]) -> Position:
    """A Spark offset (dict from the checkpoint) back to a Position; anything else is an error."""
    p = Position.from_json(offset)
    if p.file is None or p.rows_done:
        raise ConfigError(f"invalid binlake offset {json.dumps(offset)}: an offset names a binlog "
                          "file and a transaction boundary")
    return p


def offset_of(p: Position) -> dict[str, Any]:
    return p.to_json()


# -- options ----------------------------------------------------------------------------------

def _int_option(options: Any, name: str, default: int | None, minimum: int = 1) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"binlake option {name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"binlake option {name}={raw!r} must be at least {minimum}")
    return value


@dataclass(frozen=True)
class StreamSourceOptions:
    """Parsed, validated options; plain values only (the reader is pickled to executors)."""

    url: ServerURL
    tables: str | None = None
    starting: str = "latest"
    max_rows: int | None = None
    max_bytes: int | None = None
    server_id_base: int = DEFAULT_SERVER_ID_BASE
    heartbeat: float = 5.0
    partition_bytes: int = DEFAULT_PARTITION_BYTES
    max_partitions: int = DEFAULT_MAX_PARTITIONS
    batch_size: int = 10_000
    schema_history: str | None = None
    """Path of the schema history file (None: names and types from the TABLE_MAPs)."""
    range_log: str | None = None
    """Folder where the driver records each batch's planned ranges (`read_planned`)."""

    @classmethod
    def parse(cls, options: Any) -> "StreamSourceOptions":
        # `options` is Spark's CaseInsensitiveDict: use .get, never dict() (lower-cases keys).
        raw_url = options.get("url")
        if not raw_url:
            raise ConfigError('binlake stream: give the primary with .option("url", '
                              '"mysql://user@host:3306")')
        url = ServerURL.parse(raw_url)
        if options.get("password") is not None:
            url = url.with_password(options.get("password"))
        try:
            heartbeat = float(options.get("heartbeat", "5"))
        except ValueError:
            raise ConfigError(f"binlake option heartbeat={options.get('heartbeat')!r} is not a "
                              "number of seconds") from None
        if not 0.01 <= heartbeat <= 4294967:
            raise ConfigError("binlake option heartbeat must be between 0.01 and 4294967 seconds")
        base = _int_option(options, "serverIdBase", DEFAULT_SERVER_ID_BASE)
        max_partitions = _int_option(options, "maxPartitions", DEFAULT_MAX_PARTITIONS)
        assert base is not None and max_partitions is not None
        if base + max_partitions >= 1 << 32:
            raise ConfigError("binlake option serverIdBase + maxPartitions must fit 32 bits")
        tables = options.get("tables") or None
        if tables is not None:
            from ..cdc.changes import table_filter

            table_filter(tables)  # a bad pattern fails at planning, not on an executor
        return cls(
            url=url, tables=tables,
            starting=str(options.get("startingPosition") or "latest").strip(),
            max_rows=_int_option(options, "maxRowsPerTrigger", None),
            max_bytes=_int_option(options, "maxBytesPerTrigger", None),
            server_id_base=base, heartbeat=heartbeat,
            partition_bytes=_int_option(options, "partitionBytes", DEFAULT_PARTITION_BYTES)
            or DEFAULT_PARTITION_BYTES,
            max_partitions=max_partitions,
            batch_size=_int_option(options, "batchSize", 10_000) or 10_000,
            schema_history=str(options.get("schemaHistory")).strip()
            if options.get("schemaHistory") else None,
            range_log=str(options.get("rangeLog")).strip() if options.get("rangeLog") else None,
        )

    def table_filter(self) -> Callable[[str, str], bool] | None:
        from ..cdc.changes import table_filter

        return table_filter(self.tables)


# -- partitions -------------------------------------------------------------------------------

class BinlogRange(InputPartition):
    """`[start, end)` of the primary's binlog for one task (plain attributes: it is pickled)."""

    def __init__(self, index: int, start_file: str, start_pos: int, end_file: str, end_pos: int,
                 server_id: int, history: str | None = None,
                 xa_prepared: list[list[Any]] | None = None) -> None:
        super().__init__(index)
        self.index = index
        self.start_file = start_file
        self.start_pos = start_pos
        self.end_file = end_file
        self.end_pos = end_pos
        self.server_id = server_id
        self.history = history
        """The schema history as JSON (`SchemaHistory.to_dict`, compacted to the range's
        start or the oldest XA PREPARE pending there), or None: names and types from the
        TABLE_MAPs."""
        self.xa_prepared = xa_prepared or []
        """XA transactions pending at the start (`PreparedRange.to_json`): a COMMIT in the
        range re-reads its PREPARE from there."""

    def __repr__(self) -> str:
        return (f"BinlogRange({self.index}: {self.start_file}:{self.start_pos} -> "
                f"{self.end_file}:{self.end_pos}, server_id {self.server_id})")


# -- talking to the primary (driver side) -----------------------------------------------------

def _connect(url: ServerURL, read_timeout: float | None = None) -> Any:
    from ..replica.connection import MySQLConnection

    return MySQLConnection.connect(url.host, url.port, url.user, url.password,
                                   read_timeout=read_timeout, **url.connect_kwargs())


def _current_end(url: ServerURL, conn: Any) -> Position:
    """The primary's binlog end with its GTID position (same statement as `binlake stream`)."""
    from ..replica.stream import BinlogStream

    f, p, g = BinlogStream(url).current_end(conn)
    if conn.flavor == "mariadb":
        return Position(f, p, gtid_state=g)
    return Position(f, p, gtid_set=g or None)  # an empty Executed_Gtid_Set: GTIDs are off


def _end_key(url: ServerURL, conn: Any) -> tuple[str, int]:
    """The primary's binlog end as file:pos only (no GTID: on MariaDB that costs a scan of the
    current binlog file, and a cap needs none)."""
    from ..replica import dialogue as dlg

    mysql84 = conn.flavor == "mysql" and dlg.version_tuple(conn.server_version) >= (8, 4, 0)
    rows = conn.query("SHOW BINARY LOG STATUS" if mysql84 else "SHOW MASTER STATUS").rows
    if not rows:
        raise ConfigError(f"{url} has binary logging disabled",
                          hint="start the server with log_bin and binlog_format=ROW")
    return str(rows[0][0]), int(rows[0][1])


def _binary_logs(conn: Any) -> list[tuple[str, int]] | None:
    """SHOW BINARY LOGS as (name, size); None without the privilege to ask."""
    try:
        return [(str(r[0]), int(r[1])) for r in conn.query("SHOW BINARY LOGS").rows]
    except ServerError:
        return None


def _check_on_server(url: ServerURL, conn: Any, p: Position, what: str) -> None:
    """Refuse a position whose file the primary no longer (or never) had, or that lies past the
    end of its file: the dump would fail late or wait for bytes that never come."""
    logs = _binary_logs(conn)
    if logs is None or p.file is None:
        return
    sizes = dict(logs)
    span = f"its binlogs run from {logs[0][0]} to {logs[-1][0]}" if logs else "it has no binlogs"
    if p.file not in sizes:
        if logs and file_index(p.file) < file_index(logs[0][0]):
            why = f"{p.file} was purged ({span})"
        else:
            why = f"it has no binlog {p.file} ({span}; a failover to a server with less binlog?)"
        raise OffsetUnavailable(f"the primary {url} cannot serve the {what} {p.file}:{p.pos}: {why}",
                                hint=_RECOVERY)
    if p.pos > sizes[p.file]:
        raise OffsetUnavailable(
            f"the primary {url} cannot serve the {what} {p.file}:{p.pos}: {p.file} has only "
            f"{sizes[p.file]} bytes ({span}; a failover to a server with less binlog?)",
            hint=_RECOVERY)


def _maria_gtid_at(conn: Any, file: str, pos: int) -> str | None:
    name = file.replace("\\", "\\\\").replace("'", "\\'")
    try:
        value = conn.query(f"SELECT BINLOG_GTID_POS('{name}', {int(pos)})").rows[0][0]
    except ServerError:
        return None
    return None if value is None else str(value)


class _Dump:
    """A short non-blocking binlog dump for the driver: the primary sends what it has, then EOF.

    Separate from `BinlogStream` because the driver wants every event's position and size with
    row images left undecoded, which a change stream does not expose.
    """

    def __init__(self, url: ServerURL, server_id: int, heartbeat: float, *,
                 start: Position | None = None, gtid_state: str | None = None,
                 gtid_set: str | None = None,
                 table_filter: Callable[[str, str], bool] | None = None) -> None:
        from ..binlog.decoder import BinlogDecoder
        from ..gtid.sets import MySQLGtidSet
        from ..replica import dialogue as dlg

        self.url = url
        self.conn = conn = _connect(url)
        try:
            checksum = conn.query("SELECT @@global.binlog_checksum").rows[0][0] or "NONE"
            for stmt in dlg.setup_statements(conn.flavor, conn.server_version, checksum=checksum,
                                             heartbeat_period=heartbeat,
                                             replica_uuid=str(uuid.uuid4()), semi_sync=False,
                                             gtid_state=gtid_state):
                conn.execute(stmt)
            conn.command(dlg.COM_REGISTER_SLAVE,
                         dlg.register_slave_payload(server_id, "binlake-spark", port=0))
            if gtid_set is not None:
                conn.send_command(dlg.COM_BINLOG_DUMP_GTID, dlg.binlog_dump_gtid_payload(
                    MySQLGtidSet(gtid_set).encode_for_dump(), server_id, True))
            elif gtid_state is not None:
                conn.send_command(dlg.COM_BINLOG_DUMP, dlg.binlog_dump_payload("", 4, server_id, True))
            else:
                assert start is not None and start.file is not None
                conn.send_command(dlg.COM_BINLOG_DUMP,
                                  dlg.binlog_dump_payload(start.file, start.pos, server_id, True))
            conn.read_timeout = max(10.0, heartbeat * 3)
        except BaseException:
            conn.close()
            raise
        self.decoder = BinlogDecoder(
            checksum=ChecksumAlg.CRC32 if str(checksum).upper() == "CRC32" else ChecksumAlg.OFF,
            table_filter=table_filter)
        self.decoder.file = start.file if start is not None else None

    def packets(self) -> Iterator[tuple[memoryview, int, int, int]]:
        """(event bytes, type code, log_pos, flags) per event until the primary's end; the
        bytes are valid until the next packet is read (decode or drop them at once)."""
        from ..replica import dialogue as dlg

        conn = self.conn
        while True:
            pkt = conn.read_packet()
            sp = dlg.parse_stream_packet(pkt, False)
            if sp.kind == "eof":
                conn.end_raw()
                return
            raw = sp.event
            assert raw is not None
            yield (raw, raw[4], int.from_bytes(raw[13:17], "little"),
                   int.from_bytes(raw[17:19], "little"))

    def close(self) -> None:
        self.conn.close()


@dataclass
class ScanResult:
    """What the driver learned about `[start, cap)`."""

    end: Position | None = None
    """The last admitted transaction boundary (None: no whole transaction in the range)."""
    rows: int = 0
    """Records up to `end` (counted only when asked for)."""
    bytes: int = 0
    transactions: int = 0
    splits: list[Position] = field(default_factory=list)
    """Boundaries inside (start, end) about `split_bytes` apart: where partitions may start
    (file, pos and the XA transactions pending there)."""


_SKIPPABLE = frozenset({*ROWS_EVENT_TYPES, E.TABLE_MAP, E.MARIADB_ANNOTATE_ROWS, E.ROWS_QUERY})
"""Events that never end a transaction they are inside of."""


_GTID_EVENTS = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED, E.MARIADB_GTID})


def _holds(state: Any, gset: Any, gtid: str) -> bool:
    """Whether a MariaDB GTID state / MySQL GTID set already covers `gtid`."""
    return bool(state.contains(gtid) if state is not None else gset.contains(gtid))


def scan(url: ServerURL, start: Position, cap: Key, *, server_id: int, heartbeat: float,
         tables: Callable[[str, str], bool] | None = None, count_rows: bool = False,
         max_rows: int | None = None, max_bytes: int | None = None,
         split_bytes: int = 0, schema: "SchemaTracker | None" = None) -> ScanResult:
    """Walk the binlog from `start` (a boundary) to `cap` (the primary's end as read before):
    transaction boundaries, the records and bytes before each, and the cut for the limits.

    Boundaries are those `BinlogStream` has (same `TransactionBoundaries`, end offset of the
    closing event in the file the dump is in), so `stop_at` on an executor stops exactly there.
    With `schema` every QUERY event walked is applied to that tracker (DDL by position: one
    past the cut is recorded too, harmlessly, and recognised when walked again) and ddl
    records count as rows, as the executors will deliver them.
    """
    from ..cdc.changes import ChangeTracker
    from ..gtid.sets import MariaGtidState, MySQLGtidSet
    from ..replica import dialogue as dlg

    if count_rows:
        decode_filter = tables  # rows of other tables stay undecoded
    else:
        decode_filter = no_table  # no row image is decoded at all
    # Follows event groups and XA PREPAREs (keeping no records): offsets carry the pending.
    tracker = ChangeTracker(tables, xa=XaLedger(start.xa_prepared))
    tx = TransactionBoundaries()
    result = ScanResult()
    gstate = MariaGtidState(start.gtid_state) if start.gtid_state is not None else None
    gset = MySQLGtidSet(start.gtid_set) if start.gtid_set is not None else None
    rows = nbytes = 0
    last_split = 0
    end_gtids: tuple[Any, Any] = (None, None)
    end_xa = start.xa_prepared
    try:
        dump = _Dump(url, server_id, heartbeat, start=start, table_filter=decode_filter)
    except ServerError as exc:
        raise _unavailable(url, start, exc) from None
    dec = dump.decoder
    file_key: tuple[str | None, int] = (None, 0)
    # Bytes are counted as the file has them: the dump leaves out events the replica did not
    # ask for (MariaDB's ANNOTATE_ROWS, the statement text of each rows event), so each event
    # counts from the previous one's end in its file.
    at_file, at_pos = start.file, start.pos
    try:
        for raw, code, log_pos, flags in dump.packets():
            real = log_pos != 0 and not flags & _ARTIFICIAL
            if real:
                if dec.file != at_file:  # a new file: its first event starts at 4
                    at_file, at_pos = dec.file, 4
                span = log_pos - at_pos
                nbytes += span if len(raw) <= span < 1 << 31 else len(raw)
                at_pos = log_pos
            if not count_rows and tx.in_tx and not tx.implicit_rows and code in _SKIPPABLE:
                # Inside a transaction opened by GTID/BEGIN, row images and table maps cannot
                # end it: only their bytes matter here (executors decode and verify them).
                continue
            for ev in dec.decode_event(raw):
                if isinstance(ev, HeartbeatEvent):
                    continue
                if isinstance(ev, RotateEvent):
                    if not (ev.header.flags & _ARTIFICIAL or ev.header.log_pos == 0) and tx.in_tx:
                        raise BoundaryError(f"{ev.file}:{ev.offset}: the binlog rotates inside "
                                            f"transaction {tx.gtid or ''}".rstrip())
                    continue
                if schema is not None:
                    if isinstance(ev, QueryEvent):
                        ev.ddl = schema.on_query(ev)
                    elif isinstance(ev, (GtidEvent, MariaGtidEvent)):
                        schema.observe(ev)  # DDL records carry their GTID
                tracker.observe(ev, keep=False)
                if count_rows:  # (an XA PREPARE's rows count where they are read)
                    if isinstance(ev, RowsEvent):
                        rows += len(ev.rows)
                    elif isinstance(ev, QueryEvent) and ev.query[:3].upper() != "XA ":
                        rows += len(tracker.statement_records(ev))
                if not tx.observe(ev):
                    continue
                # A transaction ends here: a boundary.
                pos = ev.end or log_pos
                if offset_key(dec.file, pos) > cap:
                    return result  # written after the cap: not ours
                gtid = tx.ended_gtid
                if gtid is not None:  # as BinlogStream tracks it
                    if gstate is not None and dump.conn.flavor == "mariadb":
                        gstate = gstate.update(gtid)
                    elif gset is not None:
                        gset = gset.add_gtid(gtid)
                over = ((max_rows is not None and rows > max_rows)
                        or (max_bytes is not None and nbytes > max_bytes))
                if over and result.end is not None:
                    return result  # the limit: cut before this transaction
                if result.end is not None and split_bytes and result.bytes - last_split >= split_bytes:
                    result.splits.append(result.end)
                    last_split = result.bytes
                end_xa = tracker.xa.ranges()
                result.end = Position(dec.file, pos, xa_prepared=end_xa)  # GTIDs added at the end
                end_gtids = (gset, gstate)
                result.rows, result.bytes = rows, nbytes
                result.transactions += 1
                if over or (max_rows is not None and rows >= max_rows) or \
                        (max_bytes is not None and nbytes >= max_bytes):
                    return result  # full (a transaction larger than the limit goes alone)
            if real and not tx.in_tx:
                if file_key[0] != dec.file:
                    file_key = (dec.file, file_index(dec.file))
                if (file_key[1], log_pos) >= cap:
                    return result  # reached the end as read before the walk
    except ServerError as exc:
        if exc.code == dlg.ER_MASTER_FATAL_ERROR_READING_BINLOG:
            raise _unavailable(url, start, exc) from None
        raise
    finally:
        dump.close()
        if result.end is not None:
            eset, estate = end_gtids
            result.end = Position(result.end.file, result.end.pos,
                                  gtid_set=str(eset) if eset is not None else None,
                                  gtid_state=str(estate) if estate is not None else None,
                                  xa_prepared=end_xa)
    return result


def _unavailable(url: ServerURL, p: Position, exc: ServerError) -> OffsetUnavailable:
    return OffsetUnavailable(f"the primary {url} cannot stream from the offset {p.file}:{p.pos}: "
                             f"{exc.server_message} (error {exc.code})", code=exc.code,
                             hint=_RECOVERY)


# -- schema history (driver side) -------------------------------------------------------------

HISTORY_SAVE_SECONDS = 5.0
"""Without new DDL the history file is rewritten at most this often (only `covered` moves)."""


def tracked_tables(tables: str | None) -> Callable[[str, str], bool]:
    """The tables a schema history tracks: those of the filter, outside the server's own."""
    from ..cdc.changes import table_filter
    from ..schema.bootstrap import default_filter

    keep = table_filter(tables)
    if keep is None:
        return default_filter
    return lambda schema, table: default_filter(schema, table) and keep(schema, table)


def save_schema_history(path: str | os.PathLike[str], history: "SchemaHistory",
                        covered: "BinlogPos | None", tables: str | None) -> None:
    """`SchemaHistory.to_dict` plus how far the binlog was walked and the table filter, written
    atomically (a crash leaves the old file or the new one)."""
    from .._util.atomic import atomic_write_text

    d = history.to_dict()
    d["covered"] = covered.to_json() if covered is not None else None
    d["binlake_tables"] = tables
    atomic_write_text(path, json.dumps(d, ensure_ascii=False, separators=(",", ":")))


def load_schema_history(path: str | os.PathLike[str]
                        ) -> tuple["SchemaHistory", "BinlogPos | None", str | None]:
    """(history, covered, table filter) as `save_schema_history` wrote them."""
    from ..errors import SchemaError
    from ..schema.history import BinlogPos, SchemaHistory

    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        h = SchemaHistory.from_dict(d)
    except (ValueError, KeyError, TypeError, SchemaError) as exc:
        raise ConfigError(f"{path} is not a binlake schema history: {exc}",
                          hint="delete it and start the query at startingPosition 'latest' "
                               "with a new checkpoint location") from None
    covered = BinlogPos.from_json(d.get("covered")) or h.head or h.start
    return h, covered, d.get("binlake_tables")


def _ddl_logged(cur: Any, lo: "BinlogPos", hi: "BinlogPos",
                tracked: Callable[[str, str], bool]) -> bool:
    """Whether a statement that may change a tracked table's shape (or a database) was
    logged in [lo, hi); True when that cannot be told (too much binlog, a file gone)."""
    from ..errors import SchemaError
    from ..schema import ddl
    from ..schema.bootstrap import iter_queries

    def touches(text: str, default: str) -> bool:
        try:
            stmts = ddl.parse(text)
        except ddl.DdlParseError:
            refs = ddl.guess_tables(text)
            return not refs or any(hit(r, default) for r in refs)
        for st in stmts:
            if isinstance(st, (ddl.Ignored, ddl.TruncateTable)):
                continue
            if isinstance(st, ddl.DatabaseStmt):
                name = st.name or default
                if st.action == "drop" or not name or tracked(name, ""):
                    return True
                continue
            refs = list(ddl.iter_statement_tables(st, default))
            if not refs or any(hit(r, default) for r in refs):
                return True
        return False

    def hit(ref: Any, default: str) -> bool:
        schema = ref.schema or default
        return not schema or tracked(schema, ref.name)

    if lo.key >= hi.key:
        return False
    try:
        return any(touches(text, default) for _, default, text in iter_queries(cur, lo, hi))
    except (SchemaError, ServerError):
        return True
    except Exception as exc:  # noqa: BLE001 - PyMySQL's errors: cannot tell
        log.debug("cannot read the binlog between %s and %s: %s", lo, hi, exc)
        return True


def bootstrap_schema_history(url: ServerURL | str, tables: str | None,
                             at: tuple[str, int] | None = None) -> "SchemaHistory | None":
    """The tracked tables' shapes from information_schema as a history that starts at `at`
    (default: the primary's binlog end now, as a transaction boundary a stream can start at).

    information_schema is read at the end; its shapes are those at an earlier `at` only when
    no DDL on the tracked tables was logged in between: None when some was (or when that
    cannot be told).
    """
    from ..schema.bootstrap import bootstrap, gtid_at
    from ..schema.history import BinlogPos, SchemaHistory
    from ..snapshot.server import connect

    if isinstance(url, str):
        url = ServerURL.parse(url)
    tracked = tracked_tables(tables)
    conn = connect(url)
    try:
        h = bootstrap(conn, tables=tracked)
        assert h.start is not None and h.start.file is not None
        with conn.cursor() as cur:
            if at is None:
                at = (h.start.file, h.start.pos)
                target = BinlogPos(*at)
            else:
                target = BinlogPos(*at)
                lo, hi = sorted((target, h.start), key=lambda p: p.key)
                if _ddl_logged(cur, lo, hi, tracked):
                    return None
            if target == h.start:
                return h
            gtid = gtid_at(cur, target, str(h.server.get("flavor") or ""))
    finally:
        conn.close()
    # A fresh bootstrap has one version per table and no log: the same shapes from `target`.
    return SchemaHistory.from_catalog(h.head_catalog(), target, gtid, server=h.server)


def _row_metadata(url: ServerURL) -> str:
    conn = _connect(url)
    try:
        rows = conn.query("SELECT @@global.binlog_row_metadata").rows
        return str(rows[0][0]).upper() if rows and rows[0][0] is not None else "UNKNOWN"
    except ServerError:
        return "UNKNOWN (no binlog_row_metadata: older than MariaDB 10.5 / MySQL 8.0.1)"
    finally:
        conn.close()


# -- the data source --------------------------------------------------------------------------

class BinlakeDataSource(BinlogFilesDataSource):
    """`format("binlake")`: binlog files with `spark.read` (the files source), a live primary
    with `spark.readStream` (this module); one name, one CDC schema."""

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BinlogStreamReader(self.options)


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets, limits and partitions on the driver; `read()` on executors."""

    def __init__(self, options: Any) -> None:
        # No connection here: the reader is pickled (planner -> executors).
        self.opts = StreamSourceOptions.parse(options)
        self._initial: dict[str, Any] | None = None
        self._target: Key | None = None
        self._last_scan: tuple[Key, ScanResult] | None = None
        self._idle: tuple[Key, Key] | None = None
        # Schema history (driver side only, made on first use; see the module notes).
        self._schema: SchemaTracker | None = None
        self._table_maps = False  # no exact history: names from the TABLE_MAPs (FULL metadata)
        self._covered: BinlogPos | None = None
        self._saved: tuple[BinlogPos | None, float] = (None, 0.0)

    def __getstate__(self) -> dict[str, Any]:
        # Executors get everything in the BinlogRange; driver state never travels.
        state = dict(self.__dict__)
        state.update(_schema=None, _last_scan=None, _covered=None, _saved=(None, 0.0))
        return state

    # -- offsets ---------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        """startingPosition, resolved once per run (Spark asks more than once; 'latest' must
        not move in between)."""
        if self._initial is None:
            start = self._with_pending_xa(self._resolve_start(self.opts.starting))
            # The history's start is the query's start: bootstrapped now, while information_
            # schema still shows the shapes there ("latest"), or checked against the binlog.
            self._schema_for(start)
            self._initial = offset_of(start)
        return self._initial

    def _with_pending_xa(self, p: Position) -> Position:
        """The start with the XA transactions prepared before it and undecided now (XA
        RECOVER; their PREPAREs found by walking the binlog back): a snapshot at the start
        cannot see their rows, so their COMMIT must bring them. (One decided between an old
        start and now is found by the task that reads its COMMIT.)"""
        from ..replica.stream import find_prepares, prepared_xids

        if p.xa_prepared or p.file is None:
            return p
        conn = _connect(self.opts.url)
        try:
            xids = prepared_xids(conn)
        finally:
            conn.close()
        if not xids:
            return p
        found = find_prepares(self.opts.url, xids, (p.file, p.pos),
                              server_id=self.opts.server_id_base, heartbeat=self.opts.heartbeat)
        ranges = tuple(sorted(found.values(), key=lambda r: offset_key(r.file, r.start)))
        return replace(p, xa_prepared=ranges)

    def _resolve_start(self, text: str) -> Position:
        url = self.opts.url
        conn = _connect(url)
        try:
            low = text.lower()
            if low == "latest":
                return _current_end(url, conn)
            if low == "earliest":
                logs = _binary_logs(conn)
                if not logs:
                    raise ConfigError(f"startingPosition=earliest: cannot list the binlogs of {url}",
                                      hint="grant BINLOG MONITOR / REPLICATION CLIENT, or give FILE:POS")
                first = logs[0][0]
                gtid = _maria_gtid_at(conn, first, 4) if conn.flavor == "mariadb" else None
                return Position(first, 4, gtid_state=gtid)
            if text.startswith("{"):
                try:
                    p = position_of(json.loads(text))
                except ValueError:
                    raise ConfigError(f"startingPosition {text!r} is not valid JSON") from None
                _check_on_server(url, conn, p, "starting position")
                return p
            if _MARIA_GTID.match(text) or _MYSQL_GTID.match(text):
                return self._gtid_start(conn, text)
            p = Position.parse_start(text)
            _check_on_server(url, conn, p, "starting position")
            if conn.flavor == "mariadb" and p.file is not None:
                gtid = _maria_gtid_at(conn, p.file, p.pos)
                if gtid is not None:
                    p = Position(p.file, p.pos, gtid_state=gtid)
            return p
        finally:
            conn.close()

    def _gtid_start(self, conn: Any, text: str) -> Position:
        """A GTID position -> the file:pos where the first transaction after it starts: a GTID
        dump from there; its first GTID event is that place (the primary's end if none)."""
        from ..gtid.sets import MariaGtidState, MySQLGtidSet

        url = self.opts.url
        end = _current_end(url, conn)  # before the dump: anything later shows up in it
        mariadb = conn.flavor == "mariadb"
        if mariadb != bool(_MARIA_GTID.match(text)):
            kind = "MariaDB" if mariadb else "MySQL"
            raise ConfigError(f"startingPosition {text!r} is not a {kind} GTID position, and "
                              f"{url} is {kind}")
        state = MariaGtidState(text) if mariadb else None
        gset = None if mariadb else MySQLGtidSet(text)
        if state is not None:
            # MariaDB streams a domain it never had from its oldest binlog on (as
            # BinlogStream refuses too): not "after these GTIDs".
            known = str(conn.query("SELECT @@global.gtid_binlog_state").rows[0][0] or "")
            have = {int(g.split("-", 1)[0]) for g in known.split(",") if g.strip()}
            missing = [d for d in state.domains if d not in have]
            if missing:
                raise OffsetUnavailable(
                    f"the primary {url} cannot stream from GTID position {text}: it has no GTIDs "
                    f"of domain {', '.join(map(str, missing))} (its binlog state is "
                    f"{known or 'empty'})", hint="name only domains the primary has (SELECT "
                    "@@gtid_binlog_state), or give FILE:POS")
        try:
            dump = _Dump(url, self.opts.server_id_base, self.opts.heartbeat,
                         gtid_state=str(state) if state is not None else None,
                         gtid_set=str(gset) if gset is not None else None,
                         table_filter=no_table)
        except ServerError as exc:
            raise OffsetUnavailable(f"the primary {url} cannot stream from GTID position {text}: "
                                    f"{exc.server_message} (error {exc.code})", hint=_RECOVERY) from None
        first: Position | None = None
        try:
            for raw, _code, log_pos, flags in dump.packets():
                events = dump.decoder.decode_event(raw)  # fake rotations tell the file
                if log_pos == 0 or flags & _ARTIFICIAL:
                    continue
                for ev in events:
                    gtid = ev.gtid if isinstance(ev, (MariaGtidEvent, GtidEvent)) else None
                    if gtid is None:
                        continue
                    if _holds(state, gset, gtid):
                        raise BinlakeError(f"the primary sent {gtid}, which the start position "
                                           f"{text} already holds")
                    first = Position(dump.decoder.file, ev.offset,
                                     gtid_state=str(state) if state is not None else None,
                                     gtid_set=str(gset) if gset is not None else None)
                    break
                if first is not None:
                    break
        except ServerError as exc:
            raise OffsetUnavailable(f"the primary {url} cannot stream from GTID position {text}: "
                                    f"{exc.server_message} (error {exc.code})", hint=_RECOVERY) from None
        finally:
            dump.close()
        if first is None:
            return end
        several = len(state.domains) > 1 if state is not None else len(gset.keys()) > 1  # type: ignore[union-attr]
        if several:
            self._check_nothing_held_after(first, state, gset, text)
        return first

    def _check_nothing_held_after(self, first: Position, state: Any, gset: Any, text: str) -> None:
        """With several domains (source UUIDs) a GTID position need not be one point of the
        binlog: reading by file offset from `first` must not meet a transaction it holds."""
        dump = _Dump(self.opts.url, self.opts.server_id_base, self.opts.heartbeat, start=first,
                     table_filter=no_table)
        try:
            for raw, code, log_pos, flags in dump.packets():
                if not (code in _GTID_EVENTS or log_pos == 0 or flags & _ARTIFICIAL):
                    continue
                for ev in dump.decoder.decode_event(raw):
                    gtid = ev.gtid if isinstance(ev, (MariaGtidEvent, GtidEvent)) else None
                    if gtid is not None and _holds(state, gset, gtid):
                        raise ConfigError(
                            f"startingPosition {text}: {gtid} at {dump.decoder.file}:{ev.offset} "
                            f"comes after {first.file}:{first.pos}, the first transaction the "
                            "position lacks, yet the position holds it: no single binlog offset "
                            "starts there without repeating it",
                            hint="give FILE:POS, or the GTID position of one point of the binlog "
                                 "(SELECT BINLOG_GTID_POS(file, pos) on MariaDB)")
        finally:
            dump.close()

    def prepareForTriggerAvailableNow(self) -> None:
        """availableNow: the primary's end now is the last offset this run may return."""
        conn = _connect(self.opts.url)
        try:
            self._target = offset_key(*_end_key(self.opts.url, conn))
        finally:
            conn.close()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_rows is not None:
            return ReadMaxRows(self.opts.max_rows)
        if self.opts.max_bytes is not None:
            return ReadMaxBytes(self.opts.max_bytes)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The last transaction boundary within the limit, up to the primary's end (or the
        availableNow target); `start` itself when there is no whole new transaction."""
        s = position_of(start)
        if isinstance(limit, ReadAllAvailable):
            max_rows = max_bytes = None
        elif isinstance(limit, (ReadMaxRows, ReadMaxBytes)):
            # Spark passes one limit type; the options may set both: respect both.
            max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.opts.max_rows
            max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else self.opts.max_bytes
        else:
            raise ConfigError(f"binlake stream: read limit {limit!r} is not supported",
                              hint="use maxRowsPerTrigger or maxBytesPerTrigger")
        url = self.opts.url
        conn = _connect(url)
        try:
            end_file, end_pos = _end_key(url, conn)
            cap = offset_key(end_file, end_pos)
            if self._target is not None:
                cap = min(cap, self._target)
            skey = offset_key(s.file, s.pos)
            if cap == skey:
                return start
            _check_on_server(url, conn, s, "checkpointed offset")
            if cap < skey:
                if self._target is not None and self._target < skey:
                    return start  # the run started past its target: nothing to do
                raise OffsetUnavailable(
                    f"the primary {url} ends at {end_file}:{end_pos}, before the checkpointed "
                    f"offset {s.file}:{s.pos} (a failover to a server with less binlog?)",
                    hint=_RECOVERY)
        finally:
            conn.close()
        if self._idle == (skey, cap):
            return start  # walked this before: only non-transaction events (a rotation's)
        schema = self._schema_for(s)
        result = scan(url, s, cap, server_id=self.opts.server_id_base,
                      heartbeat=self.opts.heartbeat, tables=self.opts.table_filter(),
                      count_rows=max_rows is not None, max_rows=max_rows, max_bytes=max_bytes,
                      split_bytes=self.opts.partition_bytes, schema=schema)
        if result.end is None:
            self._idle = (skey, cap)
            return start
        if schema is not None:
            # Saved before Spark writes the offset: the file is never behind the offset log.
            self._walked(result.end)
            self._save_schema()
        self._last_scan = (skey, result)
        return offset_of(result.end)

    # -- schema history ----------------------------------------------------------------------
    def _schema_for(self, s: Position) -> "SchemaTracker | None":
        """The driver's tracker, able to answer for every position from `s` on (loaded from the
        file, or bootstrapped at `s`); None without a history (TABLE_MAP names)."""
        from ..schema.history import BinlogPos

        path = self.opts.schema_history
        if path is None or self._table_maps:
            return None
        at = BinlogPos(s.file, s.pos)
        if self._schema is None:
            if os.path.exists(path):
                history, covered, tables = load_schema_history(path)
                if (tables or None) != (self.opts.tables or None):
                    raise ConfigError(
                        f"the schema history {path} tracks the tables {tables or '(all)'!r}, "
                        f"this query reads {self.opts.tables or '(all)'!r}",
                        hint="give each query its own schemaHistory path (like its checkpoint "
                             "location), or keep the tables option")
                self._install(history, covered)
            else:
                history = bootstrap_schema_history(self.opts.url, self.opts.tables,
                                                   at=(s.file or "", s.pos))
                if history is None:
                    self._without_history(s)
                    return None
                self._install(history, at)
                self._save_schema(force=True)
        tracker = self._schema
        assert tracker is not None
        start = tracker.history.start
        if start is not None and start.file is not None and at < start:
            raise OffsetUnavailable(
                f"the schema history {path} starts at {start}, after the offset "
                f"{s.file}:{s.pos}: it cannot name the columns of the changes before it",
                hint="restore the history file that belongs to this checkpoint, or start a new "
                     "query (new checkpoint location and schemaHistory path) at "
                     "startingPosition 'latest'")
        if self._covered is None or self._covered < at:
            self._catch_up(at)
        return tracker

    def _install(self, history: "SchemaHistory", covered: "BinlogPos | None") -> None:
        from ..schema.tracker import SchemaTracker
        from ..snapshot.server import connect

        url = self.opts.url
        # The driver may re-read a table the DDL parser cannot follow (only when the binlog
        # shows nothing changed it since); executors never do: they find the driver's record.
        self._schema = SchemaTracker(history, connect=lambda: connect(url),
                                     tables=tracked_tables(self.opts.tables))
        self._covered = covered
        self._saved = (covered, time.monotonic())

    def _walked(self, end: Position) -> None:
        from ..schema.history import BinlogPos

        p = BinlogPos(end.file, end.pos)
        if self._covered is None or self._covered < p:
            self._covered = p

    def _catch_up(self, at: "BinlogPos") -> None:
        """A query starting past the binlog the history has seen: walk the gap for its DDL."""
        assert self._schema is not None
        covered = self._covered or self._schema.history.head or self._schema.history.start
        if covered is None or covered.file is None:
            raise ConfigError(f"the schema history {self.opts.schema_history} does not say "
                              "where it starts", hint="delete it and start at 'latest'")
        log.info("schema history: walking %s -> %s:%s for DDL", covered, at.file, at.pos)
        try:
            scan(self.opts.url, Position(covered.file, covered.pos),
                 (file_index(at.file), at.pos), server_id=self.opts.server_id_base,
                 heartbeat=self.opts.heartbeat, tables=no_table, schema=self._schema)
        except OffsetUnavailable as exc:
            raise OffsetUnavailable(
                f"the schema history {self.opts.schema_history} has seen the binlog up to "
                f"{covered}; the DDL between there and {at.file}:{at.pos} cannot be read: "
                f"{exc.args[0]}",
                hint="start a new query (new checkpoint location, no history file) at "
                     "startingPosition 'latest'") from None
        self._covered = at
        self._save_schema(force=True)

    def _without_history(self, s: Position) -> None:
        """No exact history for `s`: TABLE_MAP names when the primary logs FULL metadata."""
        metadata = _row_metadata(self.opts.url)
        where = f"{s.file}:{s.pos}"
        if metadata == "FULL":
            log.warning("schema history %s: cannot bootstrap it exactly at %s (DDL since); "
                        "names and types come from the TABLE_MAPs (binlog_row_metadata=FULL), "
                        "and DDL makes no 'ddl' records", self.opts.schema_history, where)
            self._table_maps = True
            return
        raise ConfigError(
            f"binlake stream: no schema history at {self.opts.schema_history} for the start "
            f"{where}, and one cannot be bootstrapped there: information_schema shows the "
            "shapes at the primary's end, and DDL on the tracked tables was logged since "
            "(or the binlog in between could not be read); without a history, names and "
            f"types come from the TABLE_MAPs, but binlog_row_metadata is {metadata}, not FULL",
            hint="start the query at startingPosition 'latest' with a new checkpoint location "
                 "(the history is bootstrapped there), or restore the history file of this "
                 "checkpoint, or set binlog_row_metadata=FULL on the primary")

    def _save_schema(self, force: bool = False) -> None:
        """Write the history when it changed (always before an offset goes to Spark), else at
        most every HISTORY_SAVE_SECONDS to move `covered` (a restart walks less)."""
        tracker, path = self._schema, self.opts.schema_history
        if tracker is None or path is None:
            return
        saved, when = self._saved
        now = time.monotonic()
        if not (force or tracker.dirty or (self._covered != saved
                                           and now - when >= HISTORY_SAVE_SECONDS)):
            return
        save_schema_history(path, tracker.history, self._covered, self.opts.tables)
        tracker.dirty = False
        self._saved = (self._covered, now)

    def _range_history(self, start: tuple[str, int]) -> str | None:
        """The history for one range, compacted to its start (what the executor needs)."""
        from ..schema.history import BinlogPos, SchemaHistory

        if self._schema is None:
            return None
        h = SchemaHistory.from_dict(self._schema.history.to_dict())
        h.compact(BinlogPos(*start))
        return json.dumps(h.to_dict(), ensure_ascii=False, separators=(",", ":"))

    # -- planning --------------------------------------------------------------------------
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        """One range in steady state; a big backlog split at transaction boundaries (from the
        walk that found `end`, else a fresh one) so executors read it in parallel."""
        s, e = position_of(start), position_of(end)
        skey, ekey = offset_key(s.file, s.pos), offset_key(e.file, e.pos)
        if skey >= ekey:
            return []
        splits: list[Position] = []
        pb = self.opts.partition_bytes
        small = s.file == e.file and e.pos - s.pos <= pb
        if pb and self.opts.max_partitions > 1 and not small:
            cached = self._last_scan
            if cached is not None and cached[0] == skey and cached[1].end is not None and \
                    offset_key(cached[1].end.file, cached[1].end.pos) == ekey:
                splits = cached[1].splits
            else:  # a batch replayed from the offset log after a restart
                splits = scan(self.opts.url, s, ekey, server_id=self.opts.server_id_base,
                              heartbeat=self.opts.heartbeat, split_bytes=pb).splits
            splits = [x for x in splits if skey < offset_key(x.file, x.pos) < ekey]
            splits = _thin(splits, self.opts.max_partitions - 1)
        points = [s, *splits, e]
        base = self.opts.server_id_base + 1
        # A batch replayed after a restart finds the history in its file (never behind).
        self._schema_for(s)
        ranges = [BinlogRange(i, a.file or "", a.pos, b.file or "", b.pos, base + i,
                              self._range_history(_oldest_needed(a)),
                              [r.to_json() for r in a.xa_prepared])
                  for i, (a, b) in enumerate(zip(points, points[1:]))]
        if self.opts.range_log:
            _log_ranges(self.opts.range_log, e, ranges)
        return ranges

    def commit(self, end: dict[str, Any]) -> None:
        """The Spark checkpoint owns the offsets and the primary needs no acknowledgement (and
        Spark calls this late, or never for the last batch of a run). With a schema history:
        forget what no later batch can need, the versions superseded before `end`."""
        from ..schema.history import BinlogPos

        tracker = self._schema
        if tracker is None:
            return
        e = position_of(end)
        cp = BinlogPos(*_oldest_needed(e))  # a pending XA PREPARE is read again
        h = tracker.history
        stale = any(BinlogPos(r.file, r.pos) < cp for r in h.log) or any(
            len(vs) > 1 and vs[1].since <= cp or (vs[-1].table is None and vs[-1].since <= cp)
            for vs in h.versions.values())
        if stale:
            h.compact(cp)
            self._save_schema(force=True)

    def stop(self) -> None:
        """The query ends: record how far the binlog was walked."""
        try:
            self._save_schema(force=self._covered != self._saved[0])
        except Exception as exc:  # noqa: BLE001 - only makes the next start walk less
            log.warning("schema history: final save failed: %s", exc)

    # -- executors -------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Replay exactly `[start, end)` as CDC Arrow batches; fail unless `end` is reached."""
        from ..replica.stream import BinlogStream, StreamOptions
        from ..cdc.arrow import MAX_BATCH_BYTES, CdcBatchBuilder

        assert isinstance(partition, BinlogRange)
        p = partition
        resolver = None
        if getattr(p, "history", None) is not None:
            from ..schema.history import SchemaHistory
            from ..schema.tracker import SchemaTracker

            # No server connection: every DDL in the range is in the history's log already.
            resolver = SchemaTracker(SchemaHistory.from_dict(json.loads(p.history)),
                                     tables=tracked_tables(self.opts.tables))
        xa = tuple(PreparedRange.from_json(r) for r in getattr(p, "xa_prepared", []))
        opts = StreamOptions(server_id=p.server_id,
                             start=Position(p.start_file, p.start_pos, xa_prepared=xa),
                             until_end=True, stop_at=(p.end_file, p.end_pos),
                             heartbeat=self.opts.heartbeat, tables=self.opts.table_filter(),
                             max_reconnects=5, hostname="binlake-spark",
                             table_resolver=resolver, json_images=True)
        stream = BinlogStream(self.opts.url, opts)
        builder = CdcBatchBuilder()
        size = self.opts.batch_size
        where = f"{p.start_file}:{p.start_pos} -> {p.end_file}:{p.end_pos}"
        try:
            for records in stream.batches():  # only the range's end position matters here
                if len(builder) + len(records) <= size:  # a rows event's records: one segment
                    builder.add_records(records)
                    if len(builder) >= size or builder.image_bytes >= MAX_BATCH_BYTES:
                        yield builder.flush()
                    continue
                for rec in records:
                    builder.add(rec)
                    if len(builder) >= size or builder.image_bytes >= MAX_BATCH_BYTES:
                        yield builder.flush()
        except PositionUnavailable as exc:
            raise OffsetUnavailable(f"binlake stream range {where}: {exc.args[0]}",
                                    code=exc.code, hint=_RECOVERY) from None
        except BinlakeError as exc:
            raise RangeIncomplete(f"binlake stream range {where} failed at {stream.position}: {exc}") from None
        finally:
            stream.close()
        got = stream.position
        if (got.file, got.pos) != (p.end_file, p.end_pos) or got.rows_done:
            raise RangeIncomplete(
                f"binlake stream range {where} stopped at {got}, not at its end: the primary "
                f"{self.opts.url} has less binlog than the offset log says",
                hint="a failover to a server with less binlog, or a binlog cut by a crash; "
                     + _RECOVERY)
        if len(builder):
            yield builder.flush()


def _range_log_file(folder: str, file: str | None, pos: int) -> str:
    return os.path.join(folder, f"{file_index(file)}-{pos}.json")


def _log_ranges(folder: str, end: Position, ranges: list[BinlogRange]) -> None:
    """Record a batch's ranges under its end offset (atomically: written, then renamed)."""
    from .._util.atomic import atomic_write_text

    os.makedirs(folder, exist_ok=True)
    doc = {"end": [end.file, end.pos],
           "ranges": [{k: getattr(r, k) for k in RANGE_FIELDS} for r in ranges]}
    atomic_write_text(_range_log_file(folder, end.file, end.pos), json.dumps(doc))


RANGE_FIELDS = ("index", "start_file", "start_pos", "end_file", "end_pos", "server_id",
                "history", "xa_prepared")

DRIVER_BATCH_BYTES = 256 << 20
"""`read_planned`'s default limit: it gives up on a batch whose row images pass it (the
executors read it instead): what one batch may cost the driver's memory, several times over."""


def read_planned(options: dict[str, Any], end: tuple[str, int], *,
                 limit: int = DRIVER_BATCH_BYTES) -> Any:
    """The batch ending at `end` read by the driver: its ranges as the source planned them
    (option `rangeLog`), read exactly as `read()` reads them on executors, as one CDC
    pyarrow Table. None when they were not recorded or the images pass `limit` bytes.
    The record is removed once read."""
    import pyarrow as pa

    from .._util.memory import release_freed
    from ..cdc.arrow import CDC_SCHEMA

    folder = options.get("rangeLog")
    if not folder:
        return None
    release_freed()  # what the previous batch freed, before this one is read
    path = _range_log_file(folder, *end)
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if tuple(doc.get("end") or ()) != tuple(end):
        return None
    reader = BinlogStreamReader(options)
    batches, size = [], 0
    for r in doc["ranges"]:
        with contextlib.closing(reader.read(BinlogRange(**{k: r[k] for k in RANGE_FIELDS}))) as rd:
            for b in rd:
                size += b.nbytes
                if size > limit:
                    log.info("batch too large for the driver; executors read it",
                             extra={"bytes": size})
                    return None
                batches.append(b)
    os.unlink(path)
    return pa.Table.from_batches(batches, schema=CDC_SCHEMA)


def _oldest_needed(p: Position) -> tuple[str, int]:
    """The oldest binlog place a reader from `p` may read: `p`, or the start of the oldest
    XA PREPARE pending there (its COMMIT re-reads it)."""
    here = (p.file or "", p.pos)
    for r in p.xa_prepared:
        if offset_key(r.file, r.start) < offset_key(*here):
            here = (r.file, r.start)
    return here


def _thin(points: list[Any], n: int) -> list[Any]:
    """At most n split points, evenly picked (keeps partitions balanced in bytes)."""
    if len(points) <= n:
        return points
    if n <= 0:
        return []
    step = (len(points) + 1) / (n + 1)
    return [points[int(round(step * (i + 1))) - 1] for i in range(n)]
