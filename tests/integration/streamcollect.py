"""Read a live stream from a position to the primary's end and keep what a test picks from
each record (or each batch of `BinlogStream.batches()`), with the stream's position at hand."""
from __future__ import annotations

from typing import Any, Callable

from binlake.replica.position import Position
from binlake.replica.stream import BinlogStream, StreamOptions
from binlake.replica.url import ServerURL


def collect(url: ServerURL, start: Position, pick: Callable[[Any, BinlogStream], Any], *,
            tables: Callable[[str, str], bool] | None = None, limit: int | None = None,
            batches: bool = False, per_event: bool = True) -> list[Any]:
    """pick(record or batch, stream) for each, up to `limit` items; the stream is closed.
    per_event: as BinlogStream.batches's (False: lists may span rows events)."""
    bs = BinlogStream(url, StreamOptions(start=start, until_end=True, tables=tables))
    out: list[Any] = []
    try:
        for item in bs.batches(per_event=per_event) if batches else bs.changes():
            out.append(pick(item, bs))
            if limit is not None and len(out) == limit:
                break
    finally:
        bs.close()
    return out
