"""QUERY events (DDL, BEGIN, statement-based DML) and their status variables."""
from __future__ import annotations

from typing import Any

from ...errors import DecodeError
from ..events import EventBase, QueryEvent
from ..wire import need, packed_int, raw, text, u16, u32, u64, uint_n

FLAGS2 = 0
SQL_MODE = 1
CATALOG = 2
AUTO_INCREMENT = 3
CHARSET = 4
TIME_ZONE = 5
CATALOG_NZ = 6
LC_TIME_NAMES = 7
CHARSET_DATABASE = 8
TABLE_MAP_FOR_UPDATE = 9
MASTER_DATA_WRITTEN = 10
INVOKER = 11
UPDATED_DB_NAMES = 12
MICROSECONDS = 13
COMMIT_TS = 14
COMMIT_TS2 = 15
EXPLICIT_DEFAULTS_FOR_TIMESTAMP = 16
DDL_LOGGED_WITH_XID = 17
DEFAULT_COLLATION_FOR_UTF8MB4 = 18
SQL_REQUIRE_PRIMARY_KEY = 19
DEFAULT_TABLE_ENCRYPTION = 20
MARIA_HRNOW = 128
MARIA_XID = 129
MARIA_GTID_FLAGS3 = 130
MARIA_CHARACTER_SET_COLLATIONS = 131

MAX_DBS_IN_EVENT_MTS = 254
FL_START_ALTER_E1 = 2
FL_COMMIT_ALTER_E1 = 4
FL_ROLLBACK_ALTER_E1 = 8


def _lenstr(buf: bytes, pos: int) -> tuple[str, int]:
    n, pos = uint_n(buf, pos, 1, "status string length")
    s, pos = raw(buf, pos, n, "status string")
    return text(s), pos


def parse_status_vars(buf: bytes) -> dict[str, Any]:
    """Decode status variables. Codes binlake does not know end the walk (their length is not
    self-describing) and the rest is kept as hex under 'unparsed'; no statement text is lost."""
    out: dict[str, Any] = {}
    pos = 0
    end = len(buf)
    while pos < end:
        code = buf[pos]
        pos += 1
        if code == FLAGS2:
            out["flags2"], pos = u32(buf, pos)
        elif code == SQL_MODE:
            out["sql_mode"], pos = u64(buf, pos)
        elif code == CATALOG:
            n, pos = uint_n(buf, pos, 1)
            s, pos = raw(buf, pos, n + 1)
            out["catalog"] = text(s[:-1])
        elif code == AUTO_INCREMENT:
            inc, pos = u16(buf, pos)
            off, pos = u16(buf, pos)
            out["auto_increment"] = (inc, off)
        elif code == CHARSET:
            c, pos = u16(buf, pos)
            cc, pos = u16(buf, pos)
            srv, pos = u16(buf, pos)
            out["charset"] = {"client": c, "connection": cc, "server": srv}
        elif code == TIME_ZONE:
            out["time_zone"], pos = _lenstr(buf, pos)
        elif code == CATALOG_NZ:
            out["catalog"], pos = _lenstr(buf, pos)
        elif code == LC_TIME_NAMES:
            out["lc_time_names"], pos = u16(buf, pos)
        elif code == CHARSET_DATABASE:
            out["charset_database"], pos = u16(buf, pos)
        elif code == TABLE_MAP_FOR_UPDATE:
            out["table_map_for_update"], pos = u64(buf, pos)
        elif code == MASTER_DATA_WRITTEN:
            out["master_data_written"], pos = u32(buf, pos)
        elif code == INVOKER:
            user, pos = _lenstr(buf, pos)
            host, pos = _lenstr(buf, pos)
            out["invoker"] = f"{user}@{host}"
        elif code == UPDATED_DB_NAMES:
            count, pos = uint_n(buf, pos, 1)
            names = []
            if count != MAX_DBS_IN_EVENT_MTS:
                for _ in range(count):
                    zero = bytes(buf[pos:]).find(b"\0")
                    if zero < 0:
                        raise DecodeError("unterminated database name in status variables")
                    names.append(text(buf[pos:pos + zero]))
                    pos += zero + 1
            out["updated_db_names"] = names
        elif code == MICROSECONDS:
            out["microseconds"], pos = uint_n(buf, pos, 3)
        elif code == COMMIT_TS:
            pos += 0  # reserved, never written with a payload
        elif code == COMMIT_TS2:
            out["commit_ts2"], pos = u64(buf, pos)
        elif code == EXPLICIT_DEFAULTS_FOR_TIMESTAMP:
            v, pos = uint_n(buf, pos, 1)
            out["explicit_defaults_for_timestamp"] = bool(v)
        elif code == DDL_LOGGED_WITH_XID:
            out["ddl_xid"], pos = u64(buf, pos)
        elif code == DEFAULT_COLLATION_FOR_UTF8MB4:
            out["default_collation_for_utf8mb4"], pos = u16(buf, pos)
        elif code == SQL_REQUIRE_PRIMARY_KEY:
            out["sql_require_primary_key"], pos = uint_n(buf, pos, 1)
        elif code == DEFAULT_TABLE_ENCRYPTION:
            out["default_table_encryption"], pos = uint_n(buf, pos, 1)
        elif code == MARIA_HRNOW:
            out["microseconds"], pos = uint_n(buf, pos, 3)
        elif code == MARIA_XID:
            out["xid"], pos = u64(buf, pos)
        elif code == MARIA_GTID_FLAGS3:
            flags3, pos = uint_n(buf, pos, 1)
            out["gtid_flags3"] = flags3
            if flags3 & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
                out["sa_seq_no"], pos = u64(buf, pos)  # the START ALTER this one completes
        elif code == MARIA_CHARACTER_SET_COLLATIONS:
            n, pos = packed_int(buf, pos)
            need(buf, pos, n * 4, "character set collations")
            pos += n * 4
        else:
            out["unparsed"] = bytes(buf[pos - 1:]).hex()
            break
    return out


def decode_query(body: bytes, base: EventBase, post_header_len: int,
                 query_bytes: bytes | None = None, compressed: bool = False) -> QueryEvent:
    """`query_bytes` replaces the statement text for MariaDB QUERY_COMPRESSED events."""
    thread_id, pos = u32(body, 0, "thread id")
    exec_time, pos = u32(body, pos, "exec time")
    db_len, pos = uint_n(body, pos, 1, "db length")
    error_code, pos = u16(body, pos, "error code")
    status_len = 0
    if post_header_len >= 13:
        status_len, pos = u16(body, pos, "status length")
    pos = max(pos, post_header_len)
    status_b, pos = raw(body, pos, status_len, "status variables")
    db, pos = raw(body, pos, db_len + 1, "schema name")
    if db[-1:] != b"\0":
        raise DecodeError("schema name is not NUL-terminated")
    q = bytes(body[pos:]) if query_bytes is None else query_bytes
    return QueryEvent(**base, thread_id=thread_id, exec_time=exec_time, error_code=error_code,
                      schema=text(db[:-1]), query=text(q), status_vars=parse_status_vars(status_b),
                      compressed=compressed)


def query_text_offset(body: bytes, post_header_len: int) -> int:
    """Where the statement text starts: MariaDB compresses only that part."""
    status_len = int.from_bytes(body[11:13], "little") if post_header_len >= 13 else 0
    db_len = body[8]
    return max(13 if post_header_len >= 13 else 11, post_header_len) + status_len + db_len + 1
