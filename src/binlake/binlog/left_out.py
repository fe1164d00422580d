"""LeftOut: what a decoder does with the rows events of the tables its filter leaves out."""
from __future__ import annotations

__all__ = ["LeftOut"]


class LeftOut:
    """What a decoder with a table filter does with the left-out tables' rows events, given
    to it when it is made (`left_out=`) by whoever owns the reading, never switched by its
    callers. The decoder reads it as each run of its C scanner starts and at each such
    event it decodes itself, so an owner whose needs change between events (a reader that
    follows XA transactions: cdc.changes.XaLeftOut) hands a subclass whose properties read
    its own state.

    count: each carries its row count (`filtered_rows`, walked in C without decoding
    values). skip: the C scans (files, and scan_packets' runs) check them (checksum, table)
    and pass them over, not handed out: counted in `events_skipped`, their rows in
    `rows_skipped` (with count); without the C extension they come as usual. For an owner
    that needs nothing of them. Why: a filter that keeps one table of a busy server leaves
    most events out, and handing each over cost more than checking it."""

    count: bool = False
    skip: bool = False

    def __init__(self, *, count: bool = False, skip: bool = False) -> None:
        self.count = count
        self.skip = skip
