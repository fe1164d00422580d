"""Connections for the snapshot and its watermarks: LOW (a consistent snapshot's exact binlog
position) and HIGH (the binlog end after a read)."""
from __future__ import annotations

from typing import Any

from ..errors import BinlakeError
from ..protocol.results import ColumnDefinition
from ..replica.connection import MySQLConnection
from ..replica.url import ServerURL
from ..cdc.arrow import file_index


class SnapshotError(BinlakeError):
    """The snapshot cannot be taken exactly (configuration, table shape, DDL during a chunk)."""


# -- connections -----------------------------------------------------------------------------

def connect(url: ServerURL, database: str | None = None) -> Any:
    """A PyMySQL connection that returns raw text (bytes for binary columns).

    Raw text because PyMySQL's conversions lose what the binlog keeps (zero dates, DECIMAL
    scale); sql_mode '' so backslash escaping and CHAR values behave; time_zone UTC because
    the binlog carries TIMESTAMPs as UTC instants.
    """
    import pymysql
    from pymysql import converters

    encoders = {k: v for k, v in converters.conversions.items() if not isinstance(k, int)}
    kw: dict[str, Any] = {"host": url.host, "port": url.port, "user": url.user,
                          "password": url.password or "", "database": database,
                          "charset": "utf8mb4", "autocommit": True, "conv": encoders}
    opts = url.options
    if "connect_timeout" in opts:
        kw["connect_timeout"] = float(opts["connect_timeout"])
    mode = opts.get("ssl_mode", "").upper()
    certs = {k: opts[f"ssl_{k}"] for k in ("ca", "cert", "key") if f"ssl_{k}" in opts}
    if mode != "DISABLED" and (mode or certs):
        # Any mode but DISABLED asks for TLS and fails if the server has none (PyMySQL
        # cannot fall back, and a silent downgrade is worse than an error).
        verify = mode in ("VERIFY_CA", "VERIFY_IDENTITY")
        kw["ssl"] = {**certs, "verify_mode": verify, "check_hostname": mode == "VERIFY_IDENTITY"}
    conn = pymysql.connect(**kw)
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = '', time_zone = '+00:00'")
    return conn


_BYTES_TYPES = frozenset((16, 249, 250, 251, 252, 253, 254, 15, 255))
"""Wire types whose values are bytes when their charset is binary (63), as PyMySQL reads
them (BIT, the BLOBs, STRING, VAR_STRING, VARCHAR, GEOMETRY); every other type is text."""


def raw_is_bytes(col: ColumnDefinition) -> bool:
    """Whether a result column's raw values are bytes (else str), as `connect` returns them."""
    return col.type in _BYTES_TYPES and col.is_binary


def raw_row(values: Any, binary: list[bool]) -> tuple[Any, ...]:
    """A text row as `connect`'s cursor gives it: binary columns back to their bytes."""
    return tuple(v.encode("utf-8", "surrogateescape") if b and v is not None else v
                 for v, b in zip(values, binary))


def sql_literal(v: Any) -> str:
    """A parameter as a SQL literal, escaped as PyMySQL escapes it (backslash escapes: the
    sessions run with sql_mode '')."""
    from pymysql import converters

    if isinstance(v, (bytes, bytearray)):
        return str(converters.escape_bytes_prefixed(bytes(v)))
    return str(converters.escape_item(v, "utf8mb4"))


class TextCursor:
    """The few cursor calls the snapshot makes (`execute`, `fetchall`, `description`), on
    binlake's own client, whose `select_packed` hands a SELECT's rows over unparsed. Values
    are those `connect`'s PyMySQL cursor gives: str, or bytes for binary columns."""

    def __init__(self, conn: MySQLConnection) -> None:
        self.conn = conn
        self.description: list[tuple[str, int]] = []
        self._rows: list[tuple[Any, ...]] = []

    def __enter__(self) -> "TextCursor":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @staticmethod
    def _sql(sql: str, args: Any) -> str:
        if args is None:
            return sql
        return sql % tuple(sql_literal(a) for a in args)

    def execute(self, sql: str, args: Any = None) -> None:
        res = self.conn.query(self._sql(sql, args))
        self.description = [(c.name, c.type) for c in res.columns]
        binary = [raw_is_bytes(c) for c in res.columns]
        if any(binary):
            self._rows = [raw_row(r, binary) for r in res.rows]
        else:
            self._rows = list(res.rows)

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def select_packed(self, sql: str, args: Any = None) -> tuple[list[ColumnDefinition],
                                                                  bytearray, int]:
        """A SELECT's column definitions, its rows packed (`results.split_text_rows`), count."""
        self._rows = []
        return self.conn.query_packed(self._sql(sql, args))


class TextConnection:
    """`connect`'s counterpart on binlake's own client: `cursor()` and `close()`."""

    def __init__(self, conn: MySQLConnection) -> None:
        self.conn = conn

    def cursor(self) -> TextCursor:
        return TextCursor(self.conn)

    def close(self) -> None:
        self.conn.close()


def connect_text(url: ServerURL) -> TextConnection:
    """A session like `connect`'s (utf8mb4, autocommit, sql_mode '', time_zone UTC) on
    binlake's own client, for reads whose rows go to Arrow without Python values."""
    conn = MySQLConnection.connect(url.host, url.port, url.user, url.password,
                                   **url.connect_kwargs())
    try:
        conn.execute("SET SESSION sql_mode = '', time_zone = '+00:00', autocommit = 1")
    except BaseException:
        conn.close()
        raise
    return TextConnection(conn)


def query_rows(cur: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    cur.execute(sql, args)
    return [tuple(r) for r in cur.fetchall()]


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def server_flavor(cur: Any) -> str:
    version = str(query_rows(cur, "SELECT @@version")[0][0])
    return "mariadb" if "mariadb" in version.lower() else "mysql"


def binlog_end(cur: Any) -> tuple[str, int]:
    from ..schema.bootstrap import binlog_position

    p = binlog_position(cur)
    assert p.file is not None
    return (p.file, p.pos)


def gtid_at(cur: Any, flavor: str, at: tuple[str, int]) -> str | None:
    """MariaDB's GTID position of a binlog boundary (computed from the binlog itself)."""
    if flavor != "mariadb":
        return None
    value = query_rows(cur, "SELECT BINLOG_GTID_POS(%s, %s)", at)[0][0]
    return None if value is None else str(value)


def begin_snapshot(cur: Any, flavor: str) -> tuple[str, int]:
    """Open a consistent-snapshot transaction; its exact binlog position (the LOW watermark)."""
    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    if flavor == "mariadb":
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = dict(query_rows(cur, "SHOW STATUS LIKE 'binlog_snapshot_%'"))
        f, p = status.get("Binlog_snapshot_file"), status.get("Binlog_snapshot_position")
        if not f or not p:
            cur.execute("ROLLBACK")
            raise SnapshotError("the server reports no binlog_snapshot_file/position for a "
                                "consistent snapshot", hint="enable the binary log (log_bin)")
        return (str(f), int(p))
    # MySQL: no snapshot position; a global read lock makes the position and the read view
    # agree (no transaction can be between its binlog write and its commit). Held for
    # two statements.
    cur.execute("FLUSH TABLES WITH READ LOCK")
    try:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        return binlog_end(cur)
    finally:
        cur.execute("UNLOCK TABLES")



def position_key(p: tuple[str, int]) -> tuple[int, int]:
    """(file_index, pos) of a binlog position: positions compare in binlog order."""
    return (file_index(p[0]), p[1])
