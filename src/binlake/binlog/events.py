"""Typed binlog events: what the decoder hands out.

Every event knows its header, the binlog file it came from and its start offset there, so
each later record (a change, an error, a checkpoint) can point at the exact bytes.
Events that MySQL wraps in a TRANSACTION_PAYLOAD carry the payload's offsets plus
`inner_index`, their rank inside the payload.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Sequence, TypedDict

from .constants import EventType
from .header import EventHeader

if TYPE_CHECKING:
    from .table_map import TableMapEvent


class EventBase(TypedDict):
    """The fields every event has, as the decoder hands them to the codecs, which make
    `SomeEvent(**base, ...)`."""

    header: EventHeader
    file: str | None
    offset: int
    end: int


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class Event:
    """Every decoded event: its header, where it lies (file, offset, end) and, for an event
    unpacked from a transaction payload, its place inside it."""

    header: EventHeader
    file: str | None
    offset: int
    """Start of the event in its file; for events inside a payload, the payload's start."""
    end: int
    """Where the next event starts (the position to resume after this event)."""
    inner_index: int | None = None

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def type_name(self) -> str:
        return EventType.name_of(self.header.type_code)

    @property
    def timestamp(self) -> int:
        return self.header.timestamp

    def summary(self) -> dict[str, Any]:
        """Event-specific fields for display (text/JSON output)."""
        return {}

    # One __repr__ and __eq__ for every event class, as dataclass would write them: generating
    # them per class would slow this module's import, which every run pays at start.
    def __repr__(self) -> str:
        parts = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"{type(self).__qualname__}({parts})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = [f.name for f in fields(self) if f.compare]
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value: as dataclass does


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class FormatDescriptionEvent(Event):
    """A binlog file's first event: the server version, header and post-header lengths and
    the checksum algorithm, which decide how every later event is read."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int
    """0 = none, 1 = CRC32; 255/absent for servers that predate checksums."""

    def post_header_len(self, type_code: int) -> int | None:
        idx = type_code - 1
        if 0 <= idx < len(self.post_header_lengths):
            return self.post_header_lengths[idx]
        return None

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    def summary(self) -> dict[str, Any]:
        return {"binlog_version": self.binlog_version, "server_version": self.server_version,
                "checksum": {0: "NONE", 1: "CRC32"}.get(self.checksum_alg, "n/a")}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class RotateEvent(Event):
    """The primary moves on to `next_file` at `position` (a real rotation, or the fake
    first event of a dump that names the file being streamed)."""

    next_file: str
    position: int

    def summary(self) -> dict[str, Any]:
        return {"next_file": self.next_file, "position": self.position}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class StopEvent(Event):
    """The server stopped cleanly: the last event of its binlog file."""

    pass


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class QueryEvent(Event):
    """A statement: DDL, BEGIN/COMMIT, XA statements, or statement-based DML."""

    thread_id: int
    exec_time: int
    error_code: int
    schema: str
    query: str
    status_vars: dict[str, Any] = field(default_factory=dict)
    compressed: bool = False
    ddl: Any = None
    """Set by the schema history when the statement changed a table's structure."""

    def summary(self) -> dict[str, Any]:
        return {"schema": self.schema, "query": self.query, "error_code": self.error_code,
                "status": self.status_vars}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class XidEvent(Event):
    """The commit of a transactional event group, with its XID."""

    xid: int

    def summary(self) -> dict[str, Any]:
        return {"xid": self.xid}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class IntvarEvent(Event):
    """LAST_INSERT_ID or INSERT_ID for the next statement (statement-based logging)."""

    kind: str  # LAST_INSERT_ID | INSERT_ID
    value: int

    def summary(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class RandEvent(Event):
    """RAND() seeds for the next statement (statement-based logging)."""

    seed1: int
    seed2: int

    def summary(self) -> dict[str, Any]:
        return {"seed1": self.seed1, "seed2": self.seed2}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class UserVarEvent(Event):
    """A user variable the next statement reads (statement-based logging)."""

    name: str
    value: Any
    value_type: str | None
    charset: int | None
    unsigned: bool = False

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "type": self.value_type}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class IncidentEvent(Event):
    """The primary says something happened that replicas cannot repeat (a lost event)."""

    incident: int
    message: str

    def summary(self) -> dict[str, Any]:
        return {"incident": self.incident, "message": self.message}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class HeartbeatEvent(Event):
    """A primary's keep-alive while its binlog is idle: where it stands, no data."""

    log_file: str
    log_pos: int

    def summary(self) -> dict[str, Any]:
        return {"log_file": self.log_file, "log_pos": self.log_pos}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class RowsQueryEvent(Event):
    """MySQL's text of the statement behind the rows events that follow."""

    query: str

    def summary(self) -> dict[str, Any]:
        return {"query": self.query}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class AnnotateRowsEvent(Event):
    """MariaDB's text of the statement behind the rows events that follow."""

    query: str

    def summary(self) -> dict[str, Any]:
        return {"query": self.query}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class GtidEvent(Event):
    """MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED: starts a transaction."""

    uuid: str | None
    gno: int
    tag: str | None = None
    flags: int = 0
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None  # microseconds since epoch
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    anonymous: bool = False

    @property
    def gtid(self) -> str | None:
        if self.anonymous or self.uuid is None:
            return None
        tag = f":{self.tag}" if self.tag else ""
        return f"{self.uuid}{tag}:{self.gno}"

    def summary(self) -> dict[str, Any]:
        return {"gtid": self.gtid, "last_committed": self.last_committed,
                "sequence_number": self.sequence_number,
                "commit_ts_us": self.immediate_commit_timestamp,
                "transaction_length": self.transaction_length}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class PreviousGtidsEvent(Event):
    """MySQL: the GTID set in the binlog files before this one."""

    gtid_set: str

    def summary(self) -> dict[str, Any]:
        return {"gtid_set": self.gtid_set}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class MariaGtidEvent(Event):
    """MariaDB GTID event: domain-server-seq; starts an event group."""

    domain_id: int
    server_id: int
    seq_no: int
    flags: int
    commit_id: int | None = None
    xid: str | None = None
    flags_extra: int | None = None
    extra_engines: int | None = None  # flags_extra & 0x01: other engines in the transaction
    sa_seq_no: int | None = None  # flags_extra & 0x0c: seq_no of the matching START ALTER
    thread_id: int | None = None  # flags_extra & 0x10 (MariaDB 11.5+): originating connection

    FL_STANDALONE = 1
    FL_GROUP_COMMIT_ID = 2
    FL_TRANSACTIONAL = 4
    FL_ALLOW_PARALLEL = 8
    FL_WAITED = 16
    FL_DDL = 32
    FL_PREPARED_XA = 64
    FL_COMPLETED_XA = 128

    @property
    def gtid(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"

    @property
    def standalone(self) -> bool:
        return bool(self.flags & self.FL_STANDALONE)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"gtid": self.gtid, "flags": self.flags}
        if self.commit_id is not None:
            out["commit_id"] = self.commit_id
        if self.xid is not None:
            out["xid"] = self.xid
        return out


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class MariaGtidListEvent(Event):
    """MariaDB: the last GTID of each domain in the binlog files before this one."""

    gtids: list[tuple[int, int, int]]  # (domain, server, seq)
    flags: int = 0

    def summary(self) -> dict[str, Any]:
        return {"gtid_list": ",".join(f"{d}-{s}-{q}" for d, s, q in self.gtids)}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class BinlogCheckpointEvent(Event):
    """MariaDB: the oldest binlog file crash recovery may still need."""

    binlog_file: str

    def summary(self) -> dict[str, Any]:
        return {"binlog_file": self.binlog_file}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class StartEncryptionEvent(Event):
    """MariaDB: the events after this one are encrypted with this scheme and key."""

    scheme: int
    key_version: int
    nonce: bytes

    def summary(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "key_version": self.key_version}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class XaPrepareEvent(Event):
    """MySQL: XA PREPARE (or COMMIT ... ONE PHASE) ends this event group."""

    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes

    def summary(self) -> dict[str, Any]:
        return {"one_phase": self.one_phase, "format_id": self.format_id,
                "gtrid": self.gtrid.hex(), "bqual": self.bqual.hex()}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class TransactionPayloadEvent(Event):
    """MySQL 8.0.20+: a compressed transaction; its inner events follow it."""

    compression: str
    payload_size: int
    uncompressed_size: int
    event_count: int = 0

    def summary(self) -> dict[str, Any]:
        return {"compression": self.compression, "payload_size": self.payload_size,
                "uncompressed_size": self.uncompressed_size, "events": self.event_count}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class OpaqueEvent(Event):
    """Events whose body binlake keeps as bytes on purpose (statement-era LOAD DATA blocks,
    group-replication context). They carry no row data; `body` holds every byte."""

    body: bytes
    fields: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {**self.fields, "body_len": len(self.body)}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class UnknownEvent(Event):
    """An unknown type, handed on raw only when the user asked for pass-through."""

    body: bytes

    def summary(self) -> dict[str, Any]:
        return {"body_len": len(self.body)}


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class RowsEvent(Event):
    """WRITE/UPDATE/DELETE rows (v0/v1/v2, MariaDB compressed, MySQL PARTIAL_UPDATE).

    `rows` holds tuples over *all* columns of the table, in table order; columns outside the
    row image hold binlake.binlog.values.ABSENT. For updates each item is (before, after). A decoder
    made with `json_images` gives each image as CDC JSON bytes instead, usually packed in an
    ImageRows (a read-only sequence of the same items; the Arrow path copies it whole).
    """

    kind: str  # insert | update | delete
    table_id: int
    flags: int
    table: "TableMapEvent"
    rows: Sequence[Any]
    extra_data: bytes = b""
    version: int = 2
    filtered: bool = False
    """True when the user's table filter excluded this table: rows were not decoded."""
    filtered_rows: int = 0
    """Rows of a filtered event, when the decoder was asked to count them (count_filtered):
    a replica's resume point counts rows whatever the filter."""

    def summary(self) -> dict[str, Any]:
        return {"table": f"{self.table.schema}.{self.table.table}", "kind": self.kind,
                "rows": len(self.rows)}


# Rows-event flags
STMT_END_F = 0x1
NO_FOREIGN_KEY_CHECKS_F = 0x2
RELAXED_UNIQUE_CHECKS_F = 0x4
COMPLETE_ROWS_F = 0x8
