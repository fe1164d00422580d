"""The file edge: read binlog files from disk through the one sans-IO decoder."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from .binlog.decoder import BinlogDecoder
from .binlog.events import Event
from .errors import DecodeError

CHUNK = 1 << 20


def read_events(path: str | Path, *, decoder: BinlogDecoder | None = None,
                chunk_size: int = CHUNK, **decoder_options: Any) -> Iterator[Event]:
    """Yield every event of one binlog file; errors name the file and byte offset."""
    path = Path(path)
    dec = decoder or BinlogDecoder(file=path.name, **decoder_options)
    dec.file = path.name
    # Two buffers read into in turn: the decoder works in the chunk it was fed (no copy per
    # event) while the other takes the next read; the same pages serve the whole file.
    buffers = (bytearray(chunk_size), bytearray(chunk_size))
    turn = 0
    try:
        with path.open("rb", buffering=0) as fh:
            while True:
                buf = buffers[turn]
                turn ^= 1
                n = fh.readinto(buf)
                if not n:
                    break
                dec.feed(memoryview(buf)[:n], borrowed=True)
                yield from dec.events()
        dec.close()
    except DecodeError as exc:
        raise exc.located(file=str(path)) if exc.file is None else exc


def read_files(paths: Iterable[str | Path], **decoder_options: Any) -> Iterator[Event]:
    """Events of several files in order, one decoder each (a file starts with its own FDE)."""
    for p in paths:
        yield from read_events(p, **decoder_options)


_HEADER_TYPES = frozenset({15, 164})
"""FORMAT_DESCRIPTION and MariaDB's START_ENCRYPTION: what a decoder must see first."""


def read_range(path: str | Path, start: int, end: int, **decoder_options: Any) -> Iterator[Event]:
    """The events in [start, end) of one binlog file (start and end on event boundaries),
    after its header events, which tell the decoder the format (and the encryption)."""
    path = Path(path)
    dec = BinlogDecoder(file=path.name, **decoder_options)
    try:
        with path.open("rb") as fh:
            if fh.read(4) != b"\xfebin":
                raise DecodeError("not a binlog file", file=str(path), offset=0)
            pos = 4
            while pos < start:
                head = fh.read(19)
                if len(head) < 19 or head[4] not in _HEADER_TYPES:
                    break
                size = int.from_bytes(head[9:13], "little")
                dec.decode_event(head + fh.read(size - 19), pos)
                pos += size
            fh.seek(start)
            pos = start
            while pos < end:
                head = fh.read(19)
                size = int.from_bytes(head[9:13], "little") if len(head) == 19 else 0
                raw = head + fh.read(size - 19) if size >= 19 else head
                if size < 19 or len(raw) < size or pos + size > end:
                    raise DecodeError(f"no whole event at {pos} before {end}", file=str(path),
                                      offset=pos)
                yield from dec.decode_event(raw, pos)
                pos += size
    except DecodeError as exc:
        raise exc.located(file=str(path)) if exc.file is None else exc


def locate_prepared(paths: Iterable[str | Path], xid: str, **decoder_options: Any) -> Any:
    """The PREPARE group of `xid` left pending at the end of one of `paths` (newest file
    first), as a `PreparedRange`; None if none has it. For a reader of a later file that
    meets the XA COMMIT. Rows are not decoded (only event headers and group boundaries)."""
    from .changes import ChangeTracker, no_table

    for path in reversed([Path(p) for p in paths]):
        tracker = ChangeTracker()
        for ev in read_events(path, table_filter=no_table, **decoder_options):
            tracker.observe(ev, keep=False)
        for rng in tracker.xa.ranges():
            if rng.xid == xid:
                return rng
    return None
