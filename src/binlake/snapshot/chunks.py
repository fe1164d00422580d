"""One chunk (executor side): LOW, SELECT, HIGH, and the backfill of [LOW, HIGH)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..cdc.changes import ChangeRecord
from .._util.recent import make_room
from ..replica.position import Position
from ..replica.url import ServerURL
from ..schema.spec import SERVER_TEXT_TYPES
from ..cdc.arrow import image_encoder
from ..binlog.values import ABSENT
from .plan import Chunk, range_predicate
from ..protocol.results import ColumnDefinition
from .server import (
    SnapshotError, begin_snapshot, binlog_end, connect, connect_text, gtid_at, position_key,
    query_rows, quote_name, raw_is_bytes, raw_row, server_flavor,
)
from .tables import KEY_ORDER, SnapshotTable, column_signature
from .values import RowFormatter, bound_json


# -- one chunk (executor) ---------------------------------------------------------------------

@dataclass
class ChunkResult:
    """What one chunk read: its rows (key -> after image) and its watermarks."""

    chunk: Chunk
    low: tuple[str, int]
    high: tuple[str, int]
    high_gtid: str | None
    ts: int
    rows: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    """Key -> the row's after image as JSON text (or, read with `raw`, the SELECT's value
    tuple when the backfill did not replace it)."""
    full_rows: list[Any] = field(default_factory=list)
    """Rows of a keyless table (duplicates allowed)."""
    backfilled: int = 0
    """Binlog row changes of the table replayed between LOW and HIGH."""
    packed: PackedRows | None = None
    """Read with `packed`, and no backfill changed them: the SELECT's rows unparsed (then
    `rows` and `full_rows` are empty)."""


@dataclass
class PackedRows:
    """A SELECT's rows as the server sent them, for a reader that splits them into columns
    itself (`protocol.results.split_text_rows`)."""

    columns: list[ColumnDefinition]
    data: bytearray
    count: int

    def raw_rows(self) -> list[tuple[Any, ...]]:
        """The rows as `connect`'s cursor gives them (str, bytes for binary columns)."""
        from ..protocol.results import parse_text_row

        binary = [raw_is_bytes(c) for c in self.columns]
        ncols, data, out = len(binary), memoryview(self.data), []
        pos = 0
        while pos < len(data):
            end = pos + 4 + int.from_bytes(data[pos:pos + 4], "little")
            row = parse_text_row(data[pos + 4:end], ncols)
            out.append(raw_row(row, binary))
            pos = end
        return out


class ShapeGuard:
    """Backfill resolver: the TABLE_MAP must have the planned columns; JSON columns (MariaDB's
    JSON is LONGTEXT) and UUID/INET columns (BINARY(n)) are marked; DDL touching the table
    stops the chunk."""

    def __init__(self, t: SnapshotTable) -> None:
        self.t = t
        self._names = t.spec.names
        self._marks = {i: {"is_json": True} if c.type == "json" else {"plugin_type": c.type}
                       for i, c in enumerate(t.spec.columns)
                       if c.type == "json" or c.type in SERVER_TEXT_TYPES}
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
        if self._marks:
            from dataclasses import replace

            out = tm.with_columns([replace(c, **self._marks[i]) if i in self._marks else c
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
               after_select: Callable[[], None] | None = None, raw: bool = False,
               packed: bool = False) -> ChunkResult:
    """LOW, SELECT, HIGH, backfill: the chunk's rows as of HIGH (see the module notes).

    `after_select` runs between the SELECT and HIGH (tests use it to write into the window).
    `raw`: keep the SELECT's rows as the raw value tuples (`RowFormatter.names` order) instead
    of JSON text, for a reader that types them itself; rows the backfill wrote are JSON text
    either way (`ChunkResult.rows`).
    `packed` (with `raw`): read on binlake's own client and keep the SELECT's rows unparsed
    in `ChunkResult.packed`, unless the backfill has changes to replay onto them (then they
    are raw tuples as above).
    """
    if isinstance(url, str):
        url = ServerURL.parse(url)
    t = chunk.table
    fmt = RowFormatter(t)
    conn: Any = connect_text(url) if packed else connect(url)
    got_packed: PackedRows | None = None
    rows: Any = ()
    try:
        with conn.cursor() as cur:
            flavor = server_flavor(cur)
            low = begin_snapshot(cur, flavor)
            try:
                where, args = range_predicate(t.key, chunk.lo, chunk.hi) if t.key else ("1=1", [])
                select = (f"SELECT {fmt.select_list} FROM {quote_name(t.schema)}."
                          f"{quote_name(t.table)} WHERE {where}")
                if packed:
                    got_packed = PackedRows(*cur.select_packed(select, args))
                    got = [c.name for c in got_packed.columns]
                else:
                    cur.execute(select, args)
                    got = [d[0] for d in cur.description]
                if got != fmt.names:
                    raise SnapshotError(f"{t.name}: the table now has columns {got}, the plan "
                                        f"had {fmt.names}", hint="run the snapshot again")
                if not packed:
                    rows = cur.fetchall()
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
                high = binlog_end(cur)
            else:
                high = low  # the read is exactly at LOW: nothing to reconcile by
            gtid = gtid_at(cur, flavor, high)
            ts = int(query_rows(cur, "SELECT UNIX_TIMESTAMP()")[0][0])
    finally:
        conn.close()
    res = ChunkResult(chunk, low, high, gtid, ts)
    if t.key and position_key(low) > position_key(high):
        raise SnapshotError(f"{t.name}: HIGH {high} is before LOW {low}")
    window = bool(t.key) and position_key(low) < position_key(high)
    changes = _backfill(url, res, server_id) if window else []
    if got_packed is not None:
        if not changes:
            res.packed = got_packed  # nothing to replay onto the rows
            return res
        rows = got_packed.raw_rows()
        raw = True
    if not t.key:
        res.full_rows = list(rows) if raw else [fmt.image(r)[1] for r in rows]
        return res
    if raw:
        key = fmt.key
        res.rows.update((key(r), r) for r in rows)
    else:
        for r in rows:
            k, text = fmt.image(r)
            res.rows[k] = text
    _replay(res.rows, changes)
    return res


Change = tuple[tuple[Any, ...] | None, str | None]
"""A backfilled change of a chunk: (key, None) removes the key's row, (key, text) puts its
image; (None, None) is a TRUNCATE (every row goes)."""


def _replay(rows: dict[tuple[Any, ...], Any], changes: Sequence[Change]) -> None:
    """Apply the backfill's changes, in binlog order, onto a chunk's rows."""
    for key, text in changes:
        if key is None:
            rows.clear()
        elif text is None:
            rows.pop(key, None)
        else:
            rows[key] = text


def _backfill(url: ServerURL, res: ChunkResult, server_id: int) -> list[Change]:
    """The table's changes in [LOW, HIGH) that touch the chunk's range, in order, for
    `_replay` (read before the rows are parsed: a chunk no change touched keeps them
    packed)."""
    from ..replica.stream import BinlogStream, StreamOptions

    t, chunk = res.chunk.table, res.chunk
    schema, table = t.schema.lower(), t.table.lower()
    order = [KEY_ORDER[k] for k in t.kinds if k is not None] if t.ordered else []  # (all set)
    lo = _ordered(order, bound_json(t, chunk.lo)) if t.ordered and chunk.lo else None
    hi = _ordered(order, bound_json(t, chunk.hi)) if t.ordered and chunk.hi else None

    def inside(key: tuple[Any, ...]) -> bool:
        if not t.ordered:
            return True  # conservative: a row outside the range is still its state at HIGH
        k = _ordered(order, key)
        return (lo is None or k >= lo) and (hi is None or k < hi)

    opts = StreamOptions(server_id=server_id, start=Position(res.low[0], res.low[1]),
                         stop_at=res.high, until_end=True, reconnect=False,
                         tables=lambda s, n: (s.lower(), n.lower()) == (schema, table),
                         table_resolver=ShapeGuard(t))
    stream = BinlogStream(url, opts)
    changes: list[Change] = []
    for rec in stream.changes():
        if rec.op == "truncate":
            changes.append((None, None))
            continue
        if rec.op not in ("insert", "update", "delete"):
            raise SnapshotError(f"{t.name}: a {rec.op!r} record at {rec.file}:{rec.pos} during "
                                "the snapshot of a chunk; its rows are not in the binlog",
                                hint="use binlog_format=ROW for every writer")
        res.backfilled += 1
        assert rec.table_map is not None  # (a row change's record carries its TABLE_MAP)
        enc = image_encoder(rec.table_map)
        if rec.before is not None:
            k, _ = _image_key(rec, rec.before, enc, t)
            if inside(k):  # (the rows hold only keys inside the range)
                changes.append((k, None))
        if rec.after is not None:
            k, text = _image_key(rec, rec.after, enc, t)
            if inside(k):
                changes.append((k, text))
    end = stream.position
    if end.file is None or position_key((end.file, end.pos)) != position_key(res.high) or end.rows_done:
        raise SnapshotError(f"{t.name}: the backfill stopped at {end}, not at HIGH "
                            f"{res.high[0]}:{res.high[1]}")
    return changes


def _image_key(rec: ChangeRecord, image: dict[str, Any], enc: Callable[[dict[str, Any]], str],
               t: SnapshotTable) -> tuple[tuple[Any, ...], str]:
    if any(v is ABSENT for v in image.values()):
        raise SnapshotError(f"{t.name} at {rec.file}:{rec.pos}: a row image without every column",
                            hint="binlog_row_image must be FULL for every writer session")
    text = enc(image)
    parsed = json.loads(text)
    return tuple(parsed[k] for k in t.key), text


def _ordered(order: Sequence[Callable[[Any], Any]], key: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(f(v) for f, v in zip(order, key))
