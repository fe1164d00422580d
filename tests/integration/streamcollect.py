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


def wait_started(proc: Any, ckpt: Any, within: float = 20) -> None:
    """Until `binlake stream --checkpoint ckpt` wrote its first checkpoint (the primary took
    the start), failing if the process ends first."""
    import time

    deadline = time.monotonic() + within
    while not ckpt.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)


def wait_written(out: Any, ckpt: Any, n: int, within: float) -> list[str]:
    """The `--out` file's lines once it has `n` and the checkpoint counts all its bytes;
    fails after `within` seconds."""
    import json
    import time

    t0 = time.monotonic()
    while True:
        lines = out.read_text().splitlines() if out.exists() else []
        saved = json.loads(ckpt.read_text())
        if len(lines) == n and saved["extra"].get("out_bytes") == out.stat().st_size:
            return lines
        assert time.monotonic() - t0 < within, (lines, saved)
        time.sleep(0.05)
