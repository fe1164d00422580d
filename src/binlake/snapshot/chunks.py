"""`spark.read.format("binlake-snapshot")`: the initial snapshot, consistent with the binlog,
read in parallel primary-key chunks and without long locks (Flink CDC / DBLog watermarks).

Why chunks and watermarks: a single consistent read of a large table is one long transaction
on one core. Splitting the key space into chunks lets executors read in parallel; each chunk
is brought to a binlog position of its own (its HIGH watermark), and the rows carry that
position as their `seq`, so the apply step can merge them with the binlog stream exactly.

Per chunk (one Spark partition, on an executor):

1. LOW: `START TRANSACTION WITH CONSISTENT SNAPSHOT`; LOW is the snapshot's own binlog
   position (MariaDB's `binlog_snapshot_file/position`, exact by construction; on MySQL,
   which has no such status, the position is read under a brief `FLUSH TABLES WITH READ
   LOCK`, as mysqldump does, so no transaction is between its binlog write and its commit;
   that path is not tested here, no MySQL server is available).
2. SELECT the chunk's key range (plain SQL, no row locks), COMMIT.
3. HIGH: the binlog end (`SHOW MASTER STATUS`) after the SELECT. Right after a rotation
   both may be just behind the new file's header events; a stream's boundary moves over
   those events, so it reaches such a position like any other.
4. Backfill: replay the binlog [LOW, HIGH) of this table (`BinlogStream(start=LOW,
   stop_at=HIGH)`, FULL row images) onto the chunk: inserts and updates put the new image of
   keys in the chunk, deletes and updates away remove them, TRUNCATE empties it. The chunk is
   then the table's state at HIGH for its key range. DDL on the table in the range (or since
   planning), a statement-logged change of it or an image without every column stops the chunk.
5. Emit every row as op "insert" with seq (file_index(HIGH), HIGH.pos, chunk, row) plus one
   marker row (op "chunk") that carries the chunk's range and watermarks, also when it is empty.

Chunk keys: the primary key, or a UNIQUE index of NOT NULL columns (option keys). Key types
with SQL ranges that order as ORDER BY does (integers, DECIMAL, FLOAT/DOUBLE, temporals,
CHAR/VARCHAR, BINARY/VARBINARY) are split; other keys (ENUM, SET, BIT) make one chunk. The
backfill keeps a changed row only if its key is in the chunk's range when that can be decided
in Python (integers, DECIMAL, floats, temporals, binary strings); for text keys (collations)
it keeps every row the window changed, which is still that row's state at HIGH.

Tables without a usable key: policy `noKeyPolicy`, "full" (default) reads the whole table in
one consistent snapshot in one chunk; LOW = HIGH = its exact binlog position, no backfill
(there is no key to reconcile by). "error" refuses.

Contract with the stream and the apply step (the exactness argument):

* Every snapshot row is the state of its key at its chunk's HIGH; every key that exists at
  HIGH and lies in the chunk's range has a row. A snapshot row's seq sorts after every binlog
  change before HIGH and before every change after it: HIGH is a transaction boundary, so no
  change has pos == HIGH.pos (`inner`/`row` only make the seq unique inside the table).
* Stream the binlog from `SnapshotWatermarks.stream_start` = min(HIGH) (every change before
  it is inside every chunk already).
* Apply snapshot rows and stream changes to an empty target with "per key, the change with
  the highest seq wins; a delete leaves a tombstone at its seq" (apply.py does exactly this:
  the `_seq` guard plus tombstones). The result equals the source once the stream has passed
  `stream_until` = max(HIGH), in any batch order. FULL row images are required.
* Between stream_start and stream_until the target may briefly show a state older than a
  chunk's HIGH (an insert and delete both before HIGH, in different batches). The DBLog
  filter removes that: drop a key change whose seq is not above its chunk's HIGH
  (`SnapshotWatermarks.covered`). It is an optimisation of transient states, not needed for
  the final result; it needs the key order in Python, so it only decides for key types with
  the same order in Python as on the server (integers, DECIMAL, temporals, binary strings).
* Keyless tables have no per-key rule: apply them as a multiset with the table-level filter
  (drop a change whose seq is not above the table's HIGH), which is required there.
  apply.py refuses keyless tables (change log only).
* Chunk rows are produced once: the output must be materialised once (written, or
  `localCheckpoint`) and the watermarks taken from that same data (`read_snapshot`). A second
  action on the lazy DataFrame reads the tables again, with new watermarks.

Options:
  url            mysql://user:password@host:port (required; the user needs SELECT and
                 REPLICATION SLAVE; on MySQL also RELOAD for the brief lock).
  tables         `db.t1,db.t2` or fnmatch patterns `db.*` (required).
  chunks         chunks per keyed table (exact when the table has at least that many rows).
  chunkSize      rows per chunk when `chunks` is not given (default 50000).
  keys           JSON {"db.t": ["col", ...]}: the chunk key (the primary key, or the columns
                 of a UNIQUE index whose columns are all NOT NULL).
  noKeyPolicy    "full" (default) or "error" for tables without a key.
  serverIdBase   replication server_id of the first chunk's backfill (default 6450000); chunk
                 g uses serverIdBase + g (concurrent replicas need distinct ids).
  batchSize      rows per Arrow batch (default 10000).
"""
from __future__ import annotations

import base64
import datetime as dt
import fnmatch
import json
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..changes import ChangeRecord, float32_text, json_value
from ..errors import BinlakeError
from ..recent import make_room
from ..replica.position import Position
from ..replica.url import ServerURL
from ..values import ABSENT, Geometry
# The binlog path's own JSON encoders, so both paths write the same bytes for the same value.
from ..cdcjson import dumps, json_string, json_text
from .arrow import CDC_DDL, CDC_SCHEMA, SEQ_TYPE, file_index, image_encoder
from .typing import (
    BINARY_TYPES, GEOMETRY_TYPES, INTEGER_TYPES, TEXT_TYPES, ColumnSpec, TableSpec,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

NAME = "binlake-snapshot"
ROW_OP = "insert"
"""Snapshot rows are inserts: the apply step upserts them (full row, guarded by seq)."""
CHUNK_OP = "chunk"
"""One marker row per chunk: range (before/after = lo/hi key), watermarks (query, JSON)."""
NO_KEY_POLICIES = ("full", "error")
DEFAULT_SERVER_ID_BASE = 6450000
DEFAULT_CHUNK_SIZE = 50000

_CHUNKABLE = frozenset({*INTEGER_TYPES, "year", "decimal", "float", "double", "date",
                        "datetime", "timestamp", "time", "char", "varchar", "binary",
                        "varbinary"})
"""Key types whose SQL range predicates order exactly as ORDER BY does (ENUM/SET/BIT do not)."""
_UNSUPPORTED = frozenset({"uuid", "inet4", "inet6", "vector"})
"""Types whose SELECT text is not what the binlog carries (MariaDB stores them transformed)."""


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


def _rows(cur: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    cur.execute(sql, args)
    return [tuple(r) for r in cur.fetchall()]


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _flavor(cur: Any) -> str:
    version = str(_rows(cur, "SELECT @@version")[0][0])
    return "mariadb" if "mariadb" in version.lower() else "mysql"


def _binlog_end(cur: Any) -> tuple[str, int]:
    from ..schema.bootstrap import binlog_position

    p = binlog_position(cur)
    assert p.file is not None
    return (p.file, p.pos)


def _gtid_at(cur: Any, flavor: str, at: tuple[str, int]) -> str | None:
    """MariaDB's GTID position of a binlog boundary (computed from the binlog itself)."""
    if flavor != "mariadb":
        return None
    value = _rows(cur, "SELECT BINLOG_GTID_POS(%s, %s)", at)[0][0]
    return None if value is None else str(value)


def _begin_snapshot(cur: Any, flavor: str) -> tuple[str, int]:
    """Open a consistent-snapshot transaction; its exact binlog position (the LOW watermark)."""
    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    if flavor == "mariadb":
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = dict(_rows(cur, "SHOW STATUS LIKE 'binlog_snapshot_%'"))
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
        return _binlog_end(cur)
    finally:
        cur.execute("UNLOCK TABLES")


# -- table shapes ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SnapshotTable:
    """A table as the snapshot reads it: its shape, its chunk key and how it is split."""

    schema: str
    table: str
    spec: TableSpec
    key: tuple[str, ...]
    """Chunk key columns (empty: no key, whole-table read)."""
    chunkable: bool
    """Key ranges can be expressed in SQL (otherwise one chunk covers the whole table)."""
    signature: tuple[tuple[Any, ...], ...] = ()
    """(name, type, charset) of every column at planning: each chunk checks it is unchanged."""
    mariadb: bool = False
    """MariaDB keeps JSON as the text written; MySQL's binlog carries a parsed document."""
    model: Any = field(default=None, compare=False, repr=False)
    """The table's `TableDef` at planning (information_schema, as the schema history reads
    it): fills what a TABLE_MAP without FULL metadata lacks during the backfill."""
    collations: Any = field(default=None, compare=False, repr=False)

    @property
    def kinds(self) -> tuple[str | None, ...]:
        return tuple(_order_kind(self.spec.column(k)) for k in self.key)

    @property
    def ordered(self) -> bool:
        """Key order can be decided in Python (backfill range filter, `covered`)."""
        return bool(self.key) and all(k is not None for k in self.kinds)

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"


def describe_table(cur: Any, schema: str, table: str, key: Sequence[str] | None = None,
                   no_key: str = "full") -> SnapshotTable:
    """Shape and chunk key of one table, checked for everything an exact snapshot needs."""
    from ..schema.bootstrap import read_catalog

    cat = read_catalog(cur, only=[(schema, table)], tables=lambda s, t: True)
    td = cat.tables.get(cat.key(schema, table))
    if td is None:
        raise SnapshotError(f"table {schema}.{table} does not exist (or is not a base table)")
    if td.system_versioned or td.kind != "table":
        raise SnapshotError(f"{schema}.{table} is a system-versioned table or a sequence: "
                            "not supported by the snapshot")
    bad = [f"{c.name} ({c.type})" for c in td.columns if c.type in _UNSUPPORTED]
    if bad:
        raise SnapshotError(f"{schema}.{table}: column types the snapshot cannot read exactly: "
                            f"{', '.join(bad)}")
    engine = _rows(cur, "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                        "AND TABLE_NAME = %s", (schema, table))
    if not engine or str(engine[0][0]).lower() != "innodb":
        raise SnapshotError(f"{schema}.{table} uses engine {engine[0][0] if engine else '?'}; "
                            "a consistent snapshot needs InnoDB")
    spec = TableSpec.from_table_def(td)
    if key:
        chosen = tuple(key)
        by_name = {c.name.lower(): c for c in td.columns}
        missing = [k for k in chosen if k.lower() not in by_name]
        if missing:
            raise SnapshotError(f"{schema}.{table}: key columns {missing} do not exist")
        chosen = tuple(by_name[k.lower()].name for k in chosen)
        unique = [ix for ix in td.indexes if ix.is_unique and all(p is None for p in ix.prefixes)
                  and set(c.lower() for c in ix.columns if c) == {k.lower() for k in chosen}
                  and len(ix.columns) == len(chosen)]
        if not unique:
            raise SnapshotError(f"{schema}.{table}: {list(chosen)} is not the primary key nor a "
                                "UNIQUE index (without prefixes) of the table",
                                hint="a chunk key must identify rows")
        nullable = [k for k in chosen if by_name[k.lower()].nullable]
        if nullable:
            raise SnapshotError(f"{schema}.{table}: key columns {nullable} allow NULL",
                                hint="a chunk key must be NOT NULL")
    else:
        primary = [ix for ix in td.indexes if ix.kind == "primary"]
        if primary and all(p is None for p in primary[0].prefixes):
            chosen = tuple(c for c in primary[0].columns if c)
        else:
            chosen = ()
    if not chosen:
        if no_key not in NO_KEY_POLICIES:
            raise SnapshotError(f"noKeyPolicy must be one of {NO_KEY_POLICIES}, not {no_key!r}")
        if no_key == "error":
            raise SnapshotError(f"{schema}.{table} has no primary key",
                                hint='choose a unique NOT NULL key (option "keys") or allow the '
                                     'whole-table read (noKeyPolicy "full")')
        return SnapshotTable(td.schema, td.name, spec, (), False,
                             column_signature(cur, schema, table), _flavor(cur) == "mariadb",
                             td, cat.collations)
    types = [spec.column(k).type for k in chosen]
    return SnapshotTable(td.schema, td.name, spec, chosen, all(t in _CHUNKABLE for t in types),
                         column_signature(cur, schema, table), _flavor(cur) == "mariadb",
                         td, cat.collations)


def column_signature(cur: Any, schema: str, table: str) -> tuple[tuple[Any, ...], ...]:
    """What formatting relies on: column names, full types and charsets, in order."""
    return tuple(tuple(r) for r in _rows(
        cur, "SELECT COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME FROM information_schema.COLUMNS "
             "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
        (schema, table)))


def _order_kind(col: ColumnSpec) -> str | None:
    """How a key column's JSON value orders like the server orders the column (None: it does
    not in Python, e.g. text under a collation)."""
    t = col.type
    if t in INTEGER_TYPES or t in ("year", "double", "float"):
        return "number"
    if t == "decimal":
        return "decimal"
    if t in ("date", "datetime", "timestamp"):
        return "text"  # fixed-width ISO text per column (zero dates first, as on the server)
    if t in ("binary", "varbinary"):
        return "binary"
    return None


_ORDER: dict[str, Callable[[Any], Any]] = {
    "number": lambda v: v, "decimal": Decimal, "text": str, "binary": base64.b64decode,
}


# -- values: SELECT text -> the JSON the binlog path produces -----------------------------------

def _select_expr(col: ColumnSpec) -> str:
    if col.type == "float":
        # FLOAT prints with 6 digits; its exact value as DOUBLE round-trips.
        return f"CAST({_q(col.name)} AS DOUBLE) AS {_q(col.name)}"
    return _q(col.name)


def _temporal(utc: bool) -> Callable[[str], str]:
    zone = "Z" if utc else ""

    def text(s: str) -> str:
        try:  # what the decoder can hold becomes ISO; zero dates keep MySQL's text
            dt.date(int(s[0:4]), int(s[5:7]), int(s[8:10]))
        except ValueError:
            return json_string(s)
        return json_string(s.replace(" ", "T", 1) + zone)
    return text


def _fragment_fn(col: ColumnSpec, mariadb: bool = False) -> Callable[[Any], str]:
    """Raw SELECT value (not NULL) -> the JSON text arrow.image_encoder writes for the same
    value decoded from the binlog (see there: the two must agree byte for byte)."""
    t = col.type
    if t in INTEGER_TYPES or t == "year":
        return lambda s: str(int(s))
    if t == "bit":
        return lambda b: str(int.from_bytes(b, "big"))
    if t == "float":
        return lambda s: repr(float32_text(float(s)))
    if t == "double":
        return lambda s: repr(float(s))
    if t == "decimal":
        return lambda s: '"' + format(Decimal(s), "f") + '"'
    if t == "date":
        return lambda s: json_string(s)
    if t in ("datetime", "timestamp"):
        return _temporal(t == "timestamp")
    if t == "time":
        return json_string
    if t == "json":
        if mariadb:
            return json_string  # stored text, exactly as the binlog carries it
        return lambda s: json_string(json_text(json.loads(s)))
    if t in BINARY_TYPES:
        return lambda b: '"' + base64.b64encode(b).decode("ascii") + '"'
    if t in GEOMETRY_TYPES:
        return lambda b: dumps(json_value(Geometry.from_storage(b)))
    if t in TEXT_TYPES:
        return json_string
    raise SnapshotError(f"column {col.name}: type {t} is not supported by the snapshot")


def _literal_fn(col: ColumnSpec) -> Callable[[Any], Any]:
    """Raw SELECT value of a key column -> a SQL parameter compared with the column's own type
    (an int stays an int: a quoted number would be compared as a double)."""
    t = col.type
    if t in INTEGER_TYPES or t == "year":
        return int
    if t == "decimal":
        return Decimal
    if t in ("float", "double"):
        return float
    return lambda v: v  # text (temporal, char: the column's collation), bytes (_binary)


class RowFormatter:
    """SELECT rows of one table -> (key, after-image JSON), cheap per row."""

    def __init__(self, t: SnapshotTable) -> None:
        self.table = t
        cols = t.spec.columns
        self.names = [c.name for c in cols]
        self.select_list = ", ".join(_select_expr(c) for c in cols)
        self._prefix = [json_string(c.name) + ":" for c in cols]
        self._fns = [_fragment_fn(c, t.mariadb) for c in cols]
        self._key_idx = [self.names.index(k) for k in t.key]

    def image(self, raw: Sequence[Any]) -> tuple[tuple[Any, ...], str]:
        frags = [p + ("null" if v is None else f(v))
                 for p, f, v in zip(self._prefix, self._fns, raw)]
        text = "{" + ",".join(frags) + "}"
        key = tuple(json.loads(frags[i][len(self._prefix[i]):]) for i in self._key_idx)
        return key, text


# -- planning (driver) ----------------------------------------------------------------------

@dataclass(frozen=True)
class Chunk:
    """One key range of one table: what a Spark partition reads (plain data, pickled)."""

    table: SnapshotTable
    index: int
    """Chunk number inside its table (0..count-1)."""
    count: int
    ordinal: int
    """Chunk number across the whole snapshot (server_id offset)."""
    lo: tuple[Any, ...] | None
    """Inclusive lower bound (raw SELECT values of the key), None = unbounded."""
    hi: tuple[Any, ...] | None
    """Exclusive upper bound, None = unbounded."""

    @property
    def mode(self) -> str:
        return "pk" if self.table.key else "full"


def _ge(cols: Sequence[str], strict_last: bool, op_first: str) -> str:
    """Row comparison (a,b,c) OP (x,y,z) spelled out so that indexes serve it."""
    q = [_q(c) for c in cols]
    last_op = op_first if strict_last else op_first + "="
    expr = f"{q[-1]} {last_op} %s"
    for c in reversed(q[:-1]):
        expr = f"({c} {op_first} %s OR ({c} = %s AND {expr}))"
    return expr


def range_predicate(key: Sequence[str], lo: Sequence[Any] | None,
                    hi: Sequence[Any] | None) -> tuple[str, list[Any]]:
    """SQL WHERE for lo <= key < hi (lexicographic over the key columns) and its parameters."""
    parts, args = [], []
    for bound, op, strict in ((lo, ">", False), (hi, "<", True)):
        if bound is None:
            continue
        parts.append(_ge(key, strict, op))
        vals = list(bound)
        # parameters in textual order: for each outer column (v, v), then the last one
        for v in vals[:-1]:
            args += [v, v]
        args.append(vals[-1])
    if not parts:
        return "1=1", []
    return " AND ".join(parts), args


def _parse_tables(cur: Any, spec: str) -> list[tuple[str, str]]:
    patterns = [p.strip() for p in spec.split(",") if p.strip()]
    if not patterns:
        raise SnapshotError('option "tables" names no table')
    out: list[tuple[str, str]] = []
    rows = _rows(cur, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
                      "TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ('mysql', "
                      "'information_schema', 'performance_schema', 'sys')")
    names = [(str(s), str(t)) for s, t in rows]
    for p in patterns:
        if "." not in p:
            raise SnapshotError(f"table {p!r}: write it as db.table")
        hit = sorted(n for n in names if fnmatch.fnmatchcase(f"{n[0]}.{n[1]}", p))
        if not hit:
            raise SnapshotError(f"no table matches {p!r}")
        out.extend(h for h in hit if h not in out)
    return out


def check_server(cur: Any) -> str:
    """The binlog settings an exact snapshot relies on; returns the flavor.

    binlog_row_metadata may be MINIMAL: the backfill takes names, signedness and charsets from
    the table's model read at planning (its shape cannot change in the window: DDL on it stops
    the chunk), after checking every TABLE_MAP's column types against it.
    """
    flavor = _flavor(cur)
    names = ["log_bin", "binlog_format", "binlog_row_image"]
    values = dict(zip(names, _rows(cur, "SELECT @@global.log_bin, @@global.binlog_format, "
                                        "@@global.binlog_row_image")[0]))
    want = {"log_bin": "1", "binlog_format": "ROW", "binlog_row_image": "FULL"}
    wrong = [f"{k}={values[k]} (needs {v})" for k, v in want.items()
             if str(values[k]).upper() != v]
    if wrong:
        raise SnapshotError("the server's binlog settings do not allow an exact snapshot: "
                            + "; ".join(wrong),
                            hint="row images must be complete (binlog_format=ROW, "
                                 "binlog_row_image=FULL)")
    return flavor


def plan_snapshot(url: ServerURL | str, tables: str, *, chunks: int | None = None,
                  chunk_size: int = DEFAULT_CHUNK_SIZE,
                  keys: Mapping[str, Sequence[str]] | None = None,
                  no_key: str = "full") -> list[Chunk]:
    """Split every selected table into key chunks (driver side, no locks).

    Boundaries are real keys found by walking the key index (`ORDER BY key LIMIT 1 OFFSET
    step`), so skew and gaps do not make empty chunks; the first chunk is unbounded below and
    the last unbounded above, so keys inserted later outside the seen range are covered.
    """
    if isinstance(url, str):
        url = ServerURL.parse(url)
    if chunks is not None and chunks < 1:
        raise SnapshotError(f"chunks must be at least 1, not {chunks}")
    if chunk_size < 1:
        raise SnapshotError(f"chunkSize must be at least 1, not {chunk_size}")
    keys = dict(keys or {})
    conn = connect(url)
    try:
        with conn.cursor() as cur:
            check_server(cur)
            selected = _parse_tables(cur, tables)
            unknown = set(keys) - {f"{s}.{t}" for s, t in selected}
            if unknown:
                raise SnapshotError(f"option keys names tables outside the snapshot: "
                                    f"{sorted(unknown)}")
            out: list[Chunk] = []
            for schema, table in selected:
                t = describe_table(cur, schema, table, keys.get(f"{schema}.{table}"), no_key)
                bounds = _boundaries(cur, t, chunks, chunk_size) if t.chunkable else []
                edges: list[tuple[Any, ...] | None] = [None, *bounds, None]
                n = len(edges) - 1
                for i in range(n):
                    out.append(Chunk(t, i, n, len(out), edges[i], edges[i + 1]))
            return out
    finally:
        conn.close()


def _boundaries(cur: Any, t: SnapshotTable, chunks: int | None,
                chunk_size: int) -> list[tuple[Any, ...]]:
    table = f"{_q(t.schema)}.{_q(t.table)}"
    count = int(_rows(cur, f"SELECT COUNT(*) FROM {table}")[0][0])
    n = chunks if chunks is not None else max(1, math.ceil(count / chunk_size))
    n = max(1, min(n, count))
    if n == 1:
        return []
    step = math.ceil(count / n)
    cols = [t.spec.column(k) for k in t.key]
    select = ", ".join(_select_expr(c) for c in cols)
    order = ", ".join(_q(k) for k in t.key)
    lits = [_literal_fn(c) for c in cols]
    bounds: list[tuple[Any, ...]] = []
    while len(bounds) < n - 1:
        where, args = range_predicate(t.key, bounds[-1] if bounds else None, None)
        row = _rows(cur, f"SELECT {select} FROM {table} WHERE {where} ORDER BY {order} "
                         f"LIMIT 1 OFFSET {step}", args)
        if not row:
            break  # rows were deleted since COUNT(*): fewer, still complete chunks
        bounds.append(tuple(f(v) for f, v in zip(lits, row[0])))
    return bounds


# -- one chunk (executor) ---------------------------------------------------------------------

@dataclass
class ChunkResult:
    """What one chunk read: its rows (key -> after image) and its watermarks."""

    chunk: Chunk
    low: tuple[str, int]
    high: tuple[str, int]
    high_gtid: str | None
    ts: int
    rows: dict[tuple[Any, ...], str] = field(default_factory=dict)
    full_rows: list[str] = field(default_factory=list)
    """Rows of a keyless table (duplicates allowed)."""
    backfilled: int = 0
    """Binlog row changes of the table replayed between LOW and HIGH."""


class _ShapeGuard:
    """Backfill resolver: the TABLE_MAP must have the planned columns; JSON columns are marked
    (MariaDB's JSON is LONGTEXT); DDL touching the table stops the chunk."""

    def __init__(self, t: SnapshotTable) -> None:
        self.t = t
        self._names = t.spec.names
        self._json = {i for i, c in enumerate(t.spec.columns) if c.type == "json"}
        self._seen: dict[int, tuple[Any, Any]] = {}
        """id(columns of a parsed TABLE_MAP) -> (those columns, the map made from the first
        one, or None if it was handed on as it was). The decoder hands out the same bytes'
        map as copies sharing one parse: a repeat is checked once, and shares the first
        map's columns and compiled decoders (each transaction compiled them again)."""

    def _mine(self, schema: str, table: str) -> bool:
        return (schema.lower(), table.lower()) == (self.t.schema.lower(), self.t.table.lower())

    def resolve(self, tm: Any) -> Any:
        if not self._mine(tm.schema, tm.table):
            return tm
        parse = tm.columns
        hit = self._seen.get(id(parse))
        if hit is not None and hit[0] is parse:
            first = hit[1]
            return tm if first is None else tm.with_columns(first.columns, first.primary_key,
                                                            first.row_decoders)
        orig = tm
        if self.t.model is not None and any(c.name is None for c in tm.columns):
            # binlog_row_metadata=MINIMAL: names, signedness and charsets from the model,
            # once the TABLE_MAP's column types are those of the model.
            from ..schema.tracker import binlog_describe, compare, fill

            problems = compare(self.t.model, tm, self.t.collations)
            if problems:
                raise SnapshotError(f"{self.t.name} at {tm.file}:{tm.offset}: the binlog's "
                                    f"columns {binlog_describe(tm)} are not the planned ones: "
                                    f"{'; '.join(problems)}",
                                    hint="the table changed shape during the snapshot; run it "
                                         "again")
            tm = fill(tm, self.t.model, self.t.collations)
        if tm.column_names != self._names:
            raise SnapshotError(f"{self.t.name} at {tm.file}:{tm.offset}: the binlog has columns "
                                f"{tm.column_names}, the snapshot read {self._names}",
                                hint="the table changed shape during the snapshot; run it again")
        out = tm
        if self._json:
            from dataclasses import replace

            out = tm.with_columns([replace(c, is_json=True) if i in self._json else c
                                   for i, c in enumerate(tm.columns)], tm.primary_key)
        make_room(self._seen)
        self._seen[id(parse)] = (parse, None if out is orig else out)
        return out

    def on_query(self, ev: Any) -> None:
        if not ev.error_code and _ddl_touches(ev.query, ev.schema, self.t):
            raise SnapshotError(f"{self.t.name}: DDL at {ev.file}:{ev.offset} during the "
                                f"snapshot of a chunk: {ev.query[:200]!r}",
                                hint="run the snapshot again after the schema change")
        return None


def _ddl_touches(text: str, default_schema: str, t: SnapshotTable) -> bool:
    """Whether a logged statement may change the table's shape (TRUNCATE is a row change)."""
    from ..schema import ddl

    mine = (t.schema.lower(), t.table.lower())

    def hit(ref: Any) -> bool:
        return ((ref.schema or default_schema or "").lower(), ref.name.lower()) == mine

    try:
        stmts = ddl.parse(text)
    except ddl.DdlParseError:
        refs = ddl.guess_tables(text)
        return not refs or any(hit(r) for r in refs)
    for st in stmts:
        if isinstance(st, (ddl.Ignored, ddl.TruncateTable)):
            continue
        if isinstance(st, ddl.DatabaseStmt):
            if st.action == "drop" and (st.name or "").lower() == mine[0]:
                return True
            continue
        refs = list(ddl.iter_statement_tables(st, default_schema))
        if not refs or any(hit(r) for r in refs):
            return True
    return False


def read_chunk(url: ServerURL | str, chunk: Chunk, *, server_id: int,
               after_select: Callable[[], None] | None = None) -> ChunkResult:
    """LOW, SELECT, HIGH, backfill: the chunk's rows as of HIGH (see the module notes).

    `after_select` runs between the SELECT and HIGH (tests use it to write into the window).
    """
    if isinstance(url, str):
        url = ServerURL.parse(url)
    t = chunk.table
    fmt = RowFormatter(t)
    conn = connect(url)
    try:
        with conn.cursor() as cur:
            flavor = _flavor(cur)
            low = _begin_snapshot(cur, flavor)
            try:
                where, args = range_predicate(t.key, chunk.lo, chunk.hi) if t.key else ("1=1", [])
                cur.execute(f"SELECT {fmt.select_list} FROM {_q(t.schema)}.{_q(t.table)} "
                            f"WHERE {where}", args)
                got = [d[0] for d in cur.description]
                if got != fmt.names:
                    raise SnapshotError(f"{t.name}: the table now has columns {got}, the plan "
                                        f"had {fmt.names}", hint="run the snapshot again")
                raw = cur.fetchall()
            finally:
                cur.execute("COMMIT")
            # A DDL between planning and LOW changes what the rows mean: compare the shape
            # now (one after LOW is in the binlog range and stops the backfill).
            now = column_signature(cur, t.schema, t.table)
            if now != t.signature:
                raise SnapshotError(f"{t.name}: the table's columns changed since the snapshot "
                                    f"was planned: {list(now)} (planned {list(t.signature)})",
                                    hint="run the snapshot again")
            if after_select is not None:
                after_select()
            if t.key:
                high = _binlog_end(cur)
            else:
                high = low  # the read is exactly at LOW: nothing to reconcile by
            gtid = _gtid_at(cur, flavor, high)
            ts = int(_rows(cur, "SELECT UNIX_TIMESTAMP()")[0][0])
    finally:
        conn.close()
    res = ChunkResult(chunk, low, high, gtid, ts)
    if not t.key:
        res.full_rows = [fmt.image(r)[1] for r in raw]
        return res
    for r in raw:
        k, text = fmt.image(r)
        res.rows[k] = text
    if _pos_key(low) < _pos_key(high):
        _backfill(url, res, server_id)
    elif _pos_key(low) > _pos_key(high):
        raise SnapshotError(f"{t.name}: HIGH {high} is before LOW {low}")
    return res


def _pos_key(p: tuple[str, int]) -> tuple[int, int]:
    return (file_index(p[0]), p[1])


def _backfill(url: ServerURL, res: ChunkResult, server_id: int) -> None:
    """Replay the table's changes in [LOW, HIGH) onto the chunk's rows."""
    from ..replica.stream import BinlogStream, StreamOptions

    t, chunk = res.chunk.table, res.chunk
    schema, table = t.schema.lower(), t.table.lower()
    order = [_ORDER[k] for k in t.kinds] if t.ordered else []
    lo = _ordered(order, _bound_json(t, chunk.lo)) if t.ordered and chunk.lo else None
    hi = _ordered(order, _bound_json(t, chunk.hi)) if t.ordered and chunk.hi else None

    def inside(key: tuple[Any, ...]) -> bool:
        if not t.ordered:
            return True  # conservative: a row outside the range is still its state at HIGH
        k = _ordered(order, key)
        return (lo is None or k >= lo) and (hi is None or k < hi)

    opts = StreamOptions(server_id=server_id, start=Position(res.low[0], res.low[1]),
                         stop_at=res.high, until_end=True, reconnect=False,
                         tables=lambda s, n: (s.lower(), n.lower()) == (schema, table),
                         table_resolver=_ShapeGuard(t))
    stream = BinlogStream(url, opts)
    rows = res.rows
    for rec in stream.changes():
        if rec.op == "truncate":
            rows.clear()
            continue
        if rec.op not in ("insert", "update", "delete"):
            raise SnapshotError(f"{t.name}: a {rec.op!r} record at {rec.file}:{rec.pos} during "
                                "the snapshot of a chunk; its rows are not in the binlog",
                                hint="use binlog_format=ROW for every writer")
        res.backfilled += 1
        enc = image_encoder(rec.table_map)
        if rec.before is not None:
            k, _ = _image_key(rec, rec.before, enc, t)
            rows.pop(k, None)
        if rec.after is not None:
            k, text = _image_key(rec, rec.after, enc, t)
            if inside(k):
                rows[k] = text
    end = stream.position
    if end.file is None or _pos_key((end.file, end.pos)) != _pos_key(res.high) or end.rows_done:
        raise SnapshotError(f"{t.name}: the backfill stopped at {end}, not at HIGH "
                            f"{res.high[0]}:{res.high[1]}")


def _image_key(rec: ChangeRecord, image: dict[str, Any], enc: Callable[[dict[str, Any]], str],
               t: SnapshotTable) -> tuple[tuple[Any, ...], str]:
    if any(v is ABSENT for v in image.values()):
        raise SnapshotError(f"{t.name} at {rec.file}:{rec.pos}: a row image without every column",
                            hint="binlog_row_image must be FULL for every writer session")
    text = enc(image)
    parsed = json.loads(text)
    return tuple(parsed[k] for k in t.key), text


def _bound_json(t: SnapshotTable, bound: Sequence[Any]) -> tuple[Any, ...]:
    """A bound's raw values as the JSON values a key image carries."""
    cols = [t.spec.column(k) for k in t.key]
    return tuple(json.loads(_fragment_fn(c)(_raw_back(c, v))) for c, v in zip(cols, bound))


def _raw_back(col: ColumnSpec, v: Any) -> Any:
    """A bound parameter back to SELECT text (ints/decimals/floats were parsed from it)."""
    if isinstance(v, (bytes, str)):
        return v
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _ordered(order: Sequence[Callable[[Any], Any]], key: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(f(v) for f, v in zip(order, key))


# -- CDC rows -----------------------------------------------------------------------------------

def chunk_batches(res: ChunkResult, batch_size: int = 10000) -> Iterator[pa.RecordBatch]:
    """The chunk as CDC batches: its marker row first, then its rows as inserts at HIGH."""
    t, c = res.chunk.table, res.chunk
    hfile, hpos = res.high
    fidx = file_index(hfile)
    marker = {
        "chunk": c.index, "chunks": c.count, "mode": c.mode, "key": list(t.key),
        "kinds": list(t.kinds),
        "low": {"file": res.low[0], "pos": res.low[1]},
        "high": {"file": hfile, "pos": hpos, "gtid": res.high_gtid},
        "rows": len(res.rows) + len(res.full_rows), "backfilled": res.backfilled,
    }
    lo = _key_image(t, c.lo) if c.lo is not None else None
    hi = _key_image(t, c.hi) if c.hi is not None else None
    yield _batch(t, fidx, hfile, hpos, res.ts, c.index, [CHUNK_OP], [-1], [lo], [hi],
                 [json.dumps(marker, separators=(",", ":"))])
    images = res.full_rows or list(res.rows.values())
    for start in range(0, len(images), batch_size):
        part = images[start:start + batch_size]
        yield _batch(t, fidx, hfile, hpos, res.ts, c.index, [ROW_OP] * len(part),
                     list(range(start, start + len(part))), [None] * len(part), part,
                     [None] * len(part))


def _key_image(t: SnapshotTable, bound: Sequence[Any]) -> str:
    vals = _bound_json(t, bound)
    return "{" + ",".join(json_string(k) + ":" + dumps(v) for k, v in zip(t.key, vals)) + "}"


def _batch(t: SnapshotTable, fidx: int, file: str, pos: int, ts: int, chunk: int,
           ops: list[str], rows: list[int], before: list[str | None], after: list[str | None],
           query: list[str | None]) -> pa.RecordBatch:
    n = len(ops)
    i32, i64, s = pa.int32(), pa.int64(), pa.string()
    pos_a, row_a = pa.array([pos] * n, i64), pa.array(rows, i32)
    inner_a = pa.array([chunk] * n, i32)
    seq = pa.StructArray.from_arrays([pa.array([fidx] * n, i32), pos_a, inner_a, row_a],
                                     fields=list(SEQ_TYPE))
    cols = [pa.array(ops, s), pa.array([t.schema] * n, s), pa.array([t.table] * n, s),
            pa.array([file] * n, s), pos_a, pa.array([pos] * n, i64), row_a, inner_a,
            pa.nulls(n, s), pa.array([ts * 1_000_000] * n, pa.timestamp("us", tz="UTC")), seq,
            pa.array(before, s), pa.array(after, s), pa.array(query, s), pa.nulls(n, s)]
    return pa.RecordBatch.from_arrays(cols, schema=CDC_SCHEMA)


# -- watermarks (driver) ------------------------------------------------------------------------

@dataclass(frozen=True)
class ChunkWatermark:
    """One chunk's range and watermarks, as its marker row carried them."""

    schema: str
    table: str
    index: int
    count: int
    mode: str
    key: tuple[str, ...]
    kinds: tuple[str | None, ...]
    """Per key column how its JSON value orders (see `_ORDER`); None: not decidable here."""
    lo: dict[str, Any] | None
    """Inclusive lower bound (key image), None = unbounded."""
    hi: dict[str, Any] | None
    """Exclusive upper bound, None = unbounded."""
    low: tuple[str, int]
    high: tuple[str, int]
    high_gtid: str | None
    rows: int
    backfilled: int

    @property
    def ordered(self) -> bool:
        return all(k is not None for k in self.kinds)

    @property
    def high_key(self) -> tuple[int, int]:
        """(file_index, pos) of HIGH: compare with a change's seq (file_index, pos)."""
        return _pos_key(self.high)


@dataclass(frozen=True)
class SnapshotWatermarks:
    """Where the stream starts after the snapshot, and which changes the snapshot holds."""

    chunks: tuple[ChunkWatermark, ...]
    stream_start: Position
    """min(HIGH): stream from here (every change before it is in every chunk)."""
    stream_until: tuple[str, int]
    """max(HIGH): after it no change is held by the snapshot (`covered` is always False)."""

    def chunks_of(self, schema: str, table: str) -> list[ChunkWatermark]:
        return [c for c in self.chunks if (c.schema, c.table) == (schema, table)]

    def chunk_for(self, schema: str, table: str,
                  key: Mapping[str, Any] | None) -> ChunkWatermark | None:
        """The chunk whose range holds `key` (JSON values, as in a CDC image); None when the
        table is not in the snapshot or its key order cannot be decided in Python."""
        mine = self.chunks_of(schema, table)
        if not mine:
            return None
        if mine[0].mode == "full" or len(mine) == 1:
            return mine[0]
        if not mine[0].ordered or key is None:
            return None
        return next((c for c in mine if _in_range(c, key)), None)

    def covered(self, schema: str, table: str, key: Mapping[str, Any] | None,
                seq: Sequence[int]) -> bool:
        """True when the snapshot already holds this key change: the change (seq =
        (file_index, pos, ...)) is at or before the HIGH of the key's chunk. False when in
        doubt (applying a covered change again is harmless for the final result)."""
        c = self.chunk_for(schema, table, key)
        return c is not None and (seq[0], seq[1]) < c.high_key


def _in_range(c: ChunkWatermark, key: Mapping[str, Any]) -> bool:
    """lo <= key < hi in the server's order (only for `ordered` keys; values as JSON)."""
    k = _json_order(c.kinds, c.key, key)
    if c.lo is not None and k < _json_order(c.kinds, c.key, c.lo):
        return False
    return c.hi is None or k < _json_order(c.kinds, c.key, c.hi)


def _json_order(kinds: Sequence[str | None], names: Sequence[str],
                vals: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(_ORDER[kind](vals[n]) for kind, n in zip(kinds, names))  # type: ignore[index]


def watermarks_from_rows(rows: Iterable[Mapping[str, Any]]) -> SnapshotWatermarks:
    """Marker rows (op "chunk": schema, table, before, after, query) -> the watermarks.

    Fails when a table's chunks are not all there exactly once: a missing chunk would be a
    silent gap in the target.
    """
    found: dict[tuple[str, str, int], ChunkWatermark] = {}
    for r in rows:
        if r["op"] != CHUNK_OP:
            continue
        m = json.loads(r["query"])
        w = ChunkWatermark(
            r["schema"], r["table"], int(m["chunk"]), int(m["chunks"]), str(m["mode"]),
            tuple(m["key"]), tuple(m["kinds"]),
            None if r["before"] is None else json.loads(r["before"]),
            None if r["after"] is None else json.loads(r["after"]),
            (m["low"]["file"], int(m["low"]["pos"])), (m["high"]["file"], int(m["high"]["pos"])),
            m["high"].get("gtid"), int(m["rows"]), int(m["backfilled"]))
        ident = (w.schema, w.table, w.index)
        if ident in found:
            raise SnapshotError(f"chunk {w.index} of {w.schema}.{w.table} appears twice",
                                hint="take the watermarks from the materialised snapshot output")
        found[ident] = w
    if not found:
        raise SnapshotError("no chunk markers: is this the output of the binlake-snapshot source?")
    by_table: dict[tuple[str, str], list[ChunkWatermark]] = {}
    for w in found.values():
        by_table.setdefault((w.schema, w.table), []).append(w)
    for (schema, table), ws in by_table.items():
        counts = {w.count for w in ws}
        if len(counts) != 1 or sorted(w.index for w in ws) != list(range(ws[0].count)):
            raise SnapshotError(f"{schema}.{table}: chunks {sorted(w.index for w in ws)} of "
                                f"{sorted(counts)} present; the snapshot is incomplete")
    chunks = tuple(sorted(found.values(), key=lambda w: (w.schema, w.table, w.index)))
    first = min(chunks, key=lambda w: w.high_key)
    last = max(chunks, key=lambda w: w.high_key)
    start = Position(first.high[0], first.high[1], gtid_state=first.high_gtid)
    return SnapshotWatermarks(chunks, start, last.high)


def snapshot_watermarks(df: "DataFrame") -> SnapshotWatermarks:
    """The watermarks of a *materialised* snapshot DataFrame (see the module notes)."""
    from pyspark.sql import functions as F

    rows = (df.where(F.col("op") == CHUNK_OP)
            .select("op", "schema", "table", "before", "after", "query").collect())
    return watermarks_from_rows(r.asDict() for r in rows)


def read_snapshot(spark: "SparkSession", url: str, tables: str,
                  **options: Any) -> tuple["DataFrame", SnapshotWatermarks]:
    """Run the snapshot once: its DataFrame (materialised with `localCheckpoint`, so every
    later action sees the same rows) and the watermarks taken from exactly those rows."""
    reader = spark.read.format(NAME).option("url", url).option("tables", tables)
    for k, v in options.items():
        reader = reader.option(k, json.dumps(v) if isinstance(v, (dict, list)) else str(v))
    df = reader.load().localCheckpoint(eager=True)
    return df, snapshot_watermarks(df)


# -- the Spark data source ------------------------------------------------------------------------

class ChunkPartition(InputPartition):
    """One chunk for one executor task."""

    def __init__(self, chunk: Chunk) -> None:
        super().__init__(chunk.ordinal)
        self.chunk = chunk


class SnapshotDataSource(DataSource):
    """Initial snapshot rows (op insert) and chunk markers (op chunk), in the CDC schema."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType | str:
        return CDC_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return SnapshotReader(self.options)


class SnapshotReader(DataSourceReader):
    """Plans chunks on the driver; each task reads one chunk with its watermarks."""

    def __init__(self, options: Any) -> None:
        url = options.get("url")
        tables = options.get("tables")
        if not url or not tables:
            raise SnapshotError('binlake-snapshot needs .option("url", ...) and '
                                '.option("tables", "db.table,...")')
        self.url = str(url)
        self.tables = str(tables)
        self.chunks = int(options["chunks"]) if options.get("chunks") else None
        self.chunk_size = int(options.get("chunkSize", DEFAULT_CHUNK_SIZE))
        raw_keys = options.get("keys")
        self.keys: dict[str, list[str]] = json.loads(raw_keys) if raw_keys else {}
        if not isinstance(self.keys, dict):
            raise SnapshotError('option "keys" must be a JSON object {"db.table": ["col", ...]}')
        self.no_key = str(options.get("noKeyPolicy", "full"))
        if self.no_key not in NO_KEY_POLICIES:
            raise SnapshotError(f"noKeyPolicy must be one of {NO_KEY_POLICIES}, "
                                f"not {self.no_key!r}")
        self.server_id_base = int(options.get("serverIdBase", DEFAULT_SERVER_ID_BASE))
        self.batch_size = int(options.get("batchSize", "10000"))

    def partitions(self) -> list[InputPartition]:
        plan = plan_snapshot(self.url, self.tables, chunks=self.chunks,
                             chunk_size=self.chunk_size, keys=self.keys, no_key=self.no_key)
        return [ChunkPartition(c) for c in plan]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, ChunkPartition)
        c = partition.chunk
        res = read_chunk(self.url, c, server_id=self.server_id_base + c.ordinal)
        yield from chunk_batches(res, self.batch_size)
