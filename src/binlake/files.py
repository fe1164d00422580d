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
