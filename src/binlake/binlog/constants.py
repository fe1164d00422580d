"""Binlog event and column type codes, as written by MySQL and MariaDB.

Values come from the servers' public headers (binlog_event.h, log_event.h, field_types.h);
they are wire constants, so they live in one place and never get re-typed elsewhere.
"""
from __future__ import annotations

from enum import IntEnum, IntFlag


class EventType(IntEnum):
    """Binlog event type codes (byte 4 of the v4 header)."""

    UNKNOWN = 0
    START_V3 = 1
    QUERY = 2
    STOP = 3
    ROTATE = 4
    INTVAR = 5
    LOAD = 6
    SLAVE = 7
    CREATE_FILE = 8
    APPEND_BLOCK = 9
    EXEC_LOAD = 10
    DELETE_FILE = 11
    NEW_LOAD = 12
    RAND = 13
    USER_VAR = 14
    FORMAT_DESCRIPTION = 15
    XID = 16
    BEGIN_LOAD_QUERY = 17
    EXECUTE_LOAD_QUERY = 18
    TABLE_MAP = 19
    WRITE_ROWS_V0 = 20
    UPDATE_ROWS_V0 = 21
    DELETE_ROWS_V0 = 22
    WRITE_ROWS_V1 = 23
    UPDATE_ROWS_V1 = 24
    DELETE_ROWS_V1 = 25
    INCIDENT = 26
    HEARTBEAT = 27
    IGNORABLE = 28
    ROWS_QUERY = 29
    WRITE_ROWS_V2 = 30
    UPDATE_ROWS_V2 = 31
    DELETE_ROWS_V2 = 32
    GTID = 33
    ANONYMOUS_GTID = 34
    PREVIOUS_GTIDS = 35
    TRANSACTION_CONTEXT = 36
    VIEW_CHANGE = 37
    XA_PREPARE = 38
    PARTIAL_UPDATE_ROWS = 39
    TRANSACTION_PAYLOAD = 40
    HEARTBEAT_V2 = 41
    GTID_TAGGED = 42
    # MariaDB
    MARIADB_ANNOTATE_ROWS = 160
    MARIADB_BINLOG_CHECKPOINT = 161
    MARIADB_GTID = 162
    MARIADB_GTID_LIST = 163
    MARIADB_START_ENCRYPTION = 164
    MARIADB_QUERY_COMPRESSED = 165
    MARIADB_WRITE_ROWS_COMPRESSED_V1 = 166
    MARIADB_UPDATE_ROWS_COMPRESSED_V1 = 167
    MARIADB_DELETE_ROWS_COMPRESSED_V1 = 168
    MARIADB_WRITE_ROWS_COMPRESSED = 169
    MARIADB_UPDATE_ROWS_COMPRESSED = 170
    MARIADB_DELETE_ROWS_COMPRESSED = 171
    MARIADB_PARTIAL_ROW_DATA = 172  # 11.x: fragments of one large event; not reassembled yet

    @classmethod
    def name_of(cls, code: int) -> str:
        name = _EVENT_NAMES.get(code)
        if name is None:
            try:
                name = cls(code).name
            except ValueError:
                return f"UNKNOWN_EVENT_{code}"
        return name


_EVENT_NAMES: dict[int, str] = {m.value: m.name for m in EventType}
"""name_of is asked once per event: a dict beats the Enum's value lookup."""


class ColumnType(IntEnum):
    """Column type codes in TABLE_MAP (enum_field_types)."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


class EventFlag(IntFlag):
    """Flags in the common header (bytes 17..18)."""

    BINLOG_IN_USE = 0x1
    THREAD_SPECIFIC = 0x4
    SUPPRESS_USE = 0x8
    ARTIFICIAL = 0x20
    RELAY_LOG = 0x40
    IGNORABLE = 0x80
    SKIP_REPLICATION = 0x8000


class ChecksumAlg(IntEnum):
    OFF = 0
    CRC32 = 1
    UNDEF = 255


BINLOG_MAGIC = b"\xfebin"
HEADER_LEN = 19
CHECKSUM_LEN = 4
# A FORMAT_DESCRIPTION event from a server that knows checksums ends with alg(1) + crc(4).
CHECKSUM_VERSION_SPLIT_MYSQL = (5, 6, 1)
CHECKSUM_VERSION_SPLIT_MARIADB = (5, 3, 0)

ROWS_EVENT_TYPES = frozenset(
    {
        EventType.WRITE_ROWS_V0, EventType.UPDATE_ROWS_V0, EventType.DELETE_ROWS_V0,
        EventType.WRITE_ROWS_V1, EventType.UPDATE_ROWS_V1, EventType.DELETE_ROWS_V1,
        EventType.WRITE_ROWS_V2, EventType.UPDATE_ROWS_V2, EventType.DELETE_ROWS_V2,
        EventType.PARTIAL_UPDATE_ROWS,
        EventType.MARIADB_WRITE_ROWS_COMPRESSED_V1, EventType.MARIADB_UPDATE_ROWS_COMPRESSED_V1,
        EventType.MARIADB_DELETE_ROWS_COMPRESSED_V1, EventType.MARIADB_WRITE_ROWS_COMPRESSED,
        EventType.MARIADB_UPDATE_ROWS_COMPRESSED, EventType.MARIADB_DELETE_ROWS_COMPRESSED,
    }
)
