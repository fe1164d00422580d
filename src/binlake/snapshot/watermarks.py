"""The snapshot's watermarks, from its chunk marker rows: where the stream starts, and which
changes the snapshot already holds (the DBLog filter)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..replica.position import Position
from .server import SnapshotError, position_key
from .tables import KEY_ORDER

ROW_OP = "insert"
"""Snapshot rows are inserts: the apply step upserts them (full row, guarded by seq)."""
CHUNK_OP = "chunk"
"""One marker row per chunk: range (before/after = lo/hi key), watermarks (query, JSON)."""


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
    """Per key column how its JSON value orders (see `KEY_ORDER`); None: not decidable here."""
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
        return position_key(self.high)


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
    return tuple(KEY_ORDER[kind](vals[n]) for kind, n in zip(kinds, names))  # type: ignore[index]


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
