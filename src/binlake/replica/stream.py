"""The live replica: connect, register, dump, decode, track the exact position, reconnect.

This is the I/O edge around the sans-IO pieces (protocol, dialogue, decoder, transaction
boundaries). Row changes come out of `BinlogStream.changes()`; after each one,
`stream.position` says where a restart must resume so that nothing is delivered twice or lost.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Literal, Protocol, cast, overload

from ..binlog.codecs.rows import FAST_TYPES
from ..binlog.constants import ChecksumAlg, ColumnType, EventType
from ..binlog.decoder import BinlogDecoder, TableResolver
from ..binlog.left_out import LeftOut
from ..binlog.events import (
    Event, GtidEvent, HeartbeatEvent, MariaGtidEvent, QueryEvent, RotateEvent, RowsEvent,
    XaPrepareEvent, XidEvent,
)
from ..binlog.table_map import TableMapEvent
from ..cdc.changes import ChangeRecord, ChangeTracker, no_table
from ..errors import BinlakeError, ConfigError, ServerError
from .._util.versions import version_tuple
from ..gtid.sets import MariaGtidState, MySQLGtidSet, parse_gtid
from . import dialogue as dlg
from .connection import ConnectionFailed, ConnectionLost, MySQLConnection, ReadTimeout
from .position import BoundaryError, Position, TransactionBoundaries, make_position
from .url import ServerURL
from ..cdc.xa import PreparedRange, XaError, XaLedger, decision, recovered_xids

log = logging.getLogger("binlake.replica")

# Errors after which a reconnect may succeed (server going away, connection killed).
_TRANSIENT_SERVER_ERRORS = {1053, 1077, 1152, 1158, 1159, 1160, 1161, 1927, 2006, 2013}
_POSITION_HINT = ("start from a position it still has (--start FILE:POS or --gtid), or re-snapshot "
                  "the tables and stream from the current end; nothing was read")
_ARTIFICIAL = 0x20  # LOG_EVENT_ARTIFICIAL_F: made up by the dump thread, not in the file


_MIN_EVENT_PACKET = 4 + 1 + 19
"""Packet header, status byte, event header: the least a received event packet can be."""
_TYPE_AT = 4 + 1 + 4
"""Where a received event packet's event type is: after the packet header, the status byte
and the event's timestamp."""
_RUN_TYPES = FAST_TYPES | {EventType.XID, EventType.MARIADB_GTID, EventType.TABLE_MAP}
"""The events a run over received packets may start at: the common rows events (as
event_rows.h's scan_kind) and the XID, MariaDB GTID and TABLE_MAP around them, which a group
run takes too (a TABLE_MAP only if parsed before, a GTID only outside XA). A packet of
another type is read the general way at once, without starting a run that would stop there.
Why the group events: a small transaction is four events, and each taken the general way
cost more than the run's whole work for it. (A schema resolver sees the TABLE_MAPs a run takes:
the C scanner calls it.)"""

class _Merged:
    """The type of `_MERGED`."""


_MERGED = _Merged()
"""_serve's `batched` for batches(per_event=False): lists may span rows events."""

_Batched = bool | _Merged
"""False: records one by one; True: a list per rows event (or statement); _MERGED: lists
that may span rows events."""

_Out = ChangeRecord | list[ChangeRecord]
"""What the main loop hands out: a record, or a list of them when batched."""


class _GroupRun(Protocol):
    """A group run of `BinlogDecoder.scan_packets` (group=True), as the main loop drives it:
    `records` (a key) turns it to records mode, which hands out lists of change records of
    kept rows events (`batch_events` events, `batch_rows` rows each); `gtid` and `merge` say
    the open transaction's GTID and whether its rows events may be merged. Else as
    `PacketRun`, whose __iter__ hands out events only."""

    pos: int
    seq: int
    skipped: int
    skipped_rows: int
    skip: int
    records: tuple[str, Any] | None
    gtid: str | None
    merge: bool
    batch_events: int
    batch_rows: int

    def __iter__(self) -> Iterator[Event | list[ChangeRecord]]: ...

_RECORD_EVENTS = (QueryEvent, XaPrepareEvent)
"""Events besides rows events that may hand out records (_handle): TRUNCATE, statement DML,
DDL and XA COMMIT queries; MySQL's XA COMMIT ... ONE PHASE."""


class _ResolveAt:
    """A table resolver asked as if every TABLE_MAP were at one binlog place."""

    def __init__(self, inner: TableResolver, file: str, pos: int) -> None:
        self.inner, self.file, self.pos = inner, file, pos

    def resolve(self, tm: Any) -> Any:
        return self.inner.resolve(dataclasses.replace(tm, file=self.file, offset=self.pos))


class ResumeMismatch(BinlakeError):
    """The transaction found at the checkpoint is not the one the checkpoint was taken in."""


class PositionUnavailable(BinlakeError):
    """The primary cannot serve the requested position (purged, never written, diverged)."""

    def __init__(self, message: str, *, code: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.code = code


class GtidGap(BinlakeError):
    """The primary sent a GTID that leaves a hole in its source's executed set: the
    transactions in between were never sent (lost by the primary, or skipped)."""


class PositionWentBack(BinlakeError):
    """The primary sent a transaction that starts before where the stream already is, in the
    same binlog file: its positions no longer say where events lie."""


class DumpRefused(BinlakeError):
    """The primary closed the connection right after the dump request, again and again,
    before sending a single event: retrying will not help."""


_INTEGER_TYPES = frozenset({ColumnType.TINY, ColumnType.SHORT, ColumnType.INT24, ColumnType.LONG,
                            ColumnType.LONGLONG})
"""The integer types a TABLE_MAP's signedness flag applies to."""

_SLOW_HEARTBEAT_TIMEOUT = 100.0
"""Idle timeout for a primary that ignores the heartbeat period asked for (Dolt sends one
every 30 s whatever it is asked): three of its heartbeats and some."""

_MAX_REFUSALS = 4
"""Connections in a row the primary may close right after the dump request, before any
event, until the stream gives up (a restart in progress passes within these tries)."""


class _Interrupted(BaseException):
    """Raised out of a blocking read by `request_stop()` (a signal handler); never escapes."""


@dataclass
class StreamOptions:
    server_id: int = 6449519
    start: Position | None = None
    """None: the primary's current end (only new changes)."""
    until_end: bool = False
    """Stop at the primary's end as it was when the stream connected."""
    semi_sync: bool = False
    heartbeat: float = 5.0
    """Seconds between the primary's heartbeats when idle; 3 silent periods = a dead link."""
    reconnect: bool = True
    max_reconnect_wait: float = 30.0
    max_reconnects: int | None = None
    """Consecutive failed attempts before giving up (None: never give up)."""
    tables: Callable[[str, str], bool] | None = None
    verify_checksums: bool = True
    table_resolver: TableResolver | None = None
    json_images: bool | str = False
    """Records carry their images as CDC JSON bytes written in C (the Spark source's path);
    "lines": the same for the JSON lines of binlake stream (see cdc.jsontext.images_for)."""
    replica_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    hostname: str = "binlake"
    on_commit: Callable[[Position], None] | None = None
    """Called at every transaction boundary, after its rows were handed out and before a
    semi-sync ACK (make the checkpoint durable here to ACK only what is safely stored)."""
    on_stream_start: Callable[[Position], None] | None = None
    """Called once, when the primary sent the first event from the start position (so it
    accepted it) and before any row is handed out."""
    on_idle: Callable[[Position], None] | None = None
    """Called at each heartbeat outside a transaction (the primary is quiet): a chance to
    store a position that on_commit left unsaved."""
    stop_at: tuple[str, int] | None = None
    """Stop at this (file, pos) boundary; an error if the stream cannot reach it."""
    xa_walk: bool = False
    """Only walk the binlog for its XA PREPAREs (a commit of changes not read is no error)."""
    on_incident: Callable[[Any], None] | None = None
    """Called for an INCIDENT event, which is then read past (None: the stream stops there
    with binlake.cdc.changes.IncidentError, before it)."""
    reread_server_id: int | None = None
    """Server id of the short second dump that re-reads an XA PREPARE this stream did not
    see (None: server_id with its top bit flipped; a replica id must be unique)."""


# Events a binlog file starts with, outside any transaction: resuming after them is safe.
_FILE_HEADER_EVENTS = frozenset({EventType.FORMAT_DESCRIPTION, EventType.PREVIOUS_GTIDS,
                                 EventType.MARIADB_GTID_LIST, EventType.MARIADB_BINLOG_CHECKPOINT})


class BinlogStream:
    """Row changes from a primary, resumable at any row."""

    def __init__(self, url: ServerURL, options: StreamOptions | None = None) -> None:
        self.url = url
        self.options = options or StreamOptions()
        self.conn: MySQLConnection | None = None
        self.flavor: str | None = None
        self.server_version: str | None = None
        self.end_position: tuple[str, int] | None = None
        self._start = self.options.start
        self._boundary: Position | None = None
        """file:pos of the last transaction boundary (None until the first connection)."""
        self._gtid_set: MySQLGtidSet | None = None
        self._gappy: set[tuple[str, str | None]] = set()
        self._gtid_state: MariaGtidState | None = None
        self._tx = TransactionBoundaries()
        self._rows_in_tx = 0
        """Row images of the open transaction passed on during this connection."""
        self._skip = 0
        """Row images of the open (or next) transaction delivered before a reconnect/restart."""
        self._resume_gtid: str | None = None
        start_xa = self._start.xa_prepared if self._start is not None else ()
        self._xa = XaLedger(start_xa)
        """Prepared XA transactions not yet decided (binlake.cdc.xa), across connections."""
        self._xa_boundary: tuple[PreparedRange, ...] = start_xa
        """Those pending at the boundary (what the position carries)."""
        self._ack_pending = False
        self._stop_requested = False
        self._interruptible = False
        self._reader: int | None = None
        self._wake = threading.Event()
        self._started = False
        self._got_event = False
        self._failures = 0
        self._dump_sent = False
        """The dump request went out on the current connection."""
        self._dump_by_file = False
        """It asked by file position (COM_BINLOG_DUMP, not by GTIDs)."""
        self._refusals = 0
        """Connections in a row that ended after the dump request without an event."""
        self._end_gtid_set: MySQLGtidSet | None = None
        self._end_gtid_state: MariaGtidState | None = None
        """until_end: the primary's executed GTIDs at the end position (a GTID dump skips
        what the start set holds, so the file position of the end may never be seen)."""
        self._idle_at_end = False
        """until_end: a heartbeat said the primary has sent everything up to the end."""
        self._unsaved = False
        """A transaction ended since on_idle was last called."""
        self._unsigned_unknown: set[int] = set()
        """Table ids whose signedness was looked at (after the table resolver, if any: a
        schema history fills it in, except for tables it does not track)."""
        self._signedness_warned: set[str] = set()
        self._idle_timeout = self.options.heartbeat * 3
        """Silence after which the link counts as dead (3 heartbeat periods)."""
        self._last_heartbeat: float | None = None
        self._heartbeat_on_time = False
        """Two heartbeats came within 2 periods: the primary keeps the period asked for."""
        self.events_seen = 0
        self.rows_seen = 0
        self.reconnects = 0

    # -- position ---------------------------------------------------------------------------
    @property
    def position(self) -> Position:
        """Where to resume: after every row change handed out so far."""
        b = self._boundary
        if b is None:
            return self._start or Position()
        gset = str(self._gtid_set) if self._gtid_set is not None else None
        gstate = str(self._gtid_state) if self._gtid_state is not None else None
        rows = self._rows_in_tx + self._skip
        tx_gtid = None
        if rows:
            tx_gtid = self._tx.gtid if self._tx.in_tx else self._resume_gtid
        return make_position(b.file, b.pos, gset, gstate, rows, tx_gtid, self._xa_boundary)

    @property
    def positioned(self) -> bool:
        """The start position is known (a connection got far enough to settle it)."""
        return self._boundary is not None

    @property
    def started(self) -> bool:
        """The primary accepted the start position (its first event arrived)."""
        return self._started

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Stop at the next safe point; safe to call from a signal handler or another thread.

        On the thread that reads (a signal handler), a blocking read or a reconnect wait is
        cut short at once: nothing is half-updated there. Otherwise the stream stops before
        it reads the next packet, once the run of rows events it is handing out from its
        receive buffer ends (from another thread: within one heartbeat period), and a
        consumer should check `stop_requested` after each record.
        """
        self._stop_requested = True
        if threading.get_ident() != self._reader:
            self._wake.set()  # cut a reconnect wait short
        elif self._interruptible:
            raise _Interrupted()

    # -- connection ---------------------------------------------------------------------------
    def _connect(self) -> MySQLConnection:
        kw = self.url.connect_kwargs()
        kw.setdefault("read_timeout", max(10.0, self.options.heartbeat * 3))
        return MySQLConnection.connect(self.url.host, self.url.port, self.url.user, self.url.password,
                                       **kw)

    def current_end(self, conn: MySQLConnection) -> tuple[str, int, str | None]:
        """(file, pos, gtid) of the primary's binlog end; the GTID position is that of the
        same file:pos (MariaDB computes it from the binlog, so a concurrent commit cannot
        slip in between)."""
        major = version_tuple(conn.server_version)
        stmt = ("SHOW BINARY LOG STATUS" if conn.flavor == "mysql" and major >= (8, 4, 0)
                else "SHOW MASTER STATUS")
        rs = conn.query(stmt)
        if not rs.rows:
            raise ConfigError(f"{self.url} has binary logging disabled",
                              hint="start the server with log_bin and binlog_format=ROW")
        row = rs.rows[0]
        file = dlg.not_null(row[0], f"the binlog file in {stmt}")
        pos = int(dlg.not_null(row[1], f"the binlog position in {stmt}"))
        gtid = None
        if conn.flavor == "mariadb":
            name = file.replace("\\", "\\\\").replace("'", "\\'")
            gtid = conn.query(f"SELECT BINLOG_GTID_POS('{name}', {pos})").rows[0][0]
            if gtid is None:
                raise BinlakeError(f"{self.url} cannot tell the GTID position of its own end {file}:{pos}")
        elif len(row) >= 5:
            gtid = (row[4] or "").replace("\n", "")
        return file, pos, gtid

    def _open(self) -> tuple[MySQLConnection, BinlogDecoder]:
        conn = self._connect()
        try:
            self.flavor = conn.flavor
            self.server_version = conn.server_version
            checksum = conn.query("SELECT @@global.binlog_checksum").rows[0][0] or "NONE"
            if self._boundary is None:
                self._init_start(conn)
            if self.options.until_end and self.end_position is None:
                # The end as of now; the dump itself blocks (not BINLOG_DUMP_NON_BLOCK, which
                # some primaries refuse) and the stream stops once it gets there.
                f, p, g = self.current_end(conn)
                self.end_position = (f, p)
                if g is not None and self.flavor == "mariadb":
                    self._end_gtid_state = MariaGtidState(g)
                elif g is not None:
                    self._end_gtid_set = MySQLGtidSet(g)
            pos = self.position
            if pos.mode == "file":
                self._check_file_position(conn, pos)
            gtid_state = pos.gtid_state if (self.flavor == "mariadb" and pos.gtid_state is not None) else None
            for stmt in dlg.setup_statements(self.flavor, self.server_version, checksum=checksum,
                                             heartbeat_period=self.options.heartbeat,
                                             replica_uuid=self.options.replica_uuid,
                                             semi_sync=self.options.semi_sync,
                                             gtid_state=gtid_state):
                conn.execute(stmt)
            conn.command(dlg.COM_REGISTER_SLAVE, dlg.register_slave_payload(
                self.options.server_id, self.options.hostname, port=0))
            non_block = False
            self._dump_by_file = False
            if self.flavor == "mysql" and pos.gtid_set is not None:
                payload = dlg.binlog_dump_gtid_payload(MySQLGtidSet(pos.gtid_set).encode_for_dump(),
                                                       self.options.server_id, non_block)
                conn.send_command(dlg.COM_BINLOG_DUMP_GTID, payload)
            elif gtid_state is not None:
                conn.send_command(dlg.COM_BINLOG_DUMP,
                                  dlg.binlog_dump_payload("", 4, self.options.server_id, non_block))
            else:
                self._dump_by_file = True
                conn.send_command(dlg.COM_BINLOG_DUMP,
                                  dlg.binlog_dump_payload(pos.file or "", pos.pos,
                                                          self.options.server_id, non_block))
            self._dump_sent = True
            # The primary sends a heartbeat after each idle period: 3 missed ones = dead link.
            conn.read_timeout = self._idle_timeout
            self._last_heartbeat = None
        except BaseException:
            conn.close()
            raise
        dec = BinlogDecoder(checksum=ChecksumAlg.CRC32 if checksum.upper() == "CRC32" else ChecksumAlg.OFF,
                            verify_checksums=self.options.verify_checksums,
                            table_resolver=self.options.table_resolver,
                            json_images=self.options.json_images,
                            # Other tables' rows are counted (the resume point needs the
                            # count), never decoded.
                            table_filter=self.options.tables, left_out=LeftOut(count=True))
        dec.file = pos.file
        self._tx.reset()
        self._rows_in_tx = 0
        self._ack_pending = False
        self.conn = conn
        return conn, dec

    def _init_start(self, conn: MySQLConnection) -> None:
        start = self._start
        if start is None:
            f, p, g = self.current_end(conn)
            if conn.flavor == "mariadb":
                start = Position(f, p, gtid_state=g)
            else:  # GTIDs on (even with none executed yet): position by GTIDs, else by file
                gset = g or ("" if self._gtid_mode_on(conn) else None)
                start = Position(f, p, gtid_set=gset)
        if start.gtid_set is not None and conn.flavor != "mysql":
            raise ConfigError(f"{self.url} is MariaDB, but the start position is a MySQL GTID set "
                              f"({start.gtid_set})", hint="give a MariaDB GTID position such as 0-1-42")
        if start.gtid_state is not None and conn.flavor != "mariadb":
            raise ConfigError(f"{self.url} is MySQL, but the start position is a MariaDB GTID "
                              f"position ({start.gtid_state})",
                              hint="give a MySQL GTID set such as 3E11FA47-71CA-11E1-9E33-C80AA9429562:1-42")
        if start.file is None and start.gtid_set is None and start.gtid_state is None:
            raise ConfigError("the start position names neither a binlog file nor GTIDs")
        self._gtid_set = MySQLGtidSet(start.gtid_set) if start.gtid_set is not None else None
        # Sources whose start set already had holes: a new one there is not checked.
        self._gappy = ({k for k in self._gtid_set.keys() if len(self._gtid_set.intervals(*k)) > 1}
                       if self._gtid_set is not None else set())
        self._gtid_state = MariaGtidState(start.gtid_state) if start.gtid_state is not None else None
        if self._gtid_state is not None and self._gtid_state.domains:
            self._check_domains(conn, self._gtid_state)
        self._skip = start.rows_done
        self._resume_gtid = start.tx_gtid if start.rows_done else None
        self._boundary = Position(start.file, start.pos)

    @staticmethod
    def _gtid_mode_on(conn: MySQLConnection) -> bool:
        """MySQL's @@gtid_mode is ON: every transaction has a GTID (a primary may serve
        only GTID dumps), whether or not one was executed yet."""
        try:
            mode = conn.query("SELECT @@global.gtid_mode").rows[0][0]
        except ServerError:
            return False  # no such variable (MySQL 5.5, a MySQL-like server): by file
        return str(mode or "").upper() == "ON"

    def _check_domains(self, conn: MySQLConnection, state: MariaGtidState) -> None:
        """MariaDB streams a domain it has never seen from its oldest binlog on: every other
        domain's history, which is not what 'start after these GTIDs' asked for."""
        # gtid_binlog_state holds one GTID per (domain, server): not a MariaGtidState.
        known = (conn.query("SELECT @@global.gtid_binlog_state").rows[0][0] or "").strip()
        domains = {int(g.split("-", 1)[0]) for g in known.split(",") if g.strip()}
        missing = [d for d in state.domains if d not in domains]
        if missing:
            names = ", ".join(str(d) for d in missing)
            raise PositionUnavailable(
                f"the primary {self.url} cannot stream from GTID position {state}: it has no GTIDs "
                f"of domain {names} (its binlog state is {known or 'empty'})",
                hint="name only domains the primary has (SELECT @@gtid_binlog_state), or start by "
                     "--start FILE:POS; nothing was read")

    # -- main loop ----------------------------------------------------------------------------
    def changes(self) -> Iterator[ChangeRecord]:
        """Row changes in commit order; reconnects and resumes after network failures.
        After each record, `position` counts it (a checkpoint may be taken between any two)."""
        return self._serve(batched=False)

    def batches(self, *, per_event: bool = True) -> Iterator[list[ChangeRecord]]:
        """The same row changes as lists (one per rows event, or per statement): no generator
        step per record, for consumers that handle a list at a time (the CLI, Spark). After
        each list, `position` counts all of it.

        per_event=False: a list may hold the records of several rows events of one
        transaction, in order (made in C inside a transaction, with no Python step per
        event), for consumers that do not need the events apart (the CLI)."""
        return self._serve(batched=True if per_event else _MERGED)

    @overload
    def _serve(self, batched: Literal[False]) -> Iterator[ChangeRecord]: ...

    @overload
    def _serve(self, batched: Literal[True] | _Merged) -> Iterator[list[ChangeRecord]]: ...

    def _serve(self, batched: _Batched) -> Iterator[_Out]:
        wait = 0.5
        self._reader = threading.get_ident()
        try:
            while not self._stop_requested:
                self._got_event = False
                self._dump_sent = False
                try:
                    conn, dec = self._open()
                    yield from self._run(conn, dec, batched)
                    self.close()
                    return
                except ConnectionFailed as exc:  # also ConnectionLost, ReadTimeout
                    self._drop_connection()
                    if not self._may_retry(exc):
                        raise
                    self._count_refusal(exc)
                    if isinstance(exc, ReadTimeout) and self._got_event:
                        self._slow_heartbeats()
                except ServerError as exc:
                    self._drop_connection()
                    if exc.code not in _TRANSIENT_SERVER_ERRORS or not self._may_retry(exc):
                        raise
                    self._count_refusal(exc)
                if self._got_event:  # that connection worked: a fresh failure, a fresh backoff
                    wait = 0.5
                log.warning("replication connection lost, reconnecting",
                            extra={"position": str(self.position), "wait_s": wait})
                self._interruptible = True
                try:
                    if not self._stop_requested:
                        self._wake.wait(wait)
                finally:
                    self._interruptible = False
                wait = min(wait * 2, self.options.max_reconnect_wait)
        except _Interrupted:
            pass
        self._drop_connection()

    def _slow_heartbeats(self) -> None:
        """A working link went silent for 3 heartbeat periods. If no heartbeat ever came at
        the period asked for, the primary may keep its own (Dolt: 30 s): wait longer from now
        on, and say so once, instead of reconnecting at every idle spell."""
        if self._heartbeat_on_time or self._idle_timeout >= _SLOW_HEARTBEAT_TIMEOUT:
            return
        self._idle_timeout = _SLOW_HEARTBEAT_TIMEOUT
        log.warning("the primary sent no heartbeat within %.0f s although asked for one every "
                    "%g s (some primaries, such as Dolt, keep their own period); a silent link "
                    "now counts as dead after %.0f s", self.options.heartbeat * 3,
                    self.options.heartbeat, _SLOW_HEARTBEAT_TIMEOUT)

    def _count_refusal(self, exc: BinlakeError) -> None:
        """A connection that ended after the dump request with no event counts as a refusal;
        after _MAX_REFUSALS in a row the primary is deterministic about it: give up."""
        if self._got_event or not self._dump_sent:
            self._refusals = 0 if self._got_event else self._refusals
            return
        self._refusals += 1
        if self._refusals < _MAX_REFUSALS:
            return
        how = "file position" if self._dump_by_file else "GTIDs"
        hint = "its error log says why"
        if self._dump_by_file:
            hint += "; a primary that serves only GTID dumps takes --gtid SET"
        raise DumpRefused(
            f"the primary {self.url} closed the replication connection right after the binlog "
            f"dump request (by {how}, from {self._where(self.position)}) {self._refusals} times "
            f"in a row without sending any event; last: {exc}", hint=hint) from None

    def _may_retry(self, exc: BaseException) -> bool:
        if not self.options.reconnect or self._boundary is None or self._stop_requested:
            return False
        if self._got_event:
            self._failures = 0
        if self.options.max_reconnects is not None and self._failures >= self.options.max_reconnects:
            return False
        self._failures += 1
        self.reconnects += 1
        # Re-deliver nothing: resume at the boundary and skip the rows already handed out.
        if self._tx.in_tx and self._tx.gtid is not None:
            self._resume_gtid = self._tx.gtid
        self._skip += self._rows_in_tx
        if not self._skip:
            self._resume_gtid = None
        self._rows_in_tx = 0
        self._tx.reset()
        self._xa.rewind(self._xa_boundary)
        return True

    def _drop_connection(self) -> None:
        if self.conn is not None:
            self.conn._abort()
            self.conn = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _quiet(self, conn: MySQLConnection) -> None:
        """About to wait for the primary: if a transaction ended since the last call and
        no more bytes are on their way, tell on_idle now, so a consumer stores (flushes,
        checkpoints) that transaction at once instead of when the next packet arrives."""
        if (self._unsaved and not self._tx.in_tx and self.options.on_idle is not None
                and not conn.data_waiting()):
            self._unsaved = False
            self.options.on_idle(self.position)

    def _receive_more(self, conn: MySQLConnection) -> None:
        """One blocking receive for the next run, under `_read`'s guard (a stop request from
        a signal handler cuts it short)."""
        if self._unsaved:
            self._quiet(conn)
        self._interruptible = True
        try:
            if self._stop_requested:
                raise _Interrupted()
            conn.receive_more()
        finally:
            self._interruptible = False

    def _read(self, conn: MySQLConnection) -> memoryview:
        if self._unsaved:
            self._quiet(conn)
        self._interruptible = True
        try:
            if self._stop_requested:
                raise _Interrupted()
            return conn.read_packet()
        finally:
            self._interruptible = False

    def _run(self, conn: MySQLConnection, dec: BinlogDecoder, batched: _Batched) -> Iterator[_Out]:
        """Records (batched: lists of records) until the end or a stop."""
        tracker = ChangeTracker(self.options.tables, xa=self._xa, reread=self._reread,
                                locate=self._locate, walk=self.options.xa_walk,
                                on_incident=self.options.on_incident)
        # Lists of several events' records (batches(per_event=False)): the run makes the
        # records of a transaction's kept rows events itself (RowsScanner's records mode),
        # with each TABLE_MAP's constants that _rows_records keeps under this key.
        merge_key = ("records", tracker.table_filter) if batched is _MERGED else None
        xa = self._xa
        semi = self.options.semi_sync
        end = self.end_position
        stop_at = self.options.stop_at
        if end is not None and self._started and self._reached(end):
            # (a reconnect after the end; a first connection waits for the primary to accept
            # the start position: one past its last file is its error, not an empty range)
            self._check_stop_at()
            return
        buffered = conn.buffered_packet
        tx = self._tx
        scan_next = not semi  # (semi-sync packets carry a header the scan does not take)
        while True:
            run: _GroupRun | None = None
            events: Iterable[Event | list[ChangeRecord]] | None
            passing = False
            if scan_next and self._started and not self._stop_requested:
                # The common rows events already received, framed and decoded by one C
                # iterator (it stops at the first packet it does not take, which the general
                # way below reads); the receive buffer moves past the events it handed out
                # when the run ends or is left.
                if conn.wants_more():  # (a run ended where the received bytes do)
                    self._receive_more(conn)
                unread = conn.unread_packets()
                if (unread is not None and unread[2] - unread[1] >= _MIN_EVENT_PACKET
                        and unread[0][unread[1] + _TYPE_AT] in _RUN_TYPES):
                    # Inside an explicit transaction (a rows event neither opens nor closes
                    # it) and outside an XA one (left-out rows count in its group), the
                    # left-out tables' rows events need only their rows counted: the run
                    # passes them over and says how many rows it counted. The run's `skip`
                    # follows the transactions its GTIDs and XIDs open and close (below).
                    passing = tx.in_tx and not tx.implicit_rows and not xa.holding
                    run = cast("_GroupRun | None", dec.scan_packets(*unread, group=True,
                                                                     skip=passing))
                    if run is not None and merge_key is not None and not self._skip:
                        run.records, run.gtid, run.merge = merge_key, tracker.gtid, passing
            if run is not None:
                events, need_ack = run, False
                skipped, skipped_rows = run.skipped, run.skipped_rows
            else:
                passing = False  # (no run: this decoder cannot, e.g. an encrypted binlog)
                events, need_ack = self._next_events(conn, dec, buffered, semi)
                if events is None:
                    return
                scan_next = not semi
            last: Event | list[ChangeRecord] | None = None
            try:
                for ev in events:
                    if isinstance(ev, list):  # records mode: kept rows events' records, in order
                        assert run is not None  # (only a run hands out lists)
                        self.events_seen += run.batch_events
                        last = ev
                        if run.skipped_rows != skipped_rows:  # (rows passed over before them)
                            self._passed_over(run.skipped_rows - skipped_rows)
                            skipped_rows = run.skipped_rows
                        self._rows_in_tx += run.batch_rows
                        self.rows_seen += len(ev)
                        if ev:
                            yield ev
                        continue
                    self.events_seen += 1
                    last = ev
                    if passing and run is not None and run.skipped_rows != skipped_rows:
                        # (rows passed over before this event)
                        self._passed_over(run.skipped_rows - skipped_rows)
                        skipped_rows = run.skipped_rows
                    if isinstance(ev, RowsEvent):
                        # The hot path, handled here without the generator layers of _handle:
                        # each record counts in the position as it is handed out.
                        # (inside an explicit transaction, a rows event neither opens nor closes one)
                        closes = (False if tx.in_tx and not tx.implicit_rows
                                  else tx.observe(ev))  # may open an implicit (MySQL 5.1) transaction
                        n = ev.filtered_rows if ev.filtered else len(ev.rows)
                        if xa.holding:  # an XA PREPARE: held until its COMMIT, nothing counted
                            tracker.records(ev)  # (a filtered one: its rows count in the group)
                        elif self._skip >= n:  # delivered before the reconnect/restart
                            self._skip -= n
                            self._rows_in_tx += n
                        elif ev.filtered:  # counted, not kept: nothing to hand out
                            self._rows_in_tx += n
                            self._skip = 0
                        elif self._skip:
                            yield from self._deliver(n, ((rec.row, rec) for rec in tracker.records(ev)),
                                                     batched)
                        elif batched:
                            recs = tracker.records(ev)
                            self._rows_in_tx += n
                            self.rows_seen += len(recs)
                            if recs:
                                yield recs
                        else:
                            base = self._rows_in_tx + 1
                            for rec in tracker.records(ev):
                                self._rows_in_tx = base + rec.row
                                self.rows_seen += 1
                                yield rec
                            self._rows_in_tx = base - 1 + n
                        if closes:
                            self._commit(ev, dec)
                            if run is not None and self._at_end(end, stop_at):
                                break  # (nothing after the end is handed out)
                        continue
                    if isinstance(ev, _RECORD_EVENTS):
                        yield from self._handle(ev, tracker, dec, batched)
                    else:  # (no generator for the GTID, TABLE_MAP and XID of each transaction)
                        self._follow(ev, tracker, dec)
                        if run is not None:  # (a run's GTID or XID opened or closed a transaction)
                            run.skip = run.merge = now = (tx.in_tx and not tx.implicit_rows
                                                          and not xa.holding)
                            run.gtid = tracker.gtid
                            passing = passing or now
                            if not tx.in_tx and self._at_end(end, stop_at):
                                break  # (nothing after the end is handed out)
            finally:
                if run is not None:  # the packets of the events handed out are read
                    conn.skip_packets(run.pos, run.seq)
                    if last is not None or (passing and run.skipped != skipped):
                        self._got_event = True
            if passing and run is not None:
                self.events_seen += run.skipped - skipped
                if run.skipped_rows != skipped_rows:  # (after the last event handed out)
                    self._passed_over(run.skipped_rows - skipped_rows)
            if run is not None:
                # The packet the run stopped at is one it does not take: it goes the general
                # way, then the runs go on. Or it is not whole yet: the next run receives
                # first (the general way would read one packet in Python for every receive).
                scan_next = conn.wants_more()
            if need_ack or self._ack_pending:
                if self._tx.in_tx:
                    self._ack_pending = True  # ACK when the transaction is delivered
                elif last is not None:
                    assert not isinstance(last, list)  # (semi-sync reads take no runs)
                    self._ack(conn, dec, last)
            if self._at_end(end, stop_at):
                self._check_stop_at()
                return

    def _passed_over(self, n: int) -> None:
        """Rows of left-out tables a run passed over: counted as a filtered event's are."""
        self._skip = self._skip - n if self._skip >= n else 0
        self._rows_in_tx += n

    def _at_end(self, end: tuple[str, int] | None, stop_at: tuple[str, int] | None) -> bool:
        """Between transactions, at or past the end of the range asked for."""
        if self._tx.in_tx:
            return False
        if stop_at is not None and self._reached(stop_at):
            return True
        if end is None:
            return False
        return self._reached(end) or self._idle_at_end or self._gtids_at_end()

    def _gtids_at_end(self) -> bool:
        """Every GTID the primary had executed at the end has been read (by a stream that
        tracks GTIDs): a GTID dump skips those in its start set without sending them."""
        if self._end_gtid_set is not None and self._gtid_set is not None:
            return self._end_gtid_set.issubset(self._gtid_set)
        if self._end_gtid_state is not None and self._gtid_state is not None:
            mine = self._gtid_state
            for g in self._end_gtid_state:
                have = mine.get(g.domain_id)
                if have is None or have.seq_no < g.seq_no:
                    return False
            return True
        return False

    def _next_events(self, conn: MySQLConnection, dec: BinlogDecoder,
                     buffered: Callable[[], memoryview | None],
                     semi: bool) -> tuple[list[Event] | None, bool]:
        """The events of the next packet read the general way, and whether the primary
        wants a semi-sync ACK for it; (None, False) at the end of a dump that ends."""
        # Most packets are already in the receive buffer: taken without the blocking read's
        # guard (a stop request still goes through it), and a plain event (0x00 + event)
        # without the general parser.
        pkt = None if self._stop_requested else buffered()
        if pkt is None:
            pkt = self._read(conn)
        if not semi and pkt and pkt[0] == 0:
            raw, need_ack = pkt[1:], False
        else:
            try:
                sp = dlg.parse_stream_packet(pkt, semi)
            except ServerError as exc:
                if exc.code == dlg.ER_MASTER_FATAL_ERROR_READING_BINLOG:
                    raise self._position_error(exc) from None
                if exc.code == 1047 and self._dump_by_file and not self._got_event:
                    raise ConfigError(
                        f"the primary {self.url} does not stream by file position "
                        f"({exc.server_message}, error 1047): it supports GTID positioning only",
                        hint="start with --gtid and a GTID set, e.g. the primary's executed "
                             "set (Executed_Gtid_Set in SHOW MASTER STATUS)") from None
                raise
            if sp.kind == "eof":
                conn.end_raw()
                if not self._at_end(self.end_position, self.options.stop_at):
                    # A blocking dump has no end: the primary is going away (shutdown).
                    raise ConnectionLost(f"{self.url} ended the binlog stream at {self.position}",
                                         hint="the primary is shutting down or dropped the replica; reconnecting")
                self._check_stop_at()
                return None, False
            assert sp.event is not None  # (an "event" packet carries one)
            raw, need_ack = sp.event, sp.need_ack
            del sp
        self._got_event = True
        if not self._started:
            self._started = True
            if self.options.on_stream_start is not None:
                self.options.on_stream_start(self.position)
        # The decoder takes the common rows event straight from the receive buffer (it
        # keeps nothing of it) and copies anything else, so the packet can go before its
        # events are handled: a reassembled 16 MiB+ packet is freed, not kept beside them.
        del pkt
        return dec.decode_event(raw), need_ack

    def _position_error(self, exc: ServerError) -> PositionUnavailable:
        pos = self.position
        have = ""
        try:
            with self._connect() as side:
                logs = side.query("SHOW BINARY LOGS").rows
                if logs:
                    have = f"; its binlogs now run from {logs[0][0]} to {logs[-1][0]}"
                if side.flavor == "mariadb":
                    state = side.query("SELECT @@global.gtid_binlog_state").rows[0][0]
                    have += f" (GTIDs up to {state or 'none'})"
        except BinlakeError:
            pass  # only decoration for the message; the error itself stands
        return PositionUnavailable(
            f"the primary {self.url} cannot stream from {self._where(pos)}: "
            f"{exc.server_message} (error {exc.code}){have}", code=exc.code, hint=_POSITION_HINT)

    @staticmethod
    def _where(pos: Position) -> str:
        return f"GTID position {pos.gtid_state or pos.gtid_set}" if pos.mode != "file" else f"{pos.file}:{pos.pos}"

    def _check_file_position(self, conn: MySQLConnection, pos: Position) -> None:
        """A file position past the end of its binlog would make the primary wait for bytes it
        may never write there (after a crash lost its binlog tail, the next events land at
        lower offsets): refuse it instead."""
        try:
            logs = dlg.binary_logs(conn.query("SHOW BINARY LOGS").rows)
        except ServerError:
            return  # no BINLOG MONITOR privilege: the primary's own checks still apply
        sizes = dict(logs)
        size = sizes.get(pos.file or "")
        if size is not None and pos.pos > size:
            raise PositionUnavailable(
                f"the primary {self.url} cannot stream from {self._where(pos)}: {pos.file} has "
                f"only {size} bytes (its binlogs run from {logs[0][0]} to {logs[-1][0]})",
                hint=_POSITION_HINT)

    def _check_stop_at(self) -> None:
        """Ending before the requested stop position is an error, never a short range."""
        stop_at = self.options.stop_at
        if stop_at is not None and not self._reached(stop_at):
            raise BinlakeError(f"the stream ended at {self.position} before {stop_at[0]}:{stop_at[1]}",
                               hint="the primary has less binlog than the requested range")

    def _reached(self, target: tuple[str, int]) -> bool:
        b = self._boundary
        if b is None or b.file is None:
            return False
        return (b.file, b.pos) >= target

    def _handle(self, ev: Event, tracker: ChangeTracker, dec: BinlogDecoder,
                batched: _Batched) -> Iterator[_Out]:
        """Every event but rows events (those are handled inline in _run); the ones that may
        hand out records (_RECORD_EVENTS) here, the others in _follow. The statement's
        records go out before its transaction is committed (and checkpointed)."""
        if isinstance(ev, QueryEvent):
            # TRUNCATE, statement-logged DML and described DDL are records too; they belong to
            # the transaction the statement is in (or is), so hand them out before closing it.
            holding = tracker.xa.holding
            recs = tracker.records(ev)
            if holding:
                pass  # inside an XA PREPARE: held, handed out (and counted) at its COMMIT
            elif ev.query[:3].upper() == "XA " and decision(ev.query) is not None:
                # XA COMMIT: the prepared records (none for a ROLLBACK), each at its unit
                # index in the group, counted before the table filter like any transaction's
                yield from self._deliver(tracker.released_units, ((r.row, r) for r in recs),
                                         batched, runs=True)
            elif recs or tracker.table_filter is not None:
                n, indexed = tracker.statement_units(ev, recs)
                yield from self._deliver(n, indexed, batched)
            if self._tx.observe(ev):
                self._commit(ev, dec)
            return
        if isinstance(ev, XaPrepareEvent):
            recs = tracker.records(ev)  # records only for MySQL's XA COMMIT ... ONE PHASE
            if tracker.released_units:
                yield from self._deliver(tracker.released_units, ((r.row, r) for r in recs),
                                         batched, runs=True)
            if self._tx.observe(ev):
                self._commit(ev, dec)
            return
        self._follow(ev, tracker, dec)

    def _follow(self, ev: Event, tracker: ChangeTracker, dec: BinlogDecoder) -> None:
        """An event that hands out no records (not a rows event, nor _RECORD_EVENTS): what it
        tells the tracker, the transaction boundaries and the position."""
        if type(ev) is TableMapEvent:  # the tracker's and the boundaries' no-op, quickly
            tracker.observe(ev)
            if ev.table_id not in self._unsigned_unknown:
                self._warn_signedness(ev)
            return
        if type(ev) is XidEvent:  # (the common close, without the tests below)
            tracker.observe(ev)
            if self._tx.observe(ev):
                self._commit(ev, dec)
            return
        if isinstance(ev, (GtidEvent, MariaGtidEvent)):  # (its text made once, for both)
            b = self._boundary
            if (b is not None and b.file is not None and b.file == dec.file and ev.offset < b.pos
                    and ev.header.log_pos):
                self._went_back(ev, b)
            gtid = ev.gtid
            if gtid and self._gtid_set is not None and type(ev) is GtidEvent:
                self._check_gtid_gap(gtid)
            tracker.observe_gtid(ev, gtid)
            self._tx.open_gtid(ev, gtid)
            if self._skip and self._resume_gtid and gtid and gtid != self._resume_gtid:
                raise ResumeMismatch(
                    f"resuming inside transaction {self._resume_gtid}, but the primary sent {gtid} first",
                    hint="the binlog changed under the checkpoint; re-snapshot")
            self._rows_in_tx = 0
            return
        if isinstance(ev, RotateEvent):
            b = self._boundary
            if ev.header.flags & _ARTIFICIAL or ev.header.log_pos == 0:
                if b is not None and b.file is None:  # GTID start: now we know the file
                    self._boundary = Position(ev.next_file, ev.position)
            elif self._tx.in_tx:
                raise BoundaryError(f"{ev.file}:{ev.offset}: the binlog rotates inside transaction "
                                    f"{self._tx.gtid or ''}".rstrip())
            else:
                self._boundary = Position(ev.next_file, ev.position)
            return
        if isinstance(ev, HeartbeatEvent):
            now = time.monotonic()
            if (self._last_heartbeat is not None
                    and now - self._last_heartbeat <= 2 * self.options.heartbeat):
                self._heartbeat_on_time = True
            self._last_heartbeat = now
            end = self.end_position
            if (end is not None and not self._tx.in_tx and ev.log_file
                    and (ev.log_file, ev.log_pos) >= end):
                # The primary waits past the end: every event up to it was sent or skipped
                # (a GTID dump skips those in its start set).
                self._idle_at_end = True
            if not self._tx.in_tx and self.options.on_idle is not None:
                self._unsaved = False
                self.options.on_idle(self.position)
            return
        tracker.observe(ev)
        if self._tx.observe(ev):
            self._commit(ev, dec)
        elif ev.header.type_code in _FILE_HEADER_EVENTS and not self._tx.in_tx and ev.header.log_pos:
            # A new file's header events (FDE, GTID list, binlog checkpoint) move the
            # boundary too, so a stop position at a fresh file's "SHOW MASTER STATUS" is
            # reached. Only these: a TABLE_MAP or INTVAR outside BEGIN belongs to the statement
            # after it. Only forward: a resumed dump repeats the file's FDE first.
            b = self._boundary
            if b is not None and b.file == dec.file and b.file is not None and ev.end > b.pos:
                self._boundary = Position(dec.file, ev.end)

    def _went_back(self, ev: Event, b: Position) -> None:
        """A transaction that opens before the boundary in the same file: its positions (and
        every later one) would point at other bytes, and a checkpoint taken on them resumes in
        the wrong place. Stop before any of its rows."""
        gtid = getattr(ev, "gtid", None)
        raise PositionWentBack(
            f"the primary {self.url} sent {f'transaction {gtid}' if gtid else 'a transaction'} "
            f"at {b.file}:{ev.offset}, before {b.file}:{b.pos} where the stream already is: its "
            "positions went back inside one binlog file (as when a primary restarts into a new "
            "file without sending a ROTATE for it: Dolt 2.3 after a restart)",
            hint="nothing of that transaction was handed out; start the stream again (it "
                 "resumes from its checkpoint on a new connection), and if it repeats, the "
                 "primary's binlog positions cannot be trusted: report it to its maintainers")

    def _warn_signedness(self, tm: TableMapEvent) -> None:
        """Integer columns whose TABLE_MAP (filled by the schema history, if any) does not say
        UNSIGNED (binlog_row_metadata below FULL, or Dolt, and no history for the table) are
        read as signed: say so, once a table."""
        seen = self._unsigned_unknown
        if len(seen) >= 4096:  # (a server that renumbers its tables: keep it bounded)
            seen.clear()
        seen.add(tm.table_id)
        keep = self.options.tables
        if keep is not None and not keep(tm.schema, tm.table):
            return
        ints = [c for c in tm.columns if c.type in _INTEGER_TYPES and c.unsigned is None]
        if not ints or tm.qualified_name in self._signedness_warned:
            return
        self._signedness_warned.add(tm.qualified_name)
        names = ", ".join(c.name or f"@{c.index + 1}" for c in ints)
        log.warning("%s: the binlog does not say which integer columns are UNSIGNED (%s are read "
                    "as signed: an UNSIGNED value above the signed maximum comes out negative); "
                    "keep a schema history (binlake stream keeps one unless "
                    "--no-schema-history), or have the server log signedness "
                    "(binlog_row_metadata=FULL on MySQL and MariaDB)",
                    tm.qualified_name, names)

    def _check_gtid_gap(self, gtid: str) -> None:
        """A GTID that opens a hole after its source's highest executed one means the
        transactions in between will never come: stop before handing out any of its rows
        (the checkpoint keeps the set as it was, contiguous)."""
        uuid, tag, gno = parse_gtid(gtid)
        if (uuid, tag) in self._gappy:
            return
        assert self._gtid_set is not None
        hole = self._gtid_set.missing_before(uuid, gno, tag)
        if hole is None:
            return
        source = f"{uuid}:{tag}" if tag else uuid
        missing = f"{source}:{hole[0]}" + (f"-{hole[1]}" if hole[1] > hole[0] else "")
        raise GtidGap(
            f"the primary {self.url} skipped transactions: after {self._gtid_set} it sent {gtid}; "
            f"missing {missing} (at {self._where(self.position)})",
            hint="the primary's binlog lacks them (lost in a crash or restart, or a replica "
                 "applying out of order without replica_preserve_commit_order); check them on the "
                 "primary, then re-snapshot or resume past them with --gtid")

    def _deliver(self, n: int, indexed: Iterable[tuple[int, ChangeRecord]],
                 batched: _Batched, runs: bool = False) -> Iterator[_Out]:
        """Hand out one event's records, skipping those delivered before a reconnect/restart;
        the position counts each record as it goes (batched: the list it hands out at once),
        and all `n` units once done. runs: the records come from several rows events (an XA
        COMMIT's), handed out batched as one list per run of one table and op."""
        if self._skip >= n:  # all delivered before the reconnect/restart
            self._skip -= n
            self._rows_in_tx += n
            return
        base = self._rows_in_tx
        skip, self._skip = self._skip, 0
        if batched and runs:
            run: list[ChangeRecord] = []
            for i, rec in indexed:
                if i < skip:
                    continue
                if run and (rec.table_map is not run[0].table_map or rec.op != run[0].op):
                    self._rows_in_tx = base + i
                    self.rows_seen += len(run)
                    yield run
                    run = []
                run.append(rec)
            self._rows_in_tx = base + n
            self.rows_seen += len(run)
            if run:
                yield run
            return
        if batched:
            recs = [rec for i, rec in indexed if i >= skip]
            self._rows_in_tx = base + n
            self.rows_seen += len(recs)
            if recs:
                yield recs
            return
        for i, rec in indexed:
            if i < skip:
                continue
            self._rows_in_tx = base + i + 1
            self.rows_seen += 1
            yield rec
        self._rows_in_tx = base + n

    def _commit(self, ev: Event, dec: BinlogDecoder) -> None:
        gtid = self._tx.ended_gtid
        if self._skip:
            raise ResumeMismatch(f"the resumed transaction {gtid or ''} ended after fewer rows than the "
                                 f"checkpoint had delivered ({self._skip} left to skip)",
                                 hint="the binlog changed under the checkpoint; re-snapshot")
        # GTIDs are tracked only when the stream started with a full GTID position: a partial
        # state would make a later resume replay the domains/servers it does not mention.
        if gtid is not None:
            if self._gtid_state is not None and self.flavor == "mariadb":
                self._gtid_state = self._gtid_state.update(gtid)
            elif self._gtid_set is not None:
                self._gtid_set = self._gtid_set.add_gtid(gtid)
        assert self._boundary is not None
        self._boundary = make_position(dec.file, ev.end or self._boundary.pos, None, None, 0,
                                       None, ())
        self._rows_in_tx = 0
        self._resume_gtid = None
        self._xa_boundary = self._xa.ranges()
        self._unsaved = True
        if self.options.on_commit is not None:
            self.options.on_commit(self.position)

    def _reread(self, rng: PreparedRange, at: tuple[str | None, int]) -> tuple[list[ChangeRecord], int]:
        """The records of an XA PREPARE this stream did not read (it started or resumed after
        it): a short second dump of the PREPARE's range, with this stream's decoding options.
        Table shapes are those at the COMMIT (`at`): the prepared transaction holds its
        tables' metadata locks until then, and a schema history may start after the PREPARE."""
        opts = self.options
        resolver = opts.table_resolver
        if resolver is not None and at[0] is not None:
            resolver = _ResolveAt(resolver, at[0], at[1])
        log.info("re-reading an XA PREPARE", extra={"xa": str(rng)})
        side = BinlogStream(self.url, StreamOptions(
            server_id=self._side_id(), start=Position(rng.file, rng.start), until_end=True,
            stop_at=(rng.file, rng.end), heartbeat=opts.heartbeat, max_reconnects=5,
            tables=opts.tables, verify_checksums=opts.verify_checksums,
            table_resolver=resolver, json_images=opts.json_images,
            hostname=opts.hostname))
        released: list[ChangeRecord] = []
        try:
            for batch in side.batches():  # only a one-phase group's records come out
                released += batch
        finally:
            side.close()
        return side._xa.reread_records(rng, released)

    def _side_id(self) -> int:
        """Server id of a second dump (a replica id must be unique on the primary)."""
        o = self.options
        return o.reread_server_id if o.reread_server_id is not None else o.server_id ^ 0x80000000

    def _locate(self, xid: str, before: tuple[str | None, int]) -> PreparedRange | None:
        """The PREPARE of an XA transaction committed after this stream's start, with nothing
        saying where it was prepared (a start by GTIDs or at the primary's end): the binlog
        files up to the commit (`before`) are walked, newest first, for one left pending."""
        file, pos = before
        if file is None:
            return None
        o = self.options
        return find_prepares(self.url, {xid}, (file, pos), server_id=self._side_id(),
                             heartbeat=o.heartbeat, verify_checksums=o.verify_checksums).get(xid)

    def _ack(self, conn: MySQLConnection, dec: BinlogDecoder, last: Event) -> None:
        """Semi-sync ACK: everything up to the end of `last` was handed out (and, through
        on_commit, stored), so the primary may report those transactions as replicated."""
        self._ack_pending = False
        b = self._boundary
        file, pos = (dec.file, last.end) if last.end else (b.file if b else None, b.pos if b else 0)
        if file is None:
            return
        conn.send_raw(dlg.semi_sync_ack_payload(file, pos))


def prepared_xids(conn: MySQLConnection) -> set[str] | None:
    """The XA transactions prepared on the primary now (XA RECOVER, with the XID spelled in
    hex so any bytes survive), in `xid_text` form; None when the account may not ask."""
    mariadb = conn.flavor == "mariadb"
    try:
        rows = conn.query("XA RECOVER FORMAT='SQL'" if mariadb else "XA RECOVER CONVERT XID").rows
    except ServerError as exc:
        log.warning("XA RECOVER refused (%s): XA transactions prepared before the start are "
                    "found when their commit is read", exc.server_message)
        return None
    try:
        return recovered_xids(rows, mariadb)
    except (ValueError, XaError) as exc:
        log.warning("XA RECOVER answered in an unexpected form (%s): XA transactions prepared "
                    "before the start are found when their commit is read", exc)
        return None


def find_prepares(url: ServerURL, xids: set[str], before: tuple[str, int], *, server_id: int,
                  heartbeat: float = 5.0, verify_checksums: bool = True
                  ) -> dict[str, PreparedRange]:
    """Where the XA transactions `xids` were prepared, left pending at `before`: the binlog files
    up to there are walked (event groups only, no row decoded), newest first, until each is
    found or the oldest file is done."""
    with MySQLConnection.connect(url.host, url.port, url.user, url.password,
                                 **url.connect_kwargs()) as side:
        logs = dlg.binary_logs(side.query("SHOW BINARY LOGS").rows)
    names = [name for name, _ in logs]
    file, pos = before
    if file not in names or not xids:
        return {}
    found: dict[str, PreparedRange] = {}
    for name, size in reversed(logs[:names.index(file) + 1]):
        stop = pos if name == file else size
        log.info("looking for XA PREPAREs", extra={"xids": sorted(xids - found.keys()), "file": name})
        walker = BinlogStream(url, StreamOptions(
            server_id=server_id, start=Position(name, 4), until_end=True, stop_at=(name, stop),
            heartbeat=heartbeat, max_reconnects=5, tables=no_table, xa_walk=True,
            verify_checksums=verify_checksums, hostname="binlake-xa-walk"))
        try:
            for _ in walker.batches():
                pass
        finally:
            walker.close()
        for r in walker._xa.ranges():
            if r.xid in xids and r.xid not in found:
                found[r.xid] = r
        if found.keys() >= xids:
            break
    return found
