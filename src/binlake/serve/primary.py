"""A primary of binlake's own: the server side of MySQL/MariaDB replication over binlog files.

``Primary`` holds what all connections share (the binlog store, the flavor and version it
pretends to be, registered replicas, semi-sync ACKs). ``Session`` answers one authenticated
connection: the set-up statements replicas and drivers send (SET @…, SELECT @@…, SHOW BINARY
LOG STATUS …) and the replication commands. ``BinlogDumpRun`` is one COM_BINLOG_DUMP(_GTID):
the artificial ROTATE, the file's FORMAT_DESCRIPTION, the events (with semi-sync headers when
asked), ROTATEs between files, then EOF (non-blocking dumps) or waiting with heartbeats.

Everything here is driven by the caller and writes replies through a ``ServerConnection``; it
reads binlog files but never touches a socket, sleeps or reads a clock (``now`` is passed in),
so the socket edge (server.py) stays a small loop and tests can drive it step by step.
Why it exists: no MySQL server can be installed where binlake is tested, and this lets the
replica client meet the MySQL-only paths (caching_sha2 full auth, COM_BINLOG_DUMP_GTID with
tagged GTIDs, compressed transactions, 8.4 statement names, semi-sync) over real sockets.
"""
from __future__ import annotations

import collections
import enum
import json
import logging
import re
import threading
import time
import uuid as uuidlib
import zlib

from .._util.versions import version_tuple
from dataclasses import dataclass

from ..binlog.constants import CHECKSUM_LEN, HEADER_LEN, ChecksumAlg, EventType as E
from ..binlog.decoder import BinlogDecoder
from ..errors import BinlakeError, DecodeError, ProtocolError
from ..gtid.sets import MariaGtid, MariaGtidState, MySQLGtidSet
from ..protocol.capabilities import Command
from ..protocol.results import ColumnDefinition
from ..protocol.replication import (
    BINLOG_DUMP_NON_BLOCK,
    BINLOG_THROUGH_GTID,
    BinlogDump,
    BinlogDumpGtid,
    RegisterReplica,
)
from ..protocol.server import (
    InitDB,
    OtherCommand,
    Ping,
    Query,
    Quit,
    ServerConnection,
)
from .sql import (
    SqlError, find_keyword, function_call, is_quoted, like_to_regex, literal,
    normalize, parse_error, select_items, split_top, sysvar, unquote, uservar,
)
from .store import BinlogFile, BinlogStore, EventReader, RawEvent

log = logging.getLogger("binlake.serve")

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
ER_UNKNOWN_SYSTEM_VARIABLE = 1193
ER_NO_SUCH_TABLE = 1146
ER_UNKNOWN_COM_ERROR = 1047

#: MariaDB COM_BINLOG_DUMP flag: send ANNOTATE_ROWS events (MariaDB drops them otherwise)
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02
SEMI_SYNC_MAGIC = 0xEF
SEMI_SYNC_NEED_ACK = 0x01
LOG_EVENT_ARTIFICIAL_F = 0x20
LOG_EVENT_BINLOG_IN_USE_F = 0x01

DEFAULT_VERSIONS = {"mysql": "8.4.3-binlake", "mariadb": "10.11.9-MariaDB-binlake"}

#: events that belong to no transaction: never skipped by GTID positioning
_CONTROL = frozenset({E.FORMAT_DESCRIPTION, E.ROTATE, E.STOP, E.PREVIOUS_GTIDS, E.HEARTBEAT,
                      E.HEARTBEAT_V2, E.INCIDENT, E.MARIADB_BINLOG_CHECKPOINT, E.MARIADB_GTID_LIST,
                      E.MARIADB_START_ENCRYPTION})
_GTID_STARTS = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED, E.MARIADB_GTID})
_QUERY_TYPES = frozenset({E.QUERY, E.MARIADB_QUERY_COMPRESSED})
_TX_END_TYPES = frozenset({E.XID, E.XA_PREPARE, E.TRANSACTION_PAYLOAD})
#: events that belong to the group a GTID opened (MariaDB's Log_event::is_part_of_group): a
#: standalone group ends at the first event not listed here
_GROUP_PARTS = frozenset({E.MARIADB_GTID, E.INTVAR, E.RAND, E.USER_VAR, E.TABLE_MAP, E.MARIADB_ANNOTATE_ROWS,
                          E.WRITE_ROWS_V0, E.UPDATE_ROWS_V0, E.DELETE_ROWS_V0, E.WRITE_ROWS_V1,
                          E.UPDATE_ROWS_V1, E.DELETE_ROWS_V1, E.WRITE_ROWS_V2, E.UPDATE_ROWS_V2,
                          E.DELETE_ROWS_V2, E.MARIADB_WRITE_ROWS_COMPRESSED_V1,
                          E.MARIADB_UPDATE_ROWS_COMPRESSED_V1, E.MARIADB_DELETE_ROWS_COMPRESSED_V1,
                          E.MARIADB_WRITE_ROWS_COMPRESSED, E.MARIADB_UPDATE_ROWS_COMPRESSED,
                          E.MARIADB_DELETE_ROWS_COMPRESSED})
#: MariaDB GTID_LIST flag: the last event of a dump that reached the replica's @slave_until_gtid
GTID_LIST_UNTIL_REACHED = 1 << 28
#: MariaDB GTID event flags2 bit: the group has no BEGIN/COMMIT (DDL, non-transactional)
MARIADB_GTID_STANDALONE = 0x01


def kv(fields: dict[str, object]) -> str:
    """key=value pairs for a log line; values with spaces, quotes or '=' are JSON-quoted."""
    parts = []
    for key, value in fields.items():
        text = ("yes" if value else "no") if isinstance(value, bool) else str(value)
        if not text or any(c in text for c in " \"'=\\") or not text.isprintable():
            text = json.dumps(text, ensure_ascii=False)
        parts.append(f"{key}={text}")
    return " ".join(parts)


def _truthy(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, (int, float)):
        return value != 0
    return str(value).strip().upper() in ("1", "ON", "TRUE", "YES")


def _crc(event: bytearray | bytes) -> bytes:
    return (zlib.crc32(bytes(event)) & 0xFFFFFFFF).to_bytes(4, "little")


def build_event(type_code: int, body: bytes, *, server_id: int, log_pos: int, flags: int = 0,
                timestamp: int = 0, checksum: bool = False) -> bytes:
    """A binlog event: v4 header + body (+ CRC32)."""
    size = HEADER_LEN + len(body) + (CHECKSUM_LEN if checksum else 0)
    ev = (timestamp.to_bytes(4, "little") + bytes((type_code,)) + server_id.to_bytes(4, "little")
          + size.to_bytes(4, "little") + (log_pos & 0xFFFFFFFF).to_bytes(4, "little")
          + flags.to_bytes(2, "little") + body)
    return ev + _crc(ev) if checksum else ev


def artificial_rotate(name: str, position: int, *, server_id: int, checksum: bool) -> bytes:
    """The ROTATE a primary sends first (and at each file switch): where the stream is."""
    return build_event(E.ROTATE, position.to_bytes(8, "little") + name.encode("utf-8"),
                       server_id=server_id, log_pos=0, flags=LOG_EVENT_ARTIFICIAL_F, checksum=checksum)


def heartbeat_event(name: str, position: int, *, server_id: int, checksum: bool) -> bytes:
    """HEARTBEAT_LOG_EVENT (v1): the file name in the body, the position in log_pos."""
    return build_event(E.HEARTBEAT, name.encode("utf-8"), server_id=server_id, log_pos=position,
                       flags=LOG_EVENT_ARTIFICIAL_F, checksum=checksum)


def served_fde(raw: bytes, *, zero_log_pos: bool, checksum: bool) -> bytes:
    """The file's FDE as a primary sends it: IN_USE flag cleared (the CRC was computed without
    it); when the dump starts mid-file, log_pos 0 (so the replica does not take it as a
    position) and `created` 0 (so the replica does not drop its temporary tables)."""
    ev = bytearray(raw)
    flags = int.from_bytes(ev[17:19], "little") & ~LOG_EVENT_BINLOG_IN_USE_F
    ev[17:19] = flags.to_bytes(2, "little")
    if zero_log_pos:
        ev[13:17] = b"\x00\x00\x00\x00"
        ev[HEADER_LEN + 52:HEADER_LEN + 56] = b"\x00\x00\x00\x00"  # binlog version 2 + server version 50
    if checksum:
        ev[-4:] = _crc(ev[:-4])
    return bytes(ev)


# -- shared state -------------------------------------------------------------------------------


@dataclass
class ServeConfig:
    """What the primary pretends to be."""

    flavor: str = "mysql"
    """"mysql" or "mariadb": greeting, variable names, statements and dump semantics."""
    server_version: str | None = None
    """Defaults to DEFAULT_VERSIONS[flavor]; "8.4.x" turns on MySQL 8.4's statement names."""
    server_id: int = 1
    server_uuid: str | None = None
    """Defaults to the uuid of the newest GTID in the files (the server that wrote them)."""
    semi_sync: bool = False
    """Offer semi-sync: replicas that ask get 0xEF headers and ACK requests."""
    hostname: str = "binlake"
    port: int = 3306

    def __post_init__(self) -> None:
        if self.flavor not in ("mysql", "mariadb"):
            raise BinlakeError(f"unknown flavor {self.flavor!r}", hint="use mysql or mariadb")
        if self.server_version is None:
            self.server_version = DEFAULT_VERSIONS[self.flavor]


@dataclass
class ReplicaInfo:
    """A replica that sent COM_REGISTER_SLAVE (SHOW REPLICAS)."""

    server_id: int
    host: str
    port: int
    user: str
    master_id: int
    uuid: str = ""
    connection_id: int = 0


@dataclass(frozen=True)
class Ack:
    """One semi-sync ACK as read from a replica."""

    server_id: int
    file: str
    pos: int
    requested: bool
    """Whether the primary asked for an ACK at exactly this position."""


class Primary:
    """The server all connections share: binlog store, identity, replicas, semi-sync ACKs."""

    def __init__(self, store: BinlogStore, config: ServeConfig | None = None) -> None:
        self.store = store
        self.config = config or ServeConfig()
        self.started = time.time()
        self._lock = threading.Lock()
        self._replicas: dict[int, ReplicaInfo] = {}
        self._acks: list[Ack] = []
        self._ack_requests: list[tuple[int, str, int]] = []
        self._semi_sync_clients = 0
        self._derived: tuple[int, dict[str, object]] | None = None
        #: the last statements clients sent (what a replica asked, for tests and debugging)
        self.statements: collections.deque[str] = collections.deque(maxlen=1000)

    def __repr__(self) -> str:
        return f"Primary({self.config.flavor} {self.version}, {len(self.store.files)} files)"

    # -- identity -----------------------------------------------------------------------------

    @property
    def flavor(self) -> str:
        return self.config.flavor

    @property
    def mariadb(self) -> bool:
        return self.config.flavor == "mariadb"

    @property
    def version(self) -> str:
        """@@version (without MariaDB's "5.5.5-" replication prefix)."""
        return self.config.server_version or DEFAULT_VERSIONS[self.flavor]

    @property
    def greeting_version(self) -> str:
        """The version in the handshake: MariaDB before 11 prefixes "5.5.5-" for old replicas."""
        v = self.version
        if self.mariadb and version_tuple(v) < (11, 0, 0) and not v.startswith("5.5.5-"):
            return "5.5.5-" + v
        return v

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        return version_tuple(self.version)

    @property
    def new_terms(self) -> bool:
        """MySQL 8.0.26+ says source/replica in its messages; older ones and MariaDB say master/slave."""
        return not self.mariadb and self.version_tuple >= (8, 0, 26)

    @property
    def server_uuid(self) -> str:
        if self.config.server_uuid:
            return self.config.server_uuid
        return self.store.last_gtid_uuid() or str(uuidlib.uuid5(uuidlib.NAMESPACE_OID,
                                                                f"binlake-{self.config.server_id}"))

    # -- variables ----------------------------------------------------------------------------

    def _gtid_values(self) -> dict[str, object]:
        """GTID positions from the store, cached until the files change."""
        store = self.store
        gen = store.generation
        cached = self._derived
        if cached is not None and cached[0] == gen:
            return cached[1]
        if self.mariadb:
            pos = str(store.gtid_binlog_pos())
            values: dict[str, object] = {"gtid_binlog_pos": pos, "gtid_current_pos": pos,
                                         "gtid_binlog_state": store.gtid_binlog_state()}
        else:
            executed = store.gtid_executed()
            any_gtid = bool(executed) or any(bf.gtids for bf in store.files)
            values = {"gtid_executed": str(executed), "gtid_purged": str(store.gtid_purged()),
                      "gtid_mode": "ON" if any_gtid else "OFF",
                      "enforce_gtid_consistency": "ON" if any_gtid else "OFF"}
        self._derived = (gen, values)
        return values

    def variables(self) -> dict[str, object]:
        """Global system variables (lower-case names; bools show as ON/OFF or 1/0)."""
        cfg = self.config
        store = self.store
        last = store.last()
        v: dict[str, object] = {
            "version": self.version,
            "version_comment": "binlake serve (binlog files, read only)",
            "version_compile_os": "Linux",
            "version_compile_machine": "x86_64",
            "hostname": cfg.hostname,
            "port": cfg.port,
            "server_id": cfg.server_id,
            "log_bin": True,
            "log_bin_basename": str(last.path.with_suffix("")),
            "log_bin_index": str(last.path.with_suffix(".index")),
            "binlog_format": "ROW",
            "binlog_row_image": "FULL",
            "binlog_row_metadata": "FULL",
            "binlog_checksum": "CRC32" if store.checksum == ChecksumAlg.CRC32 else "NONE",
            "sync_binlog": 1,
            "max_allowed_packet": 1 << 30,
            "net_buffer_length": 16384,
            "character_set_server": "utf8mb4",
            "character_set_client": "utf8mb4",
            "character_set_connection": "utf8mb4",
            "character_set_results": "utf8mb4",
            "collation_server": "utf8mb4_general_ci" if self.mariadb else "utf8mb4_0900_ai_ci",
            "collation_connection": "utf8mb4_general_ci",
            "time_zone": "SYSTEM",
            "system_time_zone": "UTC",
            "sql_mode": "",
            "lower_case_table_names": 0,
            "auto_increment_increment": 1,
            "auto_increment_offset": 1,
            "autocommit": True,
            "read_only": True,
            "wait_timeout": 28800,
            "interactive_timeout": 28800,
            "net_read_timeout": 30,
            "net_write_timeout": 60,
            "performance_schema": False,
            "log_replica_updates" if self.new_terms else "log_slave_updates": True,
        }
        if self.mariadb:
            v.update({"tx_isolation": "REPEATABLE-READ", "transaction_isolation": "REPEATABLE-READ",
                      "gtid_slave_pos": "", "gtid_strict_mode": False, "gtid_domain_id": 0,
                      "binlog_annotate_row_events": True,
                      "rpl_semi_sync_master_enabled": cfg.semi_sync,
                      "rpl_semi_sync_master_timeout": 10000,
                      "rpl_semi_sync_master_wait_point": "AFTER_COMMIT"})
        else:
            v.update({"server_uuid": self.server_uuid, "transaction_isolation": "REPEATABLE-READ",
                      "binlog_transaction_compression": False})
            if cfg.semi_sync:
                word = "source" if self.new_terms else "master"
                v.update({f"rpl_semi_sync_{word}_enabled": True,
                          f"rpl_semi_sync_{word}_timeout": 10000,
                          f"rpl_semi_sync_{word}_wait_point": "AFTER_SYNC",
                          f"rpl_semi_sync_{word}_wait_for_{'replica' if self.new_terms else 'slave'}_count": 1})
        v.update(self._gtid_values())
        return v

    def status(self) -> dict[str, object]:
        """SHOW STATUS values binlake can tell truthfully."""
        word = "source" if self.new_terms else "master"
        with self._lock:
            yes = sum(1 for a in self._acks if a.requested)
            clients = self._semi_sync_clients
        out: dict[str, object] = {"Uptime": int(time.time() - self.started)}
        if self.config.semi_sync:
            out.update({f"Rpl_semi_sync_{word}_status": True, f"Rpl_semi_sync_{word}_clients": clients,
                        f"Rpl_semi_sync_{word}_yes_tx": yes})
        return out

    # -- replicas and ACKs --------------------------------------------------------------------

    def register(self, info: ReplicaInfo) -> None:
        with self._lock:
            self._replicas[info.server_id] = info

    def unregister(self, server_id: int, connection_id: int) -> None:
        with self._lock:
            cur = self._replicas.get(server_id)
            if cur is not None and cur.connection_id == connection_id:
                del self._replicas[server_id]

    @property
    def replicas(self) -> list[ReplicaInfo]:
        with self._lock:
            return list(self._replicas.values())

    def _note_ack_request(self, server_id: int, file: str, pos: int) -> None:
        with self._lock:
            self._ack_requests.append((server_id, file, pos))

    def _note_ack(self, ack: Ack) -> None:
        with self._lock:
            self._acks.append(ack)

    def _semi_sync_client(self, delta: int) -> None:
        with self._lock:
            self._semi_sync_clients += delta

    @property
    def acks(self) -> list[Ack]:
        """Every semi-sync ACK received, in order."""
        with self._lock:
            return list(self._acks)

    @property
    def ack_requests(self) -> list[tuple[int, str, int]]:
        """(replica server id, file, pos) of every event sent with the ACK-request flag."""
        with self._lock:
            return list(self._ack_requests)

    def session(self, conn: ServerConnection, *, user: str = "", host: str = "localhost") -> "Session":
        return Session(self, conn, user=user, host=host)


# -- one connection ------------------------------------------------------------------------------


class Session:
    """One authenticated connection: answers statements and replication commands."""

    def __init__(self, primary: Primary, conn: ServerConnection, *, user: str = "",
                 host: str = "localhost") -> None:
        self.primary = primary
        self.conn = conn
        self.user = user
        self.host = host
        self.connection_id = conn.handshake.connection_id
        self.user_vars: dict[str, object] = {}
        self.replica: ReplicaInfo | None = None
        self.dump: BinlogDumpRun | None = None
        self.closed = False

    # -- facts the dump reads from user variables -------------------------------------------

    @property
    def replica_checksum(self) -> int | None:
        """The checksum the replica named in @master_binlog_checksum (None: it set no such
        variable, so it cannot handle checksummed events). Setting it at all makes a replica
        checksum aware, as on MySQL and MariaDB; its value only decides the checksum of the
        first artificial ROTATE (mariadb-binlog sets 'NONE' and still reads CRC32 files)."""
        for name in ("master_binlog_checksum", "source_binlog_checksum"):
            if name in self.user_vars:
                value = str(self.user_vars[name] or "").strip().upper()
                return ChecksumAlg.CRC32 if value == "CRC32" else ChecksumAlg.OFF
        return None

    @property
    def heartbeat_period(self) -> float:
        """Seconds between heartbeats while idle (the replica sets nanoseconds); 0: none."""
        for name in ("source_heartbeat_period", "master_heartbeat_period"):
            value = self.user_vars.get(name)
            if value is not None:
                try:
                    return max(0.0, float(value) / 1e9)
                except (TypeError, ValueError):
                    return 0.0
        return 0.0

    @property
    def semi_sync_requested(self) -> bool:
        return (_truthy(self.user_vars.get("rpl_semi_sync_slave"))
                or _truthy(self.user_vars.get("rpl_semi_sync_replica")))

    # -- events -------------------------------------------------------------------------------

    def handle(self, ev: object, now: float) -> None:
        """React to one ServerConnection event (replies are queued on the connection)."""
        conn = self.conn
        if isinstance(ev, Query):
            self.query(ev.sql)
        elif isinstance(ev, (InitDB, Ping)):
            conn.send_ok()
        elif isinstance(ev, Quit):
            self.close()
        elif isinstance(ev, RegisterReplica):
            info = ReplicaInfo(ev.server_id, ev.hostname, ev.port, ev.user, ev.master_id,
                               str(self.user_vars.get("replica_uuid") or self.user_vars.get("slave_uuid") or ""),
                               self.connection_id)
            self.replica = info
            self.primary.register(info)
            conn.send_ok()
        elif isinstance(ev, (BinlogDump, BinlogDumpGtid)):
            self.dump = BinlogDumpRun(self, ev)
            if log.isEnabledFor(logging.INFO):
                log.info("connection %d: binlog dump %s", self.connection_id, kv(self.dump.asked()))
            self.dump.start(now)
        elif isinstance(ev, OtherCommand) and ev.command == SEMI_SYNC_MAGIC:
            self.on_ack(ev.payload)  # a late ACK after the dump ended: no reply, like MySQL
        elif isinstance(ev, OtherCommand):
            name = Command(ev.command).name if ev.command in Command._value2member_map_ else hex(ev.command)
            conn.send_error(ER_UNKNOWN_COM_ERROR, f"Unknown command ({name}): binlake serve does not "
                                                  "implement it", "08S01")

    def on_ack(self, payload: bytes) -> Ack | None:
        if self.dump is None:
            log.warning("semi-sync ACK outside a binlog dump ignored")
            return None
        return self.dump.on_ack(payload)

    def close(self) -> None:
        """The connection is gone: stop the dump and forget the replica."""
        self.closed = True
        if self.dump is not None:
            self.dump.close()
        if self.replica is not None:
            self.primary.unregister(self.replica.server_id, self.connection_id)

    # -- statements ---------------------------------------------------------------------------

    def query(self, sql: str) -> None:
        conn = self.conn
        self.primary.statements.append(sql)
        s = normalize(sql)
        if not s:
            conn.send_error(1065, "Query was empty", "42000")
            return
        word = s.split(None, 1)[0].upper()
        try:
            if word == "SET":
                self._set(s[3:])
                conn.send_ok()
            elif word == "SELECT":
                cols, rows = self._select(s[6:].strip())
                conn.send_result_set(cols, rows)
            elif word == "SHOW":
                cols, rows = self._show(s)
                conn.send_result_set(cols, rows)
            elif word in ("BEGIN", "COMMIT", "ROLLBACK", "USE", "DO", "START", "FLUSH", "UNLOCK"):
                conn.send_ok()
            else:
                raise parse_error(s)
        except SqlError as exc:
            conn.send_error(exc.code, exc.message, exc.state)

    def _set(self, text: str) -> None:
        for part in split_top(text):
            if not part.startswith("@") or part.startswith("@@"):
                continue  # SET NAMES, SET autocommit=1, SET @@session.x: nothing to keep
            m = re.match(r"^(@(?:`[^`]+`|'[^']+'|\"[^\"]+\"|[A-Za-z0-9_$.]+))\s*:?=\s*(.*)$", part, re.S)
            if not m:
                raise parse_error(part)
            name = uservar(m.group(1))
            assert name is not None
            self.user_vars[name] = self._eval(m.group(2).strip())

    def _select(self, rest: str) -> tuple[list[ColumnDefinition], list[tuple[object, ...]]]:
        rest = re.sub(r"\s+LIMIT\s+\d+(\s*,\s*\d+)?\s*$", "", rest, flags=re.I)
        where = find_keyword(rest, "FROM")
        items = select_items(rest[:where] if where is not None else rest)
        if where is not None:
            source = rest[where + 4:].strip()
            if re.match(r"^`?(information_schema|performance_schema|mysql)`?\.", source, re.I):
                # binlake has no tables to describe: an empty answer, not an error
                return [ColumnDefinition(i.name) for i in items], []
            table = source.split()[0].strip("`")
            raise SqlError(ER_NO_SUCH_TABLE, f"Table '{table}' doesn't exist", "42S02")
        values = tuple(self._eval(i.expr) for i in items)
        return [_column(i.name, v) for i, v in zip(items, values)], [values]

    def _eval(self, expr: str) -> object:
        ok, value = literal(expr)
        if ok:
            return value
        sv = sysvar(expr)
        if sv is not None:
            variables = self.primary.variables()
            if sv[1] not in variables:
                raise SqlError(ER_UNKNOWN_SYSTEM_VARIABLE, f"Unknown system variable '{sv[1]}'")
            value = variables[sv[1]]
            return int(value) if isinstance(value, bool) else value
        uv = uservar(expr)
        if uv is not None:
            return self.user_vars.get(uv)
        bare = expr.strip().upper()
        if bare in ("CURRENT_TIMESTAMP", "CURRENT_USER", "CURRENT_DATE", "LOCALTIME"):
            expr = bare + "()"
        call = function_call(expr)
        if call is not None:
            return self._call(*call)
        raise SqlError(1054, f"Unknown column '{expr.strip()[:64]}' in 'field list'", "42S22")

    def _call(self, name: str, args: list[str]) -> object:
        now = time.time()
        if name == "version":
            return self.primary.version
        if name == "unix_timestamp" and not args:
            return int(now)
        if name in ("now", "current_timestamp", "sysdate", "localtime"):
            return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        if name == "utc_timestamp":
            return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now))
        if name == "current_date":
            return time.strftime("%Y-%m-%d", time.localtime(now))
        if name in ("database", "schema"):
            return self.conn.database
        if name in ("user", "session_user", "system_user"):
            return f"{self.user}@{self.host}"
        if name == "current_user":
            return f"{self.user}@%"
        if name == "connection_id":
            return self.connection_id
        if name == "last_insert_id":
            return 0
        if name == "uuid":
            return str(uuidlib.uuid4())
        if name == "binlog_gtid_pos" and self.primary.mariadb and len(args) == 2:
            return self._binlog_gtid_pos(self._eval(args[0]), self._eval(args[1]))
        raise SqlError(1305, f"FUNCTION {name} does not exist", "42000")

    def _binlog_gtid_pos(self, file: object, pos: object) -> str | None:
        """MariaDB BINLOG_GTID_POS(file, pos): the GTID position equal to a file position."""
        bf = self.primary.store.get(str(file))
        try:
            offset = int(pos)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return None
        if bf is None or not bf.is_boundary(offset):
            return None
        doms: dict[int, MariaGtid] = {g.domain_id: g for g in (bf.gtid_list or MariaGtidState())}
        for mark in bf.gtids:
            if mark.offset >= offset:
                break
            g = MariaGtid.parse(mark.gtid)
            doms[g.domain_id] = g
        return str(MariaGtidState(list(doms.values())))

    # -- SHOW -----------------------------------------------------------------------------------

    def _show(self, s: str) -> tuple[list[ColumnDefinition | str], list[tuple[object, ...]]]:
        body = re.sub(r"\s+", " ", s[4:].strip())
        up = body.upper()
        p = self.primary
        v = p.version_tuple
        mysql = not p.mariadb
        m = re.match(r"^(?:(?:GLOBAL|SESSION|LOCAL) )?(VARIABLES|STATUS)(?: (LIKE|WHERE) (.+))?$", body, re.I)
        if m:
            values = p.variables() if m.group(1).upper() == "VARIABLES" else p.status()
            rows = [(k, _show_value(val)) for k, val in sorted(values.items())]
            if m.group(2):
                rows = _filter_rows(rows, m.group(2).upper(), m.group(3), s)
            return ["Variable_name", "Value"], rows
        if up == "MASTER STATUS" or up == "BINARY LOG STATUS" or up == "BINLOG STATUS":
            if mysql and ((up == "MASTER STATUS" and v >= (8, 4, 0))
                          or (up == "BINARY LOG STATUS" and v < (8, 2, 0)) or up == "BINLOG STATUS"):
                raise parse_error(s, body)
            if not mysql and (up == "BINARY LOG STATUS" or (up == "BINLOG STATUS" and v < (10, 5, 2))):
                raise parse_error(s, body)
            name, pos = p.store.end()
            cols: list[ColumnDefinition | str] = ["File", ColumnDefinition("Position", _LONGLONG),
                                                  "Binlog_Do_DB", "Binlog_Ignore_DB"]
            row: tuple[object, ...] = (name, pos, "", "")
            if mysql:
                cols.append("Executed_Gtid_Set")
                row += (str(p.variables()["gtid_executed"]),)
            return cols, [row]
        if up in ("BINARY LOGS", "MASTER LOGS"):
            if mysql and up == "MASTER LOGS" and v >= (8, 4, 0):
                raise parse_error(s, body)
            files = p.store.files
            if mysql and v >= (8, 0, 14):
                return (["Log_name", ColumnDefinition("File_size", _LONGLONG), "Encrypted"],
                        [(f.name, f.end, "No") for f in files])
            return ["Log_name", ColumnDefinition("File_size", _LONGLONG)], [(f.name, f.end) for f in files]
        if up in ("SLAVE HOSTS", "REPLICAS", "REPLICA HOSTS"):
            if mysql and ((up == "SLAVE HOSTS" and v >= (8, 4, 0)) or (up == "REPLICAS" and v < (8, 0, 22))
                          or up == "REPLICA HOSTS"):
                raise parse_error(s, body)
            if not mysql and up == "REPLICAS":
                raise parse_error(s, body)
            reps = p.replicas
            ints = [ColumnDefinition(n, _LONGLONG) for n in ("Server_id", "Host", "Port", "Master_id")]
            ints[1] = ColumnDefinition("Host")
            if not mysql:
                return ints, [(r.server_id, r.host, r.port, p.config.server_id) for r in reps]
            if up == "REPLICAS":
                ints[0] = ColumnDefinition("Server_Id", _LONGLONG)
                ints[3] = ColumnDefinition("Source_Id", _LONGLONG)
                return ints + ["Replica_UUID"], [(r.server_id, r.host, r.port, p.config.server_id, r.uuid)
                                                 for r in reps]
            return ints + ["Slave_UUID"], [(r.server_id, r.host, r.port, p.config.server_id, r.uuid)
                                           for r in reps]
        if up in ("WARNINGS", "ERRORS") or up.startswith(("WARNINGS LIMIT", "ERRORS LIMIT")):
            return ["Level", ColumnDefinition("Code", _LONGLONG), "Message"], []
        m = re.match(r"^BINLOG EVENTS(?: IN ('[^']*'|\"[^\"]*\"))?(?: FROM (\d+))?(?: LIMIT (?:(\d+) ?, ?)?(\d+))?$",
                     body, re.I)
        if m:
            return self._show_binlog_events(m)
        raise parse_error(s, body)

    def _show_binlog_events(self, m: re.Match[str]) -> tuple[list[ColumnDefinition | str], list[tuple[object, ...]]]:
        store = self.primary.store
        bf = store.get(unquote(m.group(1))) if m.group(1) else store.first()
        if bf is None:
            raise SqlError(ER_MASTER_FATAL_ERROR_READING_BINLOG,
                           "Error when executing command SHOW BINLOG EVENTS: Could not find target log")
        start = int(m.group(2) or 4)
        skip = int(m.group(3) or 0)
        limit = int(m.group(4)) if m.group(4) else None
        rows: list[tuple[object, ...]] = []
        reader = EventReader(bf, max(start, 4))
        try:
            while limit is None or len(rows) < skip + limit:
                ev = reader.next()
                if ev is None:
                    break
                d = ev.data
                rows.append((bf.name, ev.offset, E.name_of(d[4]), int.from_bytes(d[5:9], "little"),
                             int.from_bytes(d[13:17], "little"), ""))
        except DecodeError as exc:
            raise SqlError(ER_MASTER_FATAL_ERROR_READING_BINLOG, str(exc)) from None
        finally:
            reader.close()
        cols: list[ColumnDefinition | str] = ["Log_name", ColumnDefinition("Pos", _LONGLONG), "Event_type",
                                              ColumnDefinition("Server_id", _LONGLONG),
                                              ColumnDefinition("End_log_pos", _LONGLONG), "Info"]
        return cols, rows[skip:]


_LONGLONG = 8  # ColumnType.LONGLONG: drivers turn these cells into integers


def _column(name: str, value: object) -> ColumnDefinition:
    if isinstance(value, int) and not isinstance(value, bool):
        return ColumnDefinition(name, _LONGLONG)
    return ColumnDefinition(name)


def _show_value(value: object) -> object:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return "" if value is None else str(value)


def _filter_rows(rows: list[tuple[object, object]], how: str, cond: str, sql: str) -> list[tuple[object, object]]:
    cond = cond.strip()
    if how == "LIKE":
        if not is_quoted(cond):
            raise parse_error(sql, cond)
        rx = like_to_regex(unquote(cond))
        return [r for r in rows if rx.match(str(r[0]))]
    m = re.match(r"^`?(Variable_name|Value)`?\s*(=|LIKE)\s*('[^']*'|\"[^\"]*\")$", cond, re.I)
    if m:
        col = 0 if m.group(1).lower() == "variable_name" else 1
        want = unquote(m.group(3))
        if m.group(2).upper() == "LIKE":
            rx = like_to_regex(want)
            return [r for r in rows if rx.match(str(r[col]))]
        return [r for r in rows if str(r[col]).lower() == want.lower()]
    m = re.match(r"^`?Variable_name`?\s+IN\s*\((.*)\)$", cond, re.I | re.S)
    if m:
        wanted = {unquote(x).lower() for x in split_top(m.group(1)) if is_quoted(x)}
        return [r for r in rows if str(r[0]).lower() in wanted]
    raise parse_error(sql, cond)


# -- one binlog dump ---------------------------------------------------------------------------


class DumpStatus(enum.Enum):
    MORE = "more"
    """Events are ready: call pump() again."""
    WAITING = "waiting"
    """A blocking dump caught up: wait for input or wait_time(), then tick()."""
    DONE = "done"
    """EOF or ERR went out; the connection is back in the command phase."""


class _DumpFailed(Exception):
    pass


class _UntilReached(Exception):
    """The dump met the replica's UNTIL condition and has ended (GTID_LIST and EOF sent)."""


class BinlogDumpRun:
    """One COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID, driven by pump() and tick()."""

    #: seconds between looks at the folder while waiting for new events
    POLL = 0.2

    def __init__(self, session: Session, request: BinlogDump | BinlogDumpGtid) -> None:
        self.session = session
        self.primary = session.primary
        self.store = session.primary.store
        self.conn = session.conn
        self.request = request
        self.server_id = request.server_id
        self.flags = request.flags
        # a MariaDB primary also ends the dump of a client that gives server_id 0 at the end
        self.non_block = (bool(request.flags & BINLOG_DUMP_NON_BLOCK)
                          or (self.primary.mariadb and request.server_id == 0))
        self.semi_sync = self.primary.config.semi_sync and session.semi_sync_requested
        self.heartbeat_period = session.heartbeat_period
        self.replica_checksum = session.replica_checksum
        self.mode = "file"
        self.exclude_set: MySQLGtidSet | None = None
        self.exclude_state: MariaGtidState | None = None
        self.until: dict[int, MariaGtid] | None = None
        """@slave_until_gtid (MariaDB START SLAVE UNTIL master_gtid_pos): per domain, the GTID
        still to reach; a domain leaves when reached, and the dump stops when none is left."""
        self.until_reached = False
        self._until_state: dict[tuple[int, int], int] = {}
        self._until_stop: str | None = None
        self.status = DumpStatus.MORE
        self.error: str | None = None
        self.file: BinlogFile | None = None
        self._reader: EventReader | None = None
        self._dec: BinlogDecoder | None = None
        self._alg = (self.replica_checksum if self.replica_checksum is not None else ChecksumAlg.OFF)
        self._skip_group = False
        self._explicit = False
        self._skipped_since_send = False
        self._last_sent = 0.0
        self._last_refresh = 0.0
        self._requested: set[tuple[str, int]] = set()
        self.events_sent = 0
        self.events_skipped = 0
        self.bytes_sent = 0
        self.heartbeats_sent = 0
        self.ack_requests: list[tuple[str, int]] = []
        self.acks: list[Ack] = []
        if self.semi_sync:
            self.primary._semi_sync_client(+1)
        self._counted = self.semi_sync

    def __repr__(self) -> str:
        where = f"{self.file.name}:{self.position}" if self.file else "-"
        return f"BinlogDumpRun({self.mode}, {where}, {self.status.value})"

    def asked(self) -> dict[str, object]:
        """What the replica asked for, as the fields of a log line."""
        req = self.request
        uv = self.session.user_vars
        out: dict[str, object] = {"user": self.session.user, "server_id": self.server_id}
        if isinstance(req, BinlogDumpGtid) and req.flags & BINLOG_THROUGH_GTID:
            try:
                out["gtid_set"] = str(MySQLGtidSet.decode_dump_encoding(req.gtid_data))
            except ProtocolError:
                out["gtid_set"] = "(malformed)"
        elif self.primary.mariadb and uv.get("slave_connect_state") is not None:
            out["gtid"] = str(uv["slave_connect_state"])
            if uv.get("slave_until_gtid") is not None:
                out["until_gtid"] = str(uv["slave_until_gtid"])
        else:
            out["file"] = req.filename or "(first)"
            out["pos"] = req.position
        out["blocking"] = not self.non_block
        checksum = self.session.replica_checksum
        out["checksum"] = "unset" if checksum is None else "CRC32" if checksum == ChecksumAlg.CRC32 else "NONE"
        if self.semi_sync:
            out["semi_sync"] = True
        return out

    @property
    def position(self) -> int:
        return self._reader.offset if self._reader is not None else 4

    # -- start ------------------------------------------------------------------------------

    def start(self, now: float) -> DumpStatus:
        self._last_sent = self._last_refresh = now
        try:
            bf, pos = self._resolve()
            self._open(bf, pos, zero_log_pos=pos > 4)
            if self.until is not None:
                if not self.until:
                    # every UNTIL GTID is behind the start: stop after the first event outside a group
                    self._until_stop = "standalone"
        except _DumpFailed as exc:
            self._fail(str(exc))
        return self.status

    def _words(self) -> tuple[str, str]:
        return ("source", "replica") if self.primary.new_terms else ("master", "slave")

    def _resolve(self) -> tuple[BinlogFile, int]:
        req = self.request
        store = self.store
        if isinstance(req, BinlogDumpGtid) and req.flags & BINLOG_THROUGH_GTID:
            self.mode = "mysql-gtid"
            try:
                wanted = MySQLGtidSet.decode_dump_encoding(req.gtid_data)
            except ProtocolError as exc:
                raise _DumpFailed(f"Malformed GTID set in COM_BINLOG_DUMP_GTID: {exc}") from None
            self.exclude_set = wanted
            self._check_gtids(wanted)
            bf = store.first_file_not_in(wanted)
            if bf is None:
                raise _DumpFailed(self._purged_message(wanted))
            return bf, 4
        if (isinstance(req, BinlogDump) and self.primary.mariadb
                and self.session.user_vars.get("slave_connect_state") is not None):
            self.mode = "mariadb-gtid"
            text = str(self.session.user_vars["slave_connect_state"])
            try:
                state = MariaGtidState(text)
            except BinlakeError as exc:
                raise _DumpFailed(f"Failed to parse GTID position '{text}': {exc}") from None
            self.exclude_state = state
            until = self.session.user_vars.get("slave_until_gtid")
            if until is not None:
                try:
                    self.until = {g.domain_id: g for g in MariaGtidState(str(until))}
                except BinlakeError as exc:
                    raise _DumpFailed("Out of memory or malformed slave request when obtaining UNTIL "
                                      f"position sent from slave: '{until}': {exc}") from None
            self._check_maria_state(state)
            bf = store.first_file_for_state(state)
            if bf is None:
                raise _DumpFailed("Could not find GTID state requested by slave in any binlog files. "
                                  "Probably the slave state is too old and required binlog files have "
                                  "been purged.")
            if self.until:
                # a domain whose UNTIL GTID lies in the files before this one is reached already
                for d, srv, seq in bf.gtid_list_raw:
                    g = self.until.get(d)
                    if g is not None and g.server_id == srv and g.seq_no <= seq:
                        del self.until[d]
            return bf, 4
        name, pos = req.filename, req.position
        src, _ = self._words()
        bf = store.get(name) if name else store.first()
        if bf is None:
            store.refresh()
            bf = store.get(name)
        if bf is None:
            raise _DumpFailed("Could not find first log file name in binary log index file")
        if pos < 4:
            raise _DumpFailed(f"Client requested {src} to start replication from position < 4.")
        if pos > bf.end:
            raise _DumpFailed(f"Client requested {src} to start replication from position > file size")
        if not bf.is_boundary(pos):
            raise _DumpFailed(f"Client requested {src} to start replication from impossible position; "
                              f"no event starts at '{bf.name}' position {pos} (bogus data in log event)")
        return bf, pos

    def _check_gtids(self, wanted: MySQLGtidSet) -> None:
        """MySQL's two refusals: the replica has GTIDs of ours we never wrote, or needs purged ones."""
        store = self.store
        executed = store.gtid_executed()
        own_uuid = self.primary.server_uuid
        # the server's own (untagged) uuid, as MySQL checks it
        own = MySQLGtidSet.from_intervals(row for row in wanted if row[0] == own_uuid and row[1] is None)
        if not own.issubset(executed):
            src, rep = self._words()
            raise _DumpFailed(
                f"{rep.capitalize()} has more GTIDs than the {src} has, using the {src}'s SERVER_UUID. This may "
                "indicate that the end of the binary log was truncated or that the last binary log "
                "file was lost, e.g., after a power or disk failure when sync_binlog != 1. The "
                f"{src} may or may not have rolled back transactions that were already replicated "
                f"to the {rep}. Suggest to replicate any transactions that {src} has rolled back "
                f"from {rep} to {src}, and/or commit empty transactions on {src} to account for "
                f"transactions that have been committed on {src} but are not included in "
                "GTID_EXECUTED.")
        purged = store.gtid_purged()
        if not purged.issubset(wanted):
            raise _DumpFailed(self._purged_message(wanted))

    def _purged_message(self, wanted: MySQLGtidSet) -> str:
        src, rep = self._words()
        missing = self.store.gtid_purged().subtract(wanted)
        return (f"Cannot replicate because the {src} purged required binary logs. Replicate the "
                f"missing transactions from elsewhere, or provision a new {rep} from backup. Consider "
                f"increasing the {src}'s binary log expiration period. The GTID set sent by the {rep} "
                f"is '{wanted}', and the missing transactions are '{missing}'.")

    def _check_maria_state(self, state: MariaGtidState) -> None:
        have = self.store.gtid_binlog_pos()
        for g in state:
            cur = have.get(g.domain_id)
            if cur is not None and g.seq_no > cur.seq_no:
                raise _DumpFailed(f"Error: connecting slave requested to start from GTID {g}, which "
                                  "is not in the master's binlog")

    # -- files ------------------------------------------------------------------------------

    def _open(self, bf: BinlogFile, pos: int, *, zero_log_pos: bool) -> None:
        """Artificial ROTATE to (file, pos), the file's FDE, then read from ``pos``."""
        if bf.fde is None:
            raise _DumpFailed(bf.error or f"binlog '{bf.name}' has no FORMAT_DESCRIPTION event")
        if bf.encrypted:
            raise _DumpFailed(f"binlog '{bf.name}' is encrypted; binlake serve cannot decrypt it")
        alg = bf.checksum
        if alg != ChecksumAlg.OFF and self.replica_checksum is None:
            src, rep = self._words()
            raise _DumpFailed(f"{rep.capitalize()} can not handle replication events with the checksum "
                              f"that {src} is configured to log; the first event '{bf.name}' at {pos}, "
                              f"the last event read from '{bf.name}' at 4, the last byte read from "
                              f"'{bf.name}' at 4.")
        if self._reader is not None:
            self._reader.close()
        sid = self.primary.config.server_id
        self._send(artificial_rotate(bf.name, pos, server_id=sid, checksum=self._alg == ChecksumAlg.CRC32))
        self._alg = alg
        self._send(served_fde(bf.fde, zero_log_pos=zero_log_pos, checksum=alg == ChecksumAlg.CRC32))
        self.file = bf
        self._reader = EventReader(bf, max(pos, bf.fde_end))
        self._dec = BinlogDecoder(file=bf.name)
        self._dec.decode_event(bf.fde, 4)
        self._skip_group = False
        self._explicit = False

    # -- pumping ------------------------------------------------------------------------------

    def pump(self, now: float, budget: int = 1 << 18) -> DumpStatus:
        """Queue up to ``budget`` bytes of events on the connection."""
        if self.status is DumpStatus.DONE:
            return self.status
        self.status = DumpStatus.MORE
        sent = 0
        try:
            while sent < budget:
                assert self._reader is not None
                ev = self._reader.next()
                if ev is None:
                    if self._skipped_since_send:
                        # MySQL tells a replica where it is after a run of skipped transactions
                        self._heartbeat()
                    if not self._at_end():
                        break
                    continue
                sent += self._consider(ev)
        except _UntilReached:
            pass
        except DecodeError as exc:
            self._fail(f"{exc}")
        except _DumpFailed as exc:
            self._fail(str(exc))
        if sent:
            self._last_sent = now
        return self.status

    def _at_end(self) -> bool:
        """At the end of what the current file holds: go on (True), or wait / finish (False)."""
        bf = self.file
        reader = self._reader
        assert bf is not None and reader is not None
        self.store.refresh()
        if bf.end > reader.offset:
            return True
        nxt = self.store.next_after(bf.name)
        if nxt is not None:
            if bf.error:
                raise _DumpFailed(bf.error)
            if bf.tail_bytes:
                raise _DumpFailed(f"binlog truncated in the middle of event; the last event read from "
                                  f"'{bf.name}' at {reader.offset}, {bf.tail_bytes} bytes follow it")
            self._open(nxt, 4, zero_log_pos=False)
            return True
        if self.non_block:
            self.conn.send_eof()
            self.status = DumpStatus.DONE
            self._release()
        else:
            self.status = DumpStatus.WAITING
        return False

    def _consider(self, ev: RawEvent) -> int:
        code = ev.type_code
        need_ack = False
        if code in _GTID_STARTS:
            # a MariaDB GTID event that is not FL_STANDALONE opens the transaction itself (no
            # BEGIN follows): it ends at XID or COMMIT; MySQL's open one with a BEGIN query
            self._explicit = code == E.MARIADB_GTID and not ev.data[HEADER_LEN + 12] & 0x01
            self._skip_group = self._excluded(ev)
            skip = self._skip_group
        elif code in _CONTROL:
            skip = False
        else:
            skip = self._skip_group
            if (code == E.MARIADB_ANNOTATE_ROWS and self.primary.mariadb
                    and not self.flags & BINLOG_SEND_ANNOTATE_ROWS_EVENT):
                skip = True  # MariaDB sends ANNOTATE_ROWS only to replicas that ask for them
            if not skip and self.semi_sync:
                need_ack = self._ends_transaction(ev)
        if self.until is not None:
            skip = self._until_track(ev, skip)
        sent = 0
        if skip:
            self.events_skipped += 1
            self._skipped_since_send = True
        else:
            self._skipped_since_send = False
            self._send(ev.data, need_ack)
            assert self.file is not None
            if need_ack:
                self.ack_requests.append((self.file.name, ev.end))
                self._requested.add((self.file.name, ev.end))
                self.primary._note_ack_request(self.server_id, self.file.name, ev.end)
            sent = len(ev.data)
        if self._until_stop is not None and self._until_group_ends(ev):
            self._until_done(ev.end)
            raise _UntilReached
        return sent

    # -- START SLAVE UNTIL master_gtid_pos (MariaDB) ------------------------------------------

    def _until_track(self, ev: RawEvent, skip: bool) -> bool:
        """Follow the binlog state and the UNTIL GTIDs as MariaDB's dump thread does; returns
        whether to skip the event (a group past a domain's UNTIL GTID is not sent)."""
        assert self.until is not None
        code = ev.type_code
        d = ev.data
        if code == E.MARIADB_GTID_LIST:
            count = int.from_bytes(d[HEADER_LEN:HEADER_LEN + 4], "little") & 0x0FFFFFFF
            self._until_state = {}
            for i in range(count):
                at = HEADER_LEN + 4 + 16 * i
                self._until_state[(int.from_bytes(d[at:at + 4], "little"),
                                   int.from_bytes(d[at + 4:at + 8], "little"))] = int.from_bytes(d[at + 8:at + 16], "little")
            return skip
        if code != E.MARIADB_GTID:
            return skip
        seq = int.from_bytes(d[HEADER_LEN:HEADER_LEN + 8], "little")
        domain = int.from_bytes(d[HEADER_LEN + 8:HEADER_LEN + 12], "little")
        server = int.from_bytes(d[5:9], "little")
        standalone = bool(d[HEADER_LEN + 12] & MARIADB_GTID_STANDALONE)
        self._until_state.pop((domain, server), None)
        self._until_state[(domain, server)] = seq  # the newest last within its domain
        target = self.until.get(domain)
        if target is None:
            skip = True  # this domain reached its UNTIL GTID already
        elif server == target.server_id and seq >= target.seq_no:
            del self.until[domain]
            if not self.until:
                self._until_stop = "standalone" if standalone else "transaction"
            if seq > target.seq_no:
                skip = True  # the UNTIL GTID is not in the binlog: this group is past it
        self._skip_group = skip
        return skip

    def _until_group_ends(self, ev: RawEvent) -> bool:
        """Whether the group being sent when the last UNTIL GTID was reached ends here."""
        code = ev.type_code
        if self._until_stop == "standalone":
            return code not in _GROUP_PARTS
        if code in (E.XID, E.XA_PREPARE):
            return True
        if code != E.QUERY:
            return False
        assert self._dec is not None
        q = self._dec.decode_event(ev.data, ev.offset)[0].query.strip().upper()  # type: ignore[attr-defined]
        return q in ("COMMIT", "ROLLBACK")

    def _until_done(self, end: int) -> None:
        """The UNTIL condition is met: a GTID_LIST flagged UNTIL_REACHED with the binlog state,
        then EOF, as a MariaDB primary ends such a dump."""
        state = sorted(self._until_state.items(), key=lambda item: item[0][0])  # by domain, newest last
        body = (len(state) | GTID_LIST_UNTIL_REACHED).to_bytes(4, "little") + b"".join(
            dom.to_bytes(4, "little") + srv.to_bytes(4, "little") + seq.to_bytes(8, "little")
            for (dom, srv), seq in state)
        self._send(build_event(E.MARIADB_GTID_LIST, body, server_id=self.primary.config.server_id,
                               log_pos=end, flags=LOG_EVENT_ARTIFICIAL_F,
                               checksum=self._alg == ChecksumAlg.CRC32))
        self.until_reached = True
        log.info("connection %d: until reached %s", self.session.connection_id,
                 kv({"at": f"{self.file.name if self.file else '-'}:{end}",
                     "binlog_state": ",".join(f"{d}-{s}-{q}" for (d, s), q in state)}))
        self.conn.send_eof()
        self.status = DumpStatus.DONE
        self._release()

    def _excluded(self, ev: RawEvent) -> bool:
        code = ev.type_code
        if code == E.ANONYMOUS_GTID:
            return False
        if self.exclude_set is None and self.exclude_state is None:
            return False
        assert self._dec is not None
        decoded = self._dec.decode_event(ev.data, ev.offset)[0]
        if self.exclude_set is not None and code in (E.GTID, E.GTID_TAGGED):
            return self.exclude_set.contains(decoded)  # type: ignore[arg-type]
        if self.exclude_state is not None and code == E.MARIADB_GTID:
            return self.exclude_state.contains(decoded.gtid)  # type: ignore[attr-defined]
        return False

    def _ends_transaction(self, ev: RawEvent) -> bool:
        """Whether this event commits a transaction (where a semi-sync primary wants an ACK);
        the same rule a replica uses to find transaction boundaries."""
        code = ev.type_code
        if code in _TX_END_TYPES:
            self._explicit = False
            return True
        if code not in _QUERY_TYPES:
            return False
        assert self._dec is not None
        q = self._dec.decode_event(ev.data, ev.offset)[0].query.lstrip()[:12].upper()  # type: ignore[attr-defined]
        if q.startswith(("BEGIN", "XA START")):
            self._explicit = True
            return False
        if q.startswith("XA END"):
            return False
        if q.startswith(("COMMIT", "ROLLBACK")) or not self._explicit:
            self._explicit = False
            return True
        return False

    def _send(self, event: bytes, need_ack: bool = False) -> None:
        if self.semi_sync:
            head = bytes((0, SEMI_SYNC_MAGIC, SEMI_SYNC_NEED_ACK if need_ack else 0))
        else:
            head = b"\x00"
        self.conn.send_packet(head + event)
        self.events_sent += 1
        self.bytes_sent += len(event)

    def _heartbeat(self) -> None:
        assert self.file is not None
        self._send(heartbeat_event(self.file.name, self.position, server_id=self.primary.config.server_id,
                                   checksum=self._alg == ChecksumAlg.CRC32))
        self.events_sent -= 1
        self.heartbeats_sent += 1
        self._skipped_since_send = False

    # -- waiting ------------------------------------------------------------------------------

    def wait_time(self, now: float) -> float:
        """Seconds the edge may block before calling tick()."""
        waits = [self.POLL - (now - self._last_refresh)]
        if self.heartbeat_period > 0:
            waits.append(self.heartbeat_period - (now - self._last_sent))
        return max(0.0, min(waits))

    def tick(self, now: float) -> DumpStatus:
        """While waiting: heartbeat when due, and notice new events in the folder."""
        if self.status is not DumpStatus.WAITING:
            return self.status
        if self.heartbeat_period > 0 and now - self._last_sent >= self.heartbeat_period:
            self._heartbeat()
            self._last_sent = now
        if now - self._last_refresh >= self.POLL:
            self._last_refresh = now
            self.store.refresh()
            bf = self.file
            if bf is not None and (bf.end > self.position or self.store.next_after(bf.name) is not None):
                self.status = DumpStatus.MORE
        return self.status

    # -- ACKs and the end ---------------------------------------------------------------------

    def on_ack(self, payload: bytes) -> Ack:
        """A semi-sync ACK (after its 0xEF): 8-byte position, then the file name."""
        if len(payload) < 8:
            raise ProtocolError(f"semi-sync ACK of {len(payload)} bytes is too short")
        pos = int.from_bytes(payload[:8], "little")
        name = bytes(payload[8:]).decode("utf-8", "replace")
        ack = Ack(self.server_id, name, pos, (name, pos) in self._requested)
        self.acks.append(ack)
        self.primary._note_ack(ack)
        return ack

    def _fail(self, message: str) -> None:
        log.info("connection %d: binlog dump failed %s", self.session.connection_id,
                 kv({"error": ER_MASTER_FATAL_ERROR_READING_BINLOG, "message": message}))
        self.error = message
        self.conn.send_error(ER_MASTER_FATAL_ERROR_READING_BINLOG, message, "HY000")
        self.status = DumpStatus.DONE
        self._release()

    def _release(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self._counted:
            self._counted = False
            self.primary._semi_sync_client(-1)

    def close(self) -> None:
        if self.status is not DumpStatus.DONE:
            self.status = DumpStatus.DONE
        self._release()
