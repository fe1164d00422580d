"""The benchmark workload: three tables and a seeded stream of multi-row DML transactions.

Every number the benchmark checks comes from here.  The generator is a pure function of
(seed, scale, mix): it tracks which primary keys are live, so it knows exactly how many row
changes each statement makes (an UPDATE's before/after pair counts once), and every UPDATE
changes a column to a value no row has held before, because the server does not log rows an
UPDATE leaves unchanged.  The loader executes the statements over one connection and checks
the server's affected-row count against the generator's after every statement.
"""
from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

SCHEMA = "binlake_bench"
TABLES = ("narrow", "wide", "large")
OPS = ("insert", "update", "delete")

# Share of row changes per table.  With ~8 KB JSON + ~8 KB LONGTEXT per `large` row and FULL
# row images this puts 1,000,000 changes at roughly 1.4 GB of binlog (the full run's size).
DEFAULT_MIX: dict[str, float] = {"narrow": 0.60, "wide": 0.355, "large": 0.045}

# Rows per statement (inclusive range).  `large` statements stay below ~2 MB so a server with
# the stock max_allowed_packet accepts them.
BATCH: dict[str, tuple[int, int]] = {"narrow": (50, 500), "wide": (20, 200), "large": (2, 60)}

# Operation weights once a table holds rows; inserts win so the tables keep growing.
OP_WEIGHTS = (0.55, 0.30, 0.15)
# Below this many live rows a table only gets inserts (updates/deletes need rows to hit).
MIN_LIVE: dict[str, int] = {"narrow": 1000, "wide": 500, "large": 100}

DDL: dict[str, str] = {
    "narrow": """CREATE TABLE narrow (
        id BIGINT NOT NULL PRIMARY KEY,
        n INT,
        s VARCHAR(32),
        d DOUBLE,
        ts DATETIME(6)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    "wide": """CREATE TABLE wide (
        id BIGINT NOT NULL PRIMARY KEY,
        c_tiny TINYINT NULL,
        c_small SMALLINT NULL,
        c_medium MEDIUMINT NULL,
        c_int INT NULL,
        c_bigu BIGINT UNSIGNED NULL,
        c_dec18 DECIMAL(18,4) NULL,
        c_dec65 DECIMAL(65,30) NULL,
        c_float FLOAT NULL,
        c_double DOUBLE NULL,
        c_bit BIT(13) NULL,
        c_year YEAR NULL,
        c_date DATE NULL,
        c_time TIME(3) NULL,
        c_dt DATETIME(6) NULL,
        c_ts TIMESTAMP(6) NULL DEFAULT NULL,
        c_char CHAR(16) CHARACTER SET latin1 NULL,
        c_vchar VARCHAR(64) CHARACTER SET utf8mb4 NULL,
        c_text TEXT NULL,
        c_blob BLOB NULL,
        c_enum ENUM('red','green','blue','cyan','magenta') NULL,
        c_set SET('a','b','c','d','e','f') NULL,
        c_json JSON NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
    "large": """CREATE TABLE large (
        id BIGINT NOT NULL PRIMARY KEY,
        doc JSON NOT NULL,
        body LONGTEXT NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""",
}

_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-."
_LATIN1 = _ASCII + "éàüßøÅñç"
_UNICODE = _ASCII + "éßøñ€你好世界😀🚀"
_ENUM = ("red", "green", "blue", "cyan", "magenta")
_SET = ("a", "b", "c", "d", "e", "f")
_BIGU_UPDATE_BASE = 1 << 63  # inserts draw c_bigu below this, updates count up from it


def sql_string(text: str) -> str:
    """A single-quoted SQL literal (NO_BACKSLASH_ESCAPES off, the server default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass
class Counts:
    """Expected row changes per table and operation."""

    by_table: dict[str, dict[str, int]] = field(
        default_factory=lambda: {t: {op: 0 for op in OPS} for t in TABLES})

    def add(self, table: str, op: str, n: int) -> None:
        self.by_table[table][op] += n

    def table_total(self, table: str) -> int:
        return sum(self.by_table[table].values())

    @property
    def total(self) -> int:
        return sum(self.table_total(t) for t in TABLES)

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total,
                "tables": {t: {**self.by_table[t], "total": self.table_total(t)} for t in TABLES}}


@dataclass(frozen=True)
class Statement:
    """One DML statement and the exact number of rows it changes."""

    table: str
    op: str
    rows: int
    sql: str


class _LiveIds:
    """Live primary keys with O(1) random sampling and removal (swap-remove)."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.pos: dict[int, int] = {}
        self.next_id = 1

    def __len__(self) -> int:
        return len(self.ids)

    def new(self, n: int) -> list[int]:
        out = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        for i in out:
            self.pos[i] = len(self.ids)
            self.ids.append(i)
        return out

    def sample(self, rng: random.Random, n: int) -> list[int]:
        return sorted(rng.sample(self.ids, n))

    def remove(self, ids: list[int]) -> None:
        for i in ids:
            at = self.pos.pop(i)
            last = self.ids.pop()
            if last != i:
                self.ids[at] = last
                self.pos[last] = at


class Workload:
    """Seeded DML for exactly ``scale`` row changes, split over the tables by ``mix``.

    Iterate :meth:`transactions` once; :attr:`expected` is complete when it is exhausted.
    """

    def __init__(self, scale: int, seed: int = 6, mix: dict[str, float] | None = None) -> None:
        if scale < 1:
            raise ValueError("scale must be at least 1 row change")
        self.scale = scale
        self.seed = seed
        self.mix = dict(mix or DEFAULT_MIX)
        total = sum(self.mix.values())
        # Per-table budgets add up to `scale` exactly; rounding leftovers go to `narrow`.
        self.budget = {t: int(scale * self.mix.get(t, 0) / total) for t in TABLES}
        self.budget["narrow"] += scale - sum(self.budget.values())
        self.expected = Counts()
        self._rng = random.Random(seed)
        self._live = {t: _LiveIds() for t in TABLES}
        self._bigu_next = _BIGU_UPDATE_BASE
        self._update_seq = 0
        pool_rng = random.Random(seed ^ 0x5EED)
        # Large values come from a pool so generating a GB of SQL stays cheap; a per-row prefix
        # keeps every row (and every update) distinct.
        self._text_pool = [_random_text(pool_rng, _UNICODE, 8000) for _ in range(32)]
        self._doc_pool = [_large_doc(pool_rng) for _ in range(32)]

    # -- public ----------------------------------------------------------------------------
    def transactions(self) -> Iterator[list[Statement]]:
        """Transactions of 1-4 statements, each statement on a table chosen by remaining budget."""
        rng = self._rng
        left = dict(self.budget)
        while any(left.values()):
            tx: list[Statement] = []
            for _ in range(rng.randint(1, 4)):
                tables = [t for t in TABLES if left[t] > 0]
                if not tables:
                    break
                table = rng.choices(tables, weights=[left[t] for t in tables])[0]
                stmt = self._statement(table, left[table])
                left[table] -= stmt.rows
                self.expected.add(table, stmt.op, stmt.rows)
                tx.append(stmt)
            yield tx

    # -- statements ------------------------------------------------------------------------
    def _statement(self, table: str, left: int) -> Statement:
        rng = self._rng
        live = self._live[table]
        lo, hi = BATCH[table]
        n = min(rng.randint(lo, hi), left)
        op = "insert" if len(live) < max(MIN_LIVE[table], n) else rng.choices(OPS, weights=OP_WEIGHTS)[0]
        if op == "insert":
            ids = live.new(n)
            rows = ",".join(self._row(table, i) for i in ids)
            return Statement(table, op, n, f"INSERT INTO {table} VALUES {rows}")
        ids = live.sample(rng, n)
        where = "WHERE id IN (" + ",".join(map(str, ids)) + ")"
        if op == "delete":
            live.remove(ids)
            return Statement(table, op, n, f"DELETE FROM {table} {where}")
        return Statement(table, op, n, f"UPDATE {table} SET {self._assignments(table)} {where}")

    def _assignments(self, table: str) -> str:
        """SET clause that changes every matched row (a unique value in one column)."""
        rng = self._rng
        self._update_seq += 1
        seq = self._update_seq
        if table == "narrow":
            return (f"n = n + 1, s = {sql_string('u' + str(seq) + '-' + _random_text(rng, _UNICODE, 12))}, "
                    f"d = {rng.uniform(-1e9, 1e9)!r}, ts = {_datetime(rng, 1970, 2100)}")
        if table == "wide":
            self._bigu_next += 1
            return (f"c_bigu = {self._bigu_next}, c_int = {rng.randint(-2**31, 2**31 - 1)}, "
                    f"c_dec18 = {_decimal(rng, 14, 4)}, c_vchar = {sql_string(_random_text(rng, _UNICODE, rng.randint(0, 64)))}, "
                    f"c_dt = {_datetime(rng, 1000, 9999)}, c_enum = {sql_string(rng.choice(_ENUM))}")
        prefix = f"u{seq}:"
        body = self._text_pool[rng.randrange(len(self._text_pool))]
        return (f"body = CONCAT({sql_string(prefix)}, {sql_string(body)}), "
                f"doc = JSON_SET(doc, '$.rev', {seq})")

    def _row(self, table: str, pk: int) -> str:
        rng = self._rng
        if table == "narrow":
            return (f"({pk},{rng.randint(-10**9, 10**9)},"
                    f"{sql_string(_random_text(rng, _UNICODE, rng.randint(0, 32)))},"
                    f"{rng.uniform(-1e12, 1e12)!r},{_datetime(rng, 1970, 2100)})")
        if table == "large":
            doc = self._doc_pool[rng.randrange(len(self._doc_pool))]
            body = self._text_pool[rng.randrange(len(self._text_pool))]
            return (f"({pk},JSON_SET({sql_string(doc)}, '$.id', {pk}),"
                    f"CONCAT({sql_string(str(pk) + ':')}, {sql_string(body)}))")
        return "(" + ",".join([str(pk), *(_maybe_null(rng, gen) for gen in _WIDE_COLUMNS)]) + ")"


# -- value generators ------------------------------------------------------------------------

def _random_text(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choices(alphabet, k=n))


def _decimal(rng: random.Random, int_digits: int, frac_digits: int) -> str:
    sign = "-" if rng.random() < 0.5 else ""
    whole = rng.randrange(10 ** int_digits)
    frac = rng.randrange(10 ** frac_digits)
    return f"{sign}{whole}.{frac:0{frac_digits}d}"


def _date_parts(rng: random.Random, y0: int, y1: int) -> str:
    return f"{rng.randint(y0, y1):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _datetime(rng: random.Random, y0: int, y1: int) -> str:
    return (f"'{_date_parts(rng, y0, y1)} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
            f"{rng.randint(0, 59):02d}.{rng.randrange(10**6):06d}'")


def _timestamp(rng: random.Random) -> str:
    # The loader's session runs in UTC; stay inside TIMESTAMP's range there.
    return _datetime(rng, 1971, 2037)


def _time3(rng: random.Random) -> str:
    sign = "-" if rng.random() < 0.3 else ""
    return (f"'{sign}{rng.randint(0, 837)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            f".{rng.randrange(1000):03d}'")


def _small_json(rng: random.Random) -> str:
    doc = {"k": rng.randint(-10**6, 10**6), "f": round(rng.uniform(-1e3, 1e3), 3),
           "s": _random_text(rng, _UNICODE, rng.randint(0, 16)),
           "a": [rng.randint(0, 100) for _ in range(rng.randint(0, 5))], "b": rng.random() < 0.5,
           "n": None}
    return sql_string(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))


def _large_doc(rng: random.Random) -> str:
    """A JSON object of about 8 KB: nested items with mixed scalar types."""
    items = []
    size = 0
    while size < 7800:
        item = {"sku": _random_text(rng, _ASCII, 12), "qty": rng.randint(0, 1000),
                "price": round(rng.uniform(0, 1e4), 2), "tags": [_random_text(rng, _UNICODE, 6)
                                                               for _ in range(rng.randint(0, 3))],
                "ok": rng.random() < 0.5}
        items.append(item)
        size += len(json.dumps(item, ensure_ascii=False))
    return json.dumps({"id": 0, "rev": 0, "items": items}, ensure_ascii=False, separators=(",", ":"))


_WIDE_COLUMNS: tuple[Any, ...] = (
    lambda r: str(r.randint(-128, 127)),
    lambda r: str(r.randint(-32768, 32767)),
    lambda r: str(r.randint(-8388608, 8388607)),
    lambda r: str(r.randint(-2**31, 2**31 - 1)),
    lambda r: str(r.randrange(_BIGU_UPDATE_BASE)),
    lambda r: _decimal(r, 14, 4),
    lambda r: _decimal(r, 35, 30),
    lambda r: repr(round(r.uniform(-1e6, 1e6), 2)),
    lambda r: repr(r.uniform(-1e300, 1e300)),
    lambda r: str(r.randrange(1 << 13)),
    lambda r: str(r.randint(1901, 2155)),
    lambda r: f"'{_date_parts(r, 1000, 9999)}'",
    _time3,
    lambda r: _datetime(r, 1000, 9999),
    _timestamp,
    lambda r: sql_string(_random_text(r, _LATIN1, r.randint(0, 16))),
    lambda r: sql_string(_random_text(r, _UNICODE, r.randint(0, 64))),
    lambda r: sql_string(_random_text(r, _UNICODE, r.randint(0, 600))),
    lambda r: "X'" + r.randbytes(r.randint(0, 300)).hex() + "'",
    lambda r: sql_string(r.choice(_ENUM)),
    lambda r: sql_string(",".join(s for s in _SET if r.random() < 0.4)),
    _small_json,
)


def _maybe_null(rng: random.Random, gen: Any) -> str:
    return "NULL" if rng.random() < 0.1 else gen(rng)


# -- loading ---------------------------------------------------------------------------------

class _Server(Protocol):
    def connect(self, database: str | None = ..., **kw: Any) -> Any: ...


@dataclass
class LoadResult:
    """What the loader did: expected counts, the binlog range it wrote, and how long it took."""

    expected: Counts
    first_file: str
    last_file: str
    end_pos: int
    transactions: int
    statements: int
    seconds: float


def create_tables(server: _Server) -> None:
    """(Re)create the schema; DDL goes to the binlog before the workload's first file."""
    conn = server.connect(database=None)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {SCHEMA}")
            cur.execute(f"CREATE DATABASE {SCHEMA} CHARACTER SET utf8mb4")
            cur.execute(f"USE {SCHEMA}")
            for t in TABLES:
                cur.execute(DDL[t])
    finally:
        conn.close()


def load(server: _Server, workload: Workload, progress: Any = None) -> LoadResult:
    """Create the tables, rotate the binlog, run the workload, rotate again.

    The workload then fills whole binlog files [first_file, last_file] and nothing else, so the
    file decoders and the live streams read the same bytes.  A statement whose affected-row
    count differs from the generator's is an error: every later check would be meaningless.
    """
    create_tables(server)
    conn = server.connect(database=SCHEMA, autocommit=False)
    t0 = time.perf_counter()
    n_tx = n_stmt = 0
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            cur.execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'")
            cur.execute("FLUSH BINARY LOGS")
            cur.execute("SHOW MASTER STATUS")
            first_file = cur.fetchone()[0]
            for tx in workload.transactions():
                conn.begin()
                for stmt in tx:
                    affected = cur.execute(stmt.sql)
                    if affected != stmt.rows:
                        raise RuntimeError(
                            f"{stmt.op} on {stmt.table} changed {affected} rows, the workload "
                            f"expected {stmt.rows}: {stmt.sql[:200]}...")
                    n_stmt += 1
                conn.commit()
                n_tx += 1
                if progress is not None:
                    progress(sum(s.rows for s in tx))
            cur.execute("SHOW MASTER STATUS")
            last_file, end_pos = cur.fetchone()[:2]
            cur.execute("FLUSH BINARY LOGS")
    finally:
        conn.close()
    return LoadResult(workload.expected, first_file, last_file, int(end_pos), n_tx, n_stmt,
                      time.perf_counter() - t0)
