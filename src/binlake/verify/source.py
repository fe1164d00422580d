"""The source side of `binlake verify`: tables, chunks and checksums computed by the server.

Every read runs in its own consistent-snapshot transaction whose binlog position is known
exactly (MariaDB's Binlog_snapshot_file/position; on MySQL the position is read under a
brief FLUSH TABLES WITH READ LOCK, as mysqldump does): a chunk's checksum is the chunk's
state at that position. No row locks are taken; the load is bounded by the chunk size, an
optional rate (rows per second) and a statement timeout that backs off and retries.
"""
from __future__ import annotations

import fnmatch
import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..replica.url import ServerURL
from .canonical import (RANGE_KINDS, Column, VerifyError, boundary_param, boundary_sql,
                        bucket_sql, column_kind, hash64_sql, q, row_sql, text_sql,
                        value_sql)

Position = tuple[str, int]
"""A binlog position (file, offset)."""

TIMEOUT_ERRORS = {1969, 3024}
"""MariaDB max_statement_time / MySQL max_execution_time exceeded."""


@dataclass(frozen=True)
class SourceTable:
    """A table as verify compares it: its columns in order and its primary key."""

    schema: str
    table: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def key_columns(self) -> tuple[Column, ...]:
        by = {c.name: c for c in self.columns}
        return tuple(by[k] for k in self.key)

    @property
    def ranged(self) -> bool:
        """Chunks are key ranges (else hash buckets of the key, read in one pass)."""
        return all(c.kind in RANGE_KINDS for c in self.key_columns)

    @property
    def from_sql(self) -> str:
        return f"{q(self.schema)}.{q(self.table)}"

    @property
    def row_text(self) -> str:
        return row_sql(self.columns)

    @property
    def key_text(self) -> str:
        return text_sql(self.key_columns)


@dataclass(frozen=True)
class Chunk:
    """One chunk: a key range [lo, hi) (boundary texts, None = unbounded) or a hash bucket."""

    index: int
    lo: tuple[str, ...] | None = None
    hi: tuple[str, ...] | None = None
    bucket: int | None = None


@dataclass
class Plan:
    table: SourceTable
    chunks: list[Chunk]
    rows: int | None
    """Rows counted while planning (hash-bucket tables; range chunks count as they are read)."""
    buckets: int = 0
    """Hash-bucket tables: the number of buckets (= chunks)."""


@dataclass
class Checksum:
    rows: int
    xor: int
    at: Position
    """The binlog position the chunk was read at."""


@dataclass
class Source:
    """A connection to the source server with verify's settings and load limits."""

    url: ServerURL
    rate: float | None = None
    """At most this many rows per second (sleeps between chunks)."""
    timeout: float | None = 30.0
    """Statement timeout in seconds; a timed-out read backs off and is retried."""
    retries: int = 4
    conn: Any = field(default=None, repr=False)
    flavor: str = "mariadb"

    def __post_init__(self) -> None:
        import pymysql
        from pymysql import converters

        encoders = {k: v for k, v in converters.conversions.items() if not isinstance(k, int)}
        kw = {"host": self.url.host, "port": self.url.port, "user": self.url.user,
              "password": self.url.password or "", "charset": "utf8mb4", "autocommit": True,
              "conv": encoders}
        if "connect_timeout" in self.url.options:
            kw["connect_timeout"] = float(self.url.options["connect_timeout"])
        mode = self.url.options.get("ssl_mode", "").upper()
        certs = {k: self.url.options[f"ssl_{k}"] for k in ("ca", "cert", "key")
                 if f"ssl_{k}" in self.url.options}
        if mode != "DISABLED" and (mode or certs):
            verify = mode in ("VERIFY_CA", "VERIFY_IDENTITY")
            kw["ssl"] = {**certs, "verify_mode": verify,
                         "check_hostname": mode == "VERIFY_IDENTITY"}
        try:
            self.conn = pymysql.connect(**kw)
        except pymysql.err.MySQLError as exc:
            raise VerifyError(f"cannot connect to {self.url}: {exc.args[-1]}") from None
        # Raw text (no Python conversions), UTC for TIMESTAMP, no sql_mode surprises, and
        # each read's snapshot (`read`) in REPEATABLE READ.
        self.rows("SET SESSION sql_mode = '', time_zone = '+00:00'")
        self.rows("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        version = str(self.rows("SELECT @@version")[0][0])
        self.flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
        self._rows_done = 0
        self._t0 = time.monotonic()
        self.timeouts = 0
        """Reads that hit the statement timeout (each retried after a pause)."""
        self._spares: list[Source] = []

    def close(self) -> None:
        for s in self._spares:
            s.close()
        self._spares.clear()
        self.conn.close()

    def another(self, share: int = 1) -> "Source":
        """One more connection with these settings, for reads side by side; `share` splits
        the rate limit among that many connections."""
        return Source(self.url, rate=self.rate / share if self.rate else None,
                      timeout=self.timeout, retries=self.retries)

    def spares(self, n: int) -> list["Source"]:
        """`n` more connections for reads side by side, kept open until `close` (planning
        and checksumming share them: a connection costs round trips and an
        authentication)."""
        while len(self._spares) < n:
            self._spares.append(self.another())
        return self._spares[:n]

    def rows(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """Run one statement; a server error becomes a VerifyError naming the server."""
        import pymysql

        try:
            return self._execute(sql, args)
        except pymysql.err.MySQLError as exc:
            raise VerifyError(f"{self.url}: {exc.args[-1]}") from None

    def _execute(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql, tuple(args) if args is not None else ())  # '%%' is always '%'
            return [tuple(r) for r in cur.fetchall()]

    def _limited(self, sql: str) -> str:
        if not self.timeout:
            return sql
        if self.flavor == "mariadb":
            return f"SET STATEMENT max_statement_time={self.timeout:g} FOR {sql}"
        return sql.replace("SELECT", f"SELECT /*+ MAX_EXECUTION_TIME({int(self.timeout * 1000)}) */", 1)

    def read(self, sql: str, args: Any = None) -> tuple[list[tuple[Any, ...]], Position]:
        """Run a SELECT in a consistent snapshot; its rows and the snapshot's binlog position.

        A statement that hits the timeout (the server is busy) is retried after a pause
        that doubles each time."""
        import pymysql

        pause = 1.0
        for attempt in range(self.retries + 1):
            at = self._begin()
            try:
                rows = self._execute(self._limited(sql), args)
                self.rows("COMMIT")
            except pymysql.err.MySQLError as exc:
                self.rows("ROLLBACK")
                self.timeouts += exc.args[0] in TIMEOUT_ERRORS if exc.args else 0
                if exc.args and exc.args[0] in TIMEOUT_ERRORS and attempt < self.retries:
                    time.sleep(pause)
                    pause *= 2
                    continue
                if exc.args and exc.args[0] in TIMEOUT_ERRORS:
                    raise VerifyError(f"a verify read timed out {self.retries + 1} times "
                                      f"({self.timeout:g} s each)",
                                      hint="use a smaller --chunk-size or a longer --timeout") from None
                raise VerifyError(f"{self.url}: {exc.args[-1]}") from None
            return rows, at
        raise AssertionError("unreachable")

    def throttle(self, rows: int) -> None:
        """Sleep so that the rows read so far stay under `rate` rows per second."""
        self._rows_done += rows
        if self.rate:
            ahead = self._rows_done / self.rate - (time.monotonic() - self._t0)
            if ahead > 0:
                time.sleep(ahead)

    def _begin(self) -> Position:
        if self.flavor == "mariadb":
            self.rows("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            status = dict(self.rows("SHOW STATUS LIKE 'binlog_snapshot_%%'"))
            f, p = status.get("Binlog_snapshot_file"), status.get("Binlog_snapshot_position")
            if not f or not p:
                self.rows("ROLLBACK")
                raise VerifyError("the server reports no binlog snapshot position",
                                  hint="enable the binary log (log_bin)")
            return (str(f), int(p))
        import pymysql

        self.rows("FLUSH TABLES WITH READ LOCK")
        try:
            self.rows("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            for stmt in ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"):
                try:
                    r = self._execute(stmt)
                except pymysql.err.ProgrammingError as exc:  # a syntax error (1064): the
                    if exc.args and exc.args[0] == 1064:      # other version's spelling
                        continue
                    raise VerifyError(f"{self.url}: {exc.args[-1]}") from None
                if r:
                    return (str(r[0][0]), int(r[0][1]))
            raise VerifyError("the server has no binary log (log_bin is off)")
        finally:
            self.rows("UNLOCK TABLES")

    # -- tables ---------------------------------------------------------------------------

    def select_tables(self, patterns: str) -> list[tuple[str, str]]:
        wanted = [p.strip() for p in patterns.split(",") if p.strip()]
        if not wanted:
            raise VerifyError("--tables names no table", hint="--tables 'db.*,db2.t'")
        names = [(str(s), str(t)) for s, t in self.rows(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = "
            "'BASE TABLE' AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', "
            "'performance_schema', 'sys') ORDER BY 1, 2")]
        out: list[tuple[str, str]] = []
        for p in wanted:
            if "." not in p:
                raise VerifyError(f"table {p!r}: write it as db.table")
            hit = [n for n in names if fnmatch.fnmatchcase(f"{n[0]}.{n[1]}", p)]
            if not hit:
                raise VerifyError(f"no table matches {p!r} on {self.url}")
            out.extend(h for h in hit if h not in out)
        return out

    def row_estimate(self, t: SourceTable) -> int | None:
        """The server's estimate of the table's rows (information_schema.TABLES)."""
        got = self.rows("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                        "%s AND TABLE_NAME = %s", (t.schema, t.table))
        return int(got[0][0]) if got and got[0][0] is not None else None

    def table_bytes(self, tables: Sequence[SourceTable]) -> dict[str, int]:
        """The server's estimate of each table's data bytes (information_schema), by name."""
        if not tables:
            return {}
        marks = " OR ".join(["(TABLE_SCHEMA = %s AND TABLE_NAME = %s)"] * len(tables))
        rows = self.rows(f"SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(DATA_LENGTH, 0) FROM "
                         f"information_schema.TABLES WHERE {marks}",
                         [v for t in tables for v in (t.schema, t.table)])
        return {f"{s}.{t}": int(n) for s, t, n in rows}

    def describe(self, schema: str, table: str) -> SourceTable:
        cols = self.rows(
            "SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_SET_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (schema, table))
        key = [str(r[0]) for r in self.rows(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
            (schema, table))]
        if not key:
            raise VerifyError(f"{schema}.{table} has no primary key",
                              hint="verify compares rows by key, as sync merges them")
        columns = tuple(Column(str(n), column_kind(str(n), str(t), c), str(t).lower(),
                               str(c).lower() if c else None)
                        for n, t, c in cols)
        return SourceTable(schema, table, columns, tuple(key))

    # -- planning and checksums -------------------------------------------------------------

    def plan(self, t: SourceTable, chunk_size: int,
             bounds: list[tuple[str, ...]] | None = None) -> Plan:
        """Chunks of about `chunk_size` rows: key ranges whose boundaries are real keys
        (walking the key index until it ends: no COUNT(*), which would read the table once
        more; or `bounds` given, texts as `boundary_sql` reads them), or hash buckets of the
        key (as many as the row count needs)."""
        if not t.ranged:
            count = int(self.rows(f"SELECT COUNT(*) FROM {t.from_sql}")[0][0])
            n = max(1, math.ceil(count / chunk_size))
            return Plan(t, [Chunk(i, bucket=i) for i in range(n)], count, n)
        if bounds is not None:
            edges: list[tuple[str, ...] | None] = [None, *bounds, None]
            return Plan(t, [Chunk(i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)],
                        None)
        keys = t.key_columns
        select = ", ".join(boundary_sql(c) for c in keys)
        order = ", ".join(q(k) for k in t.key)
        bounds = []
        while True:
            where, args = self.range_predicate(t, bounds[-1] if bounds else None, None)
            row = self.rows(f"SELECT {select} FROM {t.from_sql} WHERE {where} ORDER BY {order} "
                            f"LIMIT 1 OFFSET {chunk_size}", args)
            if not row:
                break
            bounds.append(tuple(str(v) for v in row[0]))
        edges = [None, *bounds, None]
        return Plan(t, [Chunk(i, edges[i], edges[i + 1]) for i in range(len(edges) - 1)], None)

    @staticmethod
    def range_predicate(t: SourceTable, lo: Sequence[str] | None,
                        hi: Sequence[str] | None) -> tuple[str, list[Any]]:
        """WHERE lo <= key < hi (lexicographic), spelled so that the key index serves it."""
        keys = t.key_columns
        parts, args = [], []
        for bound, op, strict in ((lo, ">", False), (hi, "<", True)):
            if bound is None:
                continue
            vals = [boundary_param(c, v) for c, v in zip(keys, bound)]
            expr = f"{q(keys[-1].name)} {op if strict else op + '='} %s"
            for c in reversed(keys[:-1]):
                expr = f"({q(c.name)} {op} %s OR ({q(c.name)} = %s AND {expr}))"
            parts.append(expr)
            for v in vals[:-1]:
                args += [v, v]
            args.append(vals[-1])
        return (" AND ".join(parts) or "1=1"), args

    def _where(self, plan: Plan, chunk: Chunk) -> tuple[str, list[Any]]:
        if chunk.bucket is not None:
            return f"{bucket_sql(plan.table.key_text, plan.buckets)} = %s", [chunk.bucket]
        return self.range_predicate(plan.table, chunk.lo, chunk.hi)

    def checksums(self, plan: Plan) -> Iterator[tuple[list[Chunk], dict[int, Checksum]]]:
        """Checksums of every chunk, a chunk at a time (hash-bucket tables: all in one read)."""
        t = plan.table
        agg = _checksum_sql(t)
        if plan.buckets:
            rows, at = self.read(f"SELECT {bucket_sql(t.key_text, plan.buckets)} AS b, {agg} "
                                 f"FROM {t.from_sql} GROUP BY b")
            got = {int(b): Checksum(int(n), int(x), at) for b, n, x in rows}
            self.throttle(sum(c.rows for c in got.values()))
            yield plan.chunks, {c.index: got.get(c.index, Checksum(0, 0, at)) for c in plan.chunks}
            return
        for chunk in plan.chunks:
            yield [chunk], {chunk.index: self.checksum(plan, chunk)}

    def checksum(self, plan: Plan, chunk: Chunk) -> Checksum:
        """One range chunk's checksum (hash-bucket tables are read whole by `checksums`)."""
        t = plan.table
        where, args = self._where(plan, chunk)
        rows, at = self.read(f"SELECT {_checksum_sql(t)} FROM {t.from_sql} WHERE {where}", args)
        n, x = rows[0]
        self.throttle(int(n))
        return Checksum(int(n), int(x), at)

    def row_hashes(self, plan: Plan, chunk: Chunk) -> tuple[dict[str, str], Position]:
        """key text -> SHA-1 (hex) of the row text, for one chunk, and the read's position."""
        t = plan.table
        where, args = self._where(plan, chunk)
        rows, at = self.read(f"SELECT {t.key_text}, SHA1({t.row_text}) FROM {t.from_sql} "
                             f"WHERE {where}", args)
        self.throttle(len(rows))
        return {_text(k): str(h) for k, h in rows}, at

    def row_values(self, plan: Plan, chunk: Chunk,
                   keys: set[str]) -> dict[str, dict[str, str | None]]:
        """key text -> {column: canonical text} of the given keys of one chunk."""
        if not keys:
            return {}
        t = plan.table
        where, args = self._where(plan, chunk)
        values = ", ".join(value_sql(c) for c in t.columns)
        marks = ", ".join(["%s"] * len(keys))
        rows, _ = self.read(f"SELECT {t.key_text}, {values} FROM {t.from_sql} WHERE {where} "
                            f"AND {t.key_text} IN ({marks})", [*args, *sorted(keys)])
        return {_text(r[0]): {c.name: None if v is None else _text(v)
                              for c, v in zip(t.columns, r[1:])} for r in rows}


def _checksum_sql(t: SourceTable) -> str:
    """A chunk's checksum: its row count and the BIT_XOR of its rows' 64-bit hashes."""
    return f"COUNT(*), COALESCE(BIT_XOR({hash64_sql(t.row_text)}), 0)"


def _text(v: Any) -> str:
    return v.decode("utf-8", "surrogateescape") if isinstance(v, (bytes, bytearray)) else str(v)
