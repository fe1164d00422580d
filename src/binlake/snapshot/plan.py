"""Chunk planning (driver side, no locks): tables selected, keys walked into ranges."""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..replica.url import ServerURL
from .server import SnapshotError, connect, query_rows, quote_name, server_flavor
from .tables import SnapshotTable, describe_table
from .values import literal_fn, select_expr

DEFAULT_CHUNK_SIZE = 250_000
"""Rows per chunk at most. A chunk is a task and a Parquet file: at 50,000 rows a narrow
table's files were a few MB, each task paid its start-up, and Delta's auto compaction
rewrote the files right after the snapshot (`DEFAULT_CHUNK_BYTES` bounds wide rows)."""

DEFAULT_CHUNK_BYTES = 64 << 20
"""A chunk also holds at most about this many bytes of rows (the server's average row length
times its rows): 250,000 rows of large TEXT/BLOB values would be GBs in one reader's memory."""


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
    table_rows: int | None = None
    """The table's COUNT(*) at planning (progress totals); None when not counted."""

    @property
    def mode(self) -> str:
        return "pk" if self.table.key else "full"


def _ge(cols: Sequence[str], strict_last: bool, op_first: str) -> str:
    """Row comparison (a,b,c) OP (x,y,z) spelled out so that indexes serve it."""
    q = [quote_name(c) for c in cols]
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
    rows = query_rows(cur, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
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
    flavor = server_flavor(cur)
    names = ["log_bin", "binlog_format", "binlog_row_image"]
    values = dict(zip(names, query_rows(cur, "SELECT @@global.log_bin, @@global.binlog_format, "
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
                  no_key: str = "full", chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[Chunk]:
    """Split every selected table into key chunks (driver side, no locks): `chunks` each,
    or chunks of at most `chunk_size` rows and about `chunk_bytes` bytes.

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
                count, bounds = (_boundaries(cur, t, chunks, chunk_size, chunk_bytes)
                                 if t.chunkable else (None, []))
                edges: list[tuple[Any, ...] | None] = [None, *bounds, None]
                n = len(edges) - 1
                for i in range(n):
                    out.append(Chunk(t, i, n, len(out), edges[i], edges[i + 1], count))
            return out
    finally:
        conn.close()


def _avg_row_bytes(cur: Any, t: SnapshotTable) -> int:
    """The server's average row length of a table (its statistics; 0 when unknown)."""
    rows = query_rows(cur, "SELECT COALESCE(avg_row_length, 0) FROM information_schema.tables "
                      "WHERE table_schema = %s AND table_name = %s", (t.schema, t.table))
    return int(rows[0][0]) if rows else 0


def _boundaries(cur: Any, t: SnapshotTable, chunks: int | None, chunk_size: int,
                chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> tuple[int, list[tuple[Any, ...]]]:
    """The table's row count and the chunks' inner boundaries."""
    table = f"{quote_name(t.schema)}.{quote_name(t.table)}"
    count = int(query_rows(cur, f"SELECT COUNT(*) FROM {table}")[0][0])
    if chunks is None and chunk_bytes > 0 and count > 1:
        row_bytes = _avg_row_bytes(cur, t)
        if count * row_bytes > chunk_bytes:
            chunk_size = min(chunk_size, max(1, chunk_bytes // row_bytes))
    n = chunks if chunks is not None else max(1, math.ceil(count / chunk_size))
    n = max(1, min(n, count))
    if n == 1:
        return count, []
    step = math.ceil(count / n)
    cols = [t.spec.column(k) for k in t.key]
    select = ", ".join(select_expr(c) for c in cols)
    order = ", ".join(quote_name(k) for k in t.key)
    lits = [literal_fn(c) for c in cols]
    bounds: list[tuple[Any, ...]] = []
    while len(bounds) < n - 1:
        where, args = range_predicate(t.key, bounds[-1] if bounds else None, None)
        row = query_rows(cur, f"SELECT {select} FROM {table} WHERE {where} ORDER BY {order} "
                         f"LIMIT 1 OFFSET {step}", args)
        if not row:
            break  # rows were deleted since COUNT(*): fewer, still complete chunks
        bounds.append(tuple(f(v) for f, v in zip(lits, row[0])))
    return count, bounds
