"""Column names and types for a stream that starts at a past position with no schema history.

Without FULL row metadata the binlog does not name columns nor say which are UNSIGNED, so a
stream needs the table shapes at its start. Those are information_schema's (read now) for
tables that no DDL since the start touched, and the replay of the DDL for tables created
since; for the rest binlake.schema.range_history marks them opaque and the tracker refuses
their rows by name. Finding which is which takes one read of the binlog from the start to the
primary's end: a dump that ends there, decoding QUERY events only (no row is decoded).
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from ..cdc.changes import no_table
from ..schema.history import BinlogPos
from ..schema.range_history import LoggedQuery, classify, range_history
from ..schema.tracker import FL_ROLLBACK_ALTER, FL_START_ALTER, SchemaTracker, maybe_ddl
from .position import Position
from .stream import BinlogStream, StreamOptions
from .url import ServerURL

log = logging.getLogger("binlake.replica")

_NAMED = 5
"""Opaque tables named in the start-up warning (the rest are counted)."""


class _QueryCollector:
    """A table resolver that changes nothing and keeps the QUERY events that may be DDL."""

    def __init__(self) -> None:
        self.queries: list[LoggedQuery] = []

    def resolve(self, tm: Any) -> Any:
        return tm

    def on_query(self, ev: Any) -> None:
        if not maybe_ddl(ev.query):
            return None
        flags3 = int(ev.status_vars.get("gtid_flags3") or 0)
        if flags3 & (FL_START_ALTER | FL_ROLLBACK_ALTER):
            return None  # MariaDB's two-phase ALTER: the shape changes at its COMMIT ALTER
        self.queries.append(LoggedQuery(BinlogPos(ev.file, ev.offset), ev.schema, ev.query,
                                        int(ev.status_vars.get("sql_mode") or 0)))
        return None


def logged_ddl(url: ServerURL, start: Position, *, server_id: int, heartbeat: float = 5.0,
               verify_checksums: bool = True) -> list[LoggedQuery]:
    """The QUERY events that may be DDL, from `start` to the primary's end as of now."""
    collector = _QueryCollector()
    walker = BinlogStream(url, StreamOptions(
        server_id=server_id, start=Position(start.file, start.pos, start.gtid_set, start.gtid_state),
        until_end=True, heartbeat=heartbeat, max_reconnects=5, tables=no_table, xa_walk=True,
        table_resolver=collector, on_incident=lambda ev: None, hostname="binlake-ddl-scan",
        verify_checksums=verify_checksums))
    try:
        for _ in walker.batches():
            pass
    finally:
        walker.close()
    return collector.queries


def range_tracker(url: ServerURL, start: Position, connect: Callable[[], Any], *,
                  tables: Callable[[str, str], bool], server_id: int, heartbeat: float = 5.0,
                  warn: Callable[[str], None] | None = None) -> SchemaTracker:
    """A tracker for a stream from `start` (see the module docstring). `connect` makes
    PyMySQL connections (information_schema); `tables`: the tracked (schema, table)."""
    from ..schema.bootstrap import bootstrap, default_filter

    conn = connect()
    try:
        # Every table's shape at `end`, not only the tracked ones': a tracked table renamed
        # away to another name had that table's shape.
        now = bootstrap(conn)
    finally:
        conn.close()
    end = now.start
    assert end is not None
    queries = logged_ddl(url, start, server_id=server_id, heartbeat=heartbeat)
    # information_schema was read at `end`: later statements are the stream's to replay
    queries = [q for q in queries if q.pos.file is None or q.pos < end]
    found = classify(queries, now.head_catalog(), default_filter)
    at = BinlogPos(start.file, start.pos) if start.file else None
    history = range_history(now, found, at, start.gtid_state or start.gtid_set, tables)
    log.info("schema history for a past start", extra={
        "start": str(at or history.start_gtid), "ddl_statements": len(queries),
        "created": len(found.created), "opaque": len(history.opaque)})
    # Warned about: those whose rows are refused until the end of the range (a table
    # created anew in it is refused only before that, where a row of it is unlikely).
    lasting = sorted(f"{s}.{t}" for s, t in history.opaque if (s, t) not in found.redefined)
    if lasting and warn is not None:
        shown = ", ".join(lasting[:_NAMED]) + (f" and {len(lasting) - _NAMED} more"
                                               if len(lasting) > _NAMED else "")
        one = len(lasting) == 1
        warn(f"binlake: the shape at the start of {shown} is unknown ({'it' if one else 'they'} "
             f"existed before it, and DDL read since changed {'it' if one else 'them'}): a "
             f"row of {'it' if one else 'one of them'} will stop the stream unless the binlog "
             "names its columns (binlog_row_metadata=FULL); other tables take their shapes "
             "from information_schema or from the DDL replayed")
    tracker = SchemaTracker(history, connect=connect, tables=tables)
    tracker.dirty = True
    return tracker
