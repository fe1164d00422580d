"""The live replica: connect, register, dump, decode, track the exact position, reconnect.

This is the I/O edge around the sans-IO pieces (protocol, dialogue, decoder). Row changes come
out of `BinlogStream.changes()`; after each one, `stream.position` says where a restart must
resume so that nothing is delivered twice or lost.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..binlog.decoder import BinlogDecoder, TableResolver
from ..binlog.events import (
    Event, GtidEvent, MariaGtidEvent, QueryEvent, RotateEvent, RowsEvent, XaPrepareEvent, XidEvent,
)
from ..changes import ChangeRecord, ChangeTracker
from ..errors import BinlakeError, ConfigError, ServerError
from ..gtid import MariaGtidState, MySQLGtidSet
from . import dialogue as dlg
from .connection import ConnectionFailed, ConnectionLost, MySQLConnection, ReadTimeout
from .position import Position
from .url import ServerURL

log = logging.getLogger("binlake.replica")

# Errors after which a reconnect may succeed (server going away, connection killed).
_TRANSIENT_SERVER_ERRORS = {1053, 1077, 1152, 1158, 1159, 1160, 1161, 1927, 2006, 2013}


class ResumeMismatch(BinlakeError):
    """The transaction found at the checkpoint is not the one the checkpoint was taken in."""


@dataclass
class StreamOptions:
    server_id: int = 6449519
    start: Position | None = None
    """None: the primary's current end (only new changes)."""
    until_end: bool = False
    """Stop at the primary's end as it was when the stream connected."""
    semi_sync: bool = False
    heartbeat: float = 5.0
    reconnect: bool = True
    max_reconnect_wait: float = 30.0
    max_reconnects: int | None = None
    tables: Callable[[str, str], bool] | None = None
    verify_checksums: bool = True
    table_resolver: TableResolver | None = None
    replica_uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    hostname: str = "binlake"
    on_commit: Callable[[Position], None] | None = None
    """Called at every transaction boundary, before a semi-sync ACK (make the checkpoint
    durable here to ACK only what is safely stored)."""
    stop_at: tuple[str, int] | None = None
    """Stop at this (file, pos) boundary; an error if the stream cannot reach it."""


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
        self._gtid_set: MySQLGtidSet | None = None
        self._gtid_state: MariaGtidState | None = None
        self._tx_gtid: str | None = None
        self._rows_in_tx = 0
        self._skip = 0
        self._explicit_tx = False
        self._in_tx = False
        self.events_seen = 0
        self.rows_seen = 0
        self.reconnects = 0
        self.last_event_ts = 0

    # -- position ---------------------------------------------------------------------------
    @property
    def position(self) -> Position:
        """Where to resume: after every row change handed out so far."""
        b = self._boundary
        if b is None:
            return self._start or Position()
        gset = str(self._gtid_set) if self._gtid_set is not None else None
        gstate = str(self._gtid_state) if self._gtid_state is not None else None
        return Position(b.file, b.pos, gset, gstate, self._rows_in_tx if self._in_tx else 0,
                        self._tx_gtid if self._in_tx else None)

    # -- connection ---------------------------------------------------------------------------
    def _connect(self) -> MySQLConnection:
        return MySQLConnection.connect(self.url.host, self.url.port, self.url.user, self.url.password,
                                       **self.url.connect_kwargs())

    def current_end(self, conn: MySQLConnection) -> tuple[str, int, str | None]:
        """(file, pos, gtid) of the primary's binlog end."""
        major = dlg.version_tuple(conn.server_version)
        stmt = ("SHOW BINARY LOG STATUS" if conn.flavor == "mysql" and major >= (8, 4, 0)
                else "SHOW MASTER STATUS")
        rs = conn.query(stmt)
        if not rs.rows:
            raise ConfigError(f"{self.url} has binary logging disabled",
                              hint="start the server with log_bin and binlog_format=ROW")
        row = rs.rows[0]
        gtid = None
        if conn.flavor == "mariadb":
            gtid = conn.query("SELECT @@global.gtid_binlog_pos").rows[0][0] or ""
        elif len(row) >= 5:
            gtid = (row[4] or "").replace("\n", "")
        return row[0], int(row[1]), gtid

    def _open(self) -> tuple[MySQLConnection, BinlogDecoder]:
        conn = self._connect()
        try:
            self.flavor = conn.flavor
            self.server_version = conn.server_version
            checksum = conn.query("SELECT @@global.binlog_checksum").rows[0][0] or "NONE"
            if self._boundary is None:
                self._init_start(conn)
            if self.options.until_end and self.end_position is None:
                f, p, _ = self.current_end(conn)
                self.end_position = (f, p)
            pos = self.position
            gtid_state = pos.gtid_state if (self.flavor == "mariadb" and pos.gtid_state is not None) else None
            for stmt in dlg.setup_statements(self.flavor, self.server_version, checksum=checksum,
                                             heartbeat_period=self.options.heartbeat,
                                             replica_uuid=self.options.replica_uuid,
                                             semi_sync=self.options.semi_sync,
                                             gtid_state=gtid_state):
                conn.execute(stmt)
            conn.command(dlg.COM_REGISTER_SLAVE, dlg.register_slave_payload(
                self.options.server_id, self.options.hostname, port=0))
            non_block = self.options.until_end
            if self.flavor == "mysql" and pos.gtid_set is not None:
                payload = dlg.binlog_dump_gtid_payload(MySQLGtidSet(pos.gtid_set).encode_for_dump(),
                                                       self.options.server_id, non_block)
                conn.send_command(dlg.COM_BINLOG_DUMP_GTID, payload)
            elif gtid_state is not None:
                conn.send_command(dlg.COM_BINLOG_DUMP,
                                  dlg.binlog_dump_payload("", 4, self.options.server_id, non_block))
            else:
                conn.send_command(dlg.COM_BINLOG_DUMP,
                                  dlg.binlog_dump_payload(pos.file or "", pos.pos,
                                                          self.options.server_id, non_block))
            conn.read_timeout = max(self.options.heartbeat * 3, 5.0)
        except BaseException:
            conn.close()
            raise
        from ..binlog.constants import ChecksumAlg

        dec = BinlogDecoder(checksum=ChecksumAlg.CRC32 if checksum.upper() == "CRC32" else ChecksumAlg.OFF,
                            verify_checksums=self.options.verify_checksums,
                            table_resolver=self.options.table_resolver)
        dec.file = pos.file
        self.conn = conn
        return conn, dec

    def _init_start(self, conn: MySQLConnection) -> None:
        start = self._start
        if start is None:
            f, p, g = self.current_end(conn)
            if conn.flavor == "mariadb":
                start = Position(f, p, gtid_state=g)
            else:  # an empty Executed_Gtid_Set means GTIDs are off: position by file
                start = Position(f, p, gtid_set=g or None)
        self._boundary = start
        if start.gtid_set is not None:
            self._gtid_set = MySQLGtidSet(start.gtid_set)
        if start.gtid_state is not None:
            self._gtid_state = MariaGtidState(start.gtid_state)
        self._skip = start.rows_done
        self._tx_gtid = start.tx_gtid

    # -- main loop ----------------------------------------------------------------------------
    def changes(self) -> Iterator[ChangeRecord]:
        """Row changes in commit order; reconnects and resumes after network failures."""
        wait = 0.5
        while True:
            try:
                conn, dec = self._open()
                wait = 0.5
                yield from self._run(conn, dec)
                self.close()
                return
            except (ConnectionLost, ReadTimeout, ConnectionFailed) as exc:
                self._drop_connection()
                if not self._may_retry(exc):
                    raise
            except ServerError as exc:
                self._drop_connection()
                if exc.code not in _TRANSIENT_SERVER_ERRORS or not self._may_retry(exc):
                    raise
            log.warning("replication connection lost, reconnecting",
                        extra={"position": str(self.position), "wait_s": wait})
            time.sleep(wait)
            wait = min(wait * 2, self.options.max_reconnect_wait)

    def _may_retry(self, exc: BaseException) -> bool:
        if not self.options.reconnect or self._boundary is None:
            return False
        if self.options.max_reconnects is not None and self.reconnects >= self.options.max_reconnects:
            return False
        self.reconnects += 1
        # Re-deliver nothing: resume at the boundary and skip the rows already handed out.
        self._skip = self._rows_in_tx if self._in_tx else 0
        self._rows_in_tx = 0
        self._in_tx = False
        self._explicit_tx = False
        return True

    def _drop_connection(self) -> None:
        if self.conn is not None:
            self.conn._abort()
            self.conn = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _run(self, conn: MySQLConnection, dec: BinlogDecoder) -> Iterator[ChangeRecord]:
        tracker = ChangeTracker(self.options.tables)
        semi = self.options.semi_sync
        end = self.end_position
        stop_at = self.options.stop_at
        if end is not None and self._reached(end):
            return
        while True:
            pkt = conn.read_packet()
            sp = dlg.parse_stream_packet(pkt, semi)
            if sp.kind == "eof":
                conn.end_raw()
                if stop_at is not None and not self._reached(stop_at):
                    raise BinlakeError(f"the stream ended at {self.position} before {stop_at[0]}:{stop_at[1]}",
                                       hint="the primary has less binlog than the requested range")
                return
            for ev in dec.decode_event(sp.event):
                self.events_seen += 1
                yield from self._handle(ev, tracker, dec)
            if sp.need_ack:
                self._ack(conn, dec)
            if (end is not None and not self._in_tx and self._reached(end)) or \
                    (stop_at is not None and not self._in_tx and self._reached(stop_at)):
                return

    def _reached(self, target: tuple[str, int]) -> bool:
        b = self._boundary
        if b is None or b.file is None:
            return False
        return (b.file, b.pos) >= target

    def _handle(self, ev: Event, tracker: ChangeTracker, dec: BinlogDecoder) -> Iterator[ChangeRecord]:
        if isinstance(ev, RowsEvent):
            self.last_event_ts = ev.timestamp
            for rec in tracker.records(ev):
                self._rows_in_tx += 1
                if self._skip:
                    self._skip -= 1
                    continue
                self.rows_seen += 1
                yield rec
            return
        tracker.observe(ev)
        if isinstance(ev, (GtidEvent, MariaGtidEvent)):
            gtid = ev.gtid
            if self._skip and self._tx_gtid and gtid and gtid != self._tx_gtid:
                raise ResumeMismatch(
                    f"resuming inside transaction {self._tx_gtid}, but the primary sent {gtid} first",
                    hint="the binlog changed under the checkpoint; re-snapshot")
            self._tx_gtid = gtid
            self._in_tx = True
            self._rows_in_tx = 0
            if isinstance(ev, GtidEvent) and ev.anonymous:
                self._tx_gtid = None
        elif isinstance(ev, QueryEvent):
            q = ev.query.lstrip()[:12].upper()
            if q.startswith("BEGIN") or q.startswith("XA START"):
                self._in_tx = True
                self._explicit_tx = True
            elif q.startswith(("COMMIT", "ROLLBACK", "XA END")) and self._explicit_tx and not q.startswith("XA END"):
                self._commit(ev, dec)
            elif not self._explicit_tx:
                self._commit(ev, dec)  # DDL and other statements are transactions of their own
        elif isinstance(ev, (XidEvent, XaPrepareEvent)):
            self._commit(ev, dec)
        elif isinstance(ev, RotateEvent):
            if not self._in_tx and not (ev.header.flags & 0x20) and ev.header.log_pos != 0:
                self._boundary = Position(ev.next_file, ev.position)
            elif self._boundary is not None and self._boundary.file is None:
                self._boundary = Position(ev.next_file, ev.position)

    def _commit(self, ev: Event, dec: BinlogDecoder) -> None:
        gtid = self._tx_gtid
        # GTIDs are tracked only when the stream started with a full GTID position: a partial
        # state would make a later resume replay the domains/servers it does not mention.
        if gtid is not None:
            if self._gtid_state is not None and self.flavor == "mariadb":
                self._gtid_state = self._gtid_state.update(gtid)
            elif self._gtid_set is not None:
                self._gtid_set = self._gtid_set.add_gtid(gtid)
        if self._skip:
            raise ResumeMismatch(f"the resumed transaction ended after fewer rows than the "
                                 f"checkpoint had delivered ({self._skip} left to skip)",
                                 hint="the binlog changed under the checkpoint; re-snapshot")
        self._boundary = Position(dec.file, ev.end if ev.header.log_pos else self._boundary.pos)
        self._in_tx = False
        self._explicit_tx = False
        self._rows_in_tx = 0
        self._tx_gtid = None
        if self.options.on_commit is not None:
            self.options.on_commit(self.position)

    def _ack(self, conn: MySQLConnection, dec: BinlogDecoder) -> None:
        b = self._boundary
        if b is None or b.file is None:
            return
        conn.send_raw(dlg.semi_sync_ack_payload(b.file, b.pos))
