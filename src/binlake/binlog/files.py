"""The file edge: read binlog files from disk through the one sans-IO decoder."""
from __future__ import annotations

import mmap
import os
import struct
import zlib
from pathlib import Path
from functools import partial
from typing import Any, Callable, Iterable, Iterator

from .._speedups.native import switches
from .constants import ChecksumAlg, EventFlag, EventType as E
from .decoder import BinlogDecoder, RunMerge
from .events import Event
from ..errors import DecodeError

CHUNK = 1 << 20
MAP_MIN = 4 << 20
"""Files this large or larger are mapped when closed (_closed); below, read() is as fast."""


def read_events(path: str | Path, *, decoder: BinlogDecoder | None = None,
                chunk_size: int = CHUNK, start: int | None = None,
                **decoder_options: Any) -> Iterator[Event]:
    """Yield every event of one binlog file (from `start`, an event boundary, when given:
    the file's header events are decoded first, not yielded); errors name the file and
    byte offset."""
    return _read(Path(path), decoder, decoder_options, chunk_size, start, None)  # type: ignore[return-value]


def read_runs(path: str | Path, merge: RunMerge, *, decoder: BinlogDecoder,
              start: int | None = None, end: int | None = None
              ) -> Iterator[Event | list[Any] | int]:
    """read_part's events, with the C scanner's runs merged as `merge` says
    (`BinlogDecoder.merged_events`): for the fast drivers that own the merge."""
    items = _read(Path(path), decoder, {}, CHUNK, start, merge)
    return items if end is None else _part(items, path, end)


def _read(path: Path, decoder: BinlogDecoder | None, options: dict[str, Any], chunk_size: int,
          start: int | None, merge: RunMerge | None) -> Iterator[Event | list[Any] | int]:
    dec = decoder or BinlogDecoder(file=path.name, **options)
    dec.file = path.name
    drain = dec.events if merge is None else partial(dec.merged_events, merge)
    try:
        with path.open("rb", buffering=0) as fh:
            if start is not None and start > 4:
                _decode_header_events(fh, dec, path, start)
                dec.resume_at(start)
                fh.seek(start)
            if _closed(fh.fileno(), chunk_size):
                yield from _read_mapped(fh.fileno(), dec, start or 0, drain)
                dec.close()
                return
            # Two buffers read into in turn: the decoder works in the chunk it was fed (no copy
            # per event) while the other takes the next read; the same pages serve the file.
            buffers = (bytearray(chunk_size), bytearray(chunk_size))
            turn = 0
            while True:
                buf = buffers[turn]
                turn ^= 1
                n = fh.readinto(buf)
                if not n:
                    break
                dec.feed(memoryview(buf)[:n], borrowed=True)
                yield from drain()
        dec.close()
    except DecodeError as exc:
        raise exc.located(file=str(path)) if exc.file is None else exc


MAP_WINDOW = 8 << 20
"""How much of a closed file is mapped at once (a multiple of the page size)."""
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
_SEQUENTIAL = getattr(mmap, "MADV_SEQUENTIAL", None)


def _map(fd: int, length: int, offset: int, *, populate: bool = True) -> mmap.mmap:
    """A read-only window, its pages mapped in one call where Linux's MAP_POPULATE can (a
    page fault per 64 KiB otherwise), else read ahead.
    populate=False: a CrcAhead thread maps the pages itself (MADV_POPULATE_READ) as it
    reads the window first."""
    if _POPULATE and populate:
        return mmap.mmap(fd, length, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ,
                         offset=offset)
    window = mmap.mmap(fd, length, access=mmap.ACCESS_READ, offset=offset)
    if _SEQUENTIAL is not None:
        window.madvise(_SEQUENTIAL)
    return window


def _closed(fd: int, chunk_size: int) -> bool:
    """True if the file is a binlog the server has closed, MAP_MIN bytes or more, read with
    the default chunk size, on a file system that maps files: _read_mapped's files.

    Only a closed binlog (its FORMAT_DESCRIPTION's in-use flag clear) is mapped: it no
    longer changes, while the file the server writes grows and is truncated at MariaDB's
    crash recovery, and a mapped page cut off by a truncation would kill the process
    (SIGBUS) instead of raising an error. (A tool that writes binlog copies, such as
    `mariadb-binlog --raw`, leaves the flag clear: a copy still being written is read up
    to its size when the reading starts.)"""
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, 23, 0)
        closed = (chunk_size == CHUNK and size >= MAP_MIN and len(head) == 23
                  and head[:4] == b"\xfebin" and head[8] == E.FORMAT_DESCRIPTION
                  and not struct.unpack_from("<H", head, 21)[0] & EventFlag.BINLOG_IN_USE)
        if closed:  # a file system that cannot map files: read() then
            mmap.mmap(fd, 23, access=mmap.ACCESS_READ).close()
        return closed
    except (OSError, ValueError):
        return False


def _read_mapped(fd: int, dec: BinlogDecoder, start: int,
                 drain: Callable[[], Iterator[Any]]) -> Iterator[Any]:
    """Feed `dec` the file from `start` through read-only mappings of MAP_WINDOW bytes,
    handing out what `drain` (its events, or merged_events) yields after each feed.

    Why: read() copies every byte out of the page cache; the decoder reads the cached pages
    in place instead. Each window is unmapped when the decoder drops it at its next feed (an
    event cut by the window's end is copied, as at a read chunk's end).

    With a second CPU, a CrcAhead thread checks the events' checksums of the next window
    while the decoder works on this one, and the decoder does not check them again
    (`verified_until`). It also takes the pages of the window the decoder has let go of out
    of the page tables before this thread unmaps it (`drop`), so the decoder's thread does
    not spend its time unmapping pages. Three windows are mapped at a time, whatever the
    file's size, one of them with no page mapped."""
    size = os.fstat(fd).st_size
    ahead = _crc_ahead(dec, start)

    def window(base: int, drop: memoryview | None) -> memoryview:
        at = max(base, start)  # (the first window is mapped from a page boundary)
        view = memoryview(_map(fd, min(MAP_WINDOW, size - base), base,
                               populate=ahead is None))[at - base:]
        if ahead is not None:  # (from the first event: the magic is no event)
            ahead.submit(view[max(4 - at, 0):], max(at, 4), drop)
        return view

    bases = iter(range(start - start % mmap.ALLOCATIONGRANULARITY, size, MAP_WINDOW))

    def upcoming(drop: memoryview | None = None) -> memoryview | None:
        base = next(bases, None)
        return None if base is None else window(base, drop)

    view = upcoming()
    fed: memoryview | None = None  # the window the decoder reads
    try:
        while view is not None:
            if ahead is not None:
                dec.verified_until = ahead.wait()  # (a dropped window unmapped here)
            dec.feed(view, borrowed=True)  # (the window before is let go here)
            done, fed, view = fed, view, None  # the decoder's view and `fed` hold the window
            if ahead is not None:
                view = upcoming(done)  # checked while this one is decoded
            done = None  # (the CrcAhead holds it until the wait for `view`)
            yield from drain()
            if ahead is None:
                view = upcoming()
    finally:
        dec.verified_until = -1  # (nothing vouched for in another file)
        if ahead is not None:
            ahead.close()


def share_cpus(workers: int) -> None:
    """In one of `workers` processes that decode at once (a pool's initializer): with a
    process per CPU or more, each checks its checksums in its decoding thread.

    Why: a CrcAhead thread pays off on a CPU the decoder leaves idle. When every CPU
    already runs a decoder, it only takes turns with them, and the decoder then reads bytes
    another CPU brought in, which is slower than checking in the decoding thread."""
    if workers >= _cpus():
        switches.crc_ahead = False


def _crc_ahead(dec: BinlogDecoder, start: int) -> Any:
    """A CrcAhead thread for a mapped file read from `start`, or None: checksums not
    verified, no C extension, switched off (switches.crc_ahead), a single CPU to run on."""
    crc_ahead = getattr(switches.c, "CrcAhead", None)
    if not switches.crc_ahead or not dec.verify_checksums or crc_ahead is None or _cpus() < 2:
        return None
    return crc_ahead(max(start, 4))


def _cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_HEADER_TYPES = frozenset({E.FORMAT_DESCRIPTION, E.MARIADB_START_ENCRYPTION})
"""FORMAT_DESCRIPTION and MariaDB's START_ENCRYPTION: what a decoder must see first."""


def _decode_header_events(fh: Any, dec: BinlogDecoder, path: Path, before: int) -> None:
    """The FORMAT_DESCRIPTION (and START_ENCRYPTION) at the head of the file, into `dec`."""
    if fh.read(4) != b"\xfebin":
        raise DecodeError("not a binlog file", file=str(path), offset=0)
    pos = 4
    while pos < before:
        head = fh.read(19)
        if len(head) < 19 or head[4] not in _HEADER_TYPES:
            break
        size = int.from_bytes(head[9:13], "little")
        dec.decode_event(head + fh.read(size - 19), pos)
        pos += size


GROUP_STARTS = frozenset({E.GTID, E.ANONYMOUS_GTID, E.GTID_TAGGED, E.MARIADB_GTID})
"""MySQL's GTID, ANONYMOUS_GTID, GTID_TAGGED and MariaDB's GTID: the event that opens an
event group (a transaction, or a DDL's group) in a binlog written with them."""


def opens_group(ev: Event) -> bool:
    """Does this event open an event group of the file (not one inside a compressed
    transaction payload)? Where a part of a file ends and the next begins."""
    return ev.type_code in GROUP_STARTS and ev.inner_index is None


_LEN_NEXT = struct.Struct("<II")
_WINDOW = 1 << 16


def find_group_start(path: str | Path, target: int) -> int | None:
    """The offset of the first GTID event at or after `target`, found without walking the
    file from its start: the first event header after `target` is the first place whose
    next-event position is its own offset plus its length (as servers write binlog files),
    then the events are followed by their lengths. None if there is none.

    A guess, if a sure one: the reader of the part before decodes up to the first GTID event
    at or after `target` and says where that was; `decode --jobs` takes the parts only if
    the two agree, else decodes the file whole (a relay log's positions are the primary's,
    an encrypted file's headers are not in the clear: those never agree)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = anchor = _event_at_or_after(fd, max(target, 4))
        while pos is not None:
            head = os.pread(fd, 19, pos)
            if len(head) < 19:
                return None
            size, next_pos = _LEN_NEXT.unpack_from(head, 9)
            if size < 19 or next_pos != pos + size:  # (the anchor was no header after all)
                assert anchor is not None  # (set with pos)
                pos = anchor = _event_at_or_after(fd, anchor + 1)
            elif pos >= target and head[4] in GROUP_STARTS:
                return pos
            else:
                pos = next_pos
        return None
    finally:
        os.close(fd)


def _event_at_or_after(fd: int, start: int) -> int | None:
    """The first offset >= start that reads as an event header of under 64 KiB: its
    next-position field (bytes 13..16) is its offset plus its length, so the field's two
    high bytes are the offset's or one more; those two bytes are searched for (a C-speed
    find) and each hit checked whole."""
    base = start
    while True:
        data = os.pread(fd, _WINDOW + 19, base)
        if len(data) < 19:
            return None
        hits = []
        for high in range((base + 19) >> 16, ((base + _WINDOW + 19 + 0xFFFF) >> 16) + 1):
            pattern = struct.pack("<H", high & 0xFFFF)
            i = data.find(pattern, 15)
            while i != -1:
                at = i - 15
                if at >= _WINDOW:
                    break
                if at + 19 <= len(data):
                    size, next_pos = _LEN_NEXT.unpack_from(data, at + 9)
                    if 19 <= size < 0x10000 and next_pos == base + at + size:
                        hits.append(at)
                        break  # (the first one for this pattern)
                i = data.find(pattern, i + 1)
        if hits:
            return base + min(hits)
        base += _WINDOW


def cuttable(path: str | Path) -> bool:
    """May find_group_start look for event groups in this file? Not when it is encrypted
    (MariaDB's START_ENCRYPTION follows the FDE: the headers after it are not in the clear),
    nor when its first events' next-event positions are not their own (a relay log holds
    the primary's)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if os.pread(fd, 4, 0) != b"\xfebin":
            return False
        pos = 4
        for _ in range(4):
            head = os.pread(fd, 19, pos)
            if len(head) < 19:
                return True
            size, next_pos = _LEN_NEXT.unpack_from(head, 9)
            if head[4] == E.MARIADB_START_ENCRYPTION or size < 19 or next_pos != pos + size:
                return False
            pos = next_pos
        return True
    finally:
        os.close(fd)


SPLIT_BYTES = 128 << 20
"""The Spark files source's parts of big files (as spark.sql.files.maxPartitionBytes)."""


def split_points(path: str | Path, part_bytes: int = SPLIT_BYTES) -> list[int]:
    """Offsets of GTID events that cut the file into parts of about `part_bytes`, for
    readers that cannot wait to learn whether their parts join (Spark tasks); [] when the
    file is not to be cut: under two parts, not `cuttable`, or written without checksums.

    Each offset is found in place (find_group_start) and proven an event by its CRC32: a
    false guess passes one time in 2**32. read_part still checks that a part ends where
    the next one begins."""
    size = os.stat(path).st_size
    if part_bytes <= 0 or size < 2 * part_bytes or not cuttable(path):
        return []
    dec = BinlogDecoder(file=Path(path).name)
    with open(path, "rb", buffering=0) as fh:
        _decode_header_events(fh, dec, Path(path), 5)  # the FORMAT_DESCRIPTION only
    if dec.checksum_alg != ChecksumAlg.CRC32:
        return []
    points: list[int] = []
    fd = os.open(path, os.O_RDONLY)
    try:
        for k in range(1, size // part_bytes):
            target = k * part_bytes
            if points and target <= points[-1]:  # (a part past a big transaction)
                continue
            at = find_group_start(path, target)
            while at is not None and not _checksum_holds(fd, at):
                at = find_group_start(path, at + 1)
            if at is None:
                break
            points.append(at)
    finally:
        os.close(fd)
    return points


def _checksum_holds(fd: int, offset: int) -> bool:
    """Does the event at `offset`, a GTID event (under 64 KiB, unlike a false guess's
    length may say), end with the CRC32 of its bytes?"""
    head = os.pread(fd, 19, offset)
    size = int.from_bytes(head[9:13], "little") if len(head) == 19 else 0
    event = os.pread(fd, size, offset) if 23 <= size < 1 << 16 else b""
    return len(event) == size >= 23 and zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little")


def read_part(path: str | Path, begin: int | None, end: int | None, *,
              decoder: BinlogDecoder | None = None, **decoder_options: Any) -> Iterator[Event]:
    """The events of the event groups that start in [begin, end) of one file (None: its
    start, its end), offsets from split_points. Raises, naming the file, if the first group
    at or after `end` does not start exactly there: the parts would not join."""
    events = read_events(path, decoder=decoder, start=begin, **decoder_options)
    if end is None:
        return events
    return _part(events, path, end)


def _part(items: Iterator[Any], path: str | Path, end: int) -> Iterator[Any]:
    """`items` up to the first event group at or after `end`, which must start there."""
    for ev in items:
        t = type(ev)
        if t is list or t is int:  # (merged in C: never a group's first event)
            yield ev
            continue
        if ev.offset >= end and opens_group(ev):
            if ev.offset == end:
                return
            break
        yield ev
    raise DecodeError(f"no event group starts at {end}, where the next part of the file was "
                      "to begin: its parts do not join",
                      file=str(path), offset=end,
                      hint="read the file whole (Spark: option splitBytes=0) and report it")


def read_files(paths: Iterable[str | Path], **decoder_options: Any) -> Iterator[Event]:
    """Events of several files in order, one decoder each (a file starts with its own FDE)."""
    for p in paths:
        yield from read_events(p, **decoder_options)


def read_range(path: str | Path, start: int, end: int, **decoder_options: Any) -> Iterator[Event]:
    """The events in [start, end) of one binlog file (start and end on event boundaries),
    after its header events, which tell the decoder the format (and the encryption)."""
    path = Path(path)
    dec = BinlogDecoder(file=path.name, **decoder_options)
    try:
        with path.open("rb") as fh:
            _decode_header_events(fh, dec, path, start)
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


def locate_prepared(paths: Iterable[str | Path], xid: str, *,
                    head: tuple[str | Path, int] | None = None, **decoder_options: Any) -> Any:
    """The PREPARE group of `xid` left pending at the end of one of `paths` (newest file
    first; first of all in `head`, a file's bytes before an offset), as a `PreparedRange`;
    None if none has it. For a reader of a later file (or part of a file) that meets the
    XA COMMIT. Rows are not decoded (only event headers and group boundaries)."""
    from ..cdc.changes import ChangeTracker, no_table

    walks: list[Iterable[Event]] = []
    if head is not None:
        walks.append(read_range(head[0], 4, head[1], table_filter=no_table, **decoder_options))
    walks += [read_events(path, table_filter=no_table, **decoder_options)
              for path in reversed([Path(p) for p in paths])]
    for events in walks:  # (generators: a walk starts only when the one before missed)
        tracker = ChangeTracker()
        for ev in events:
            tracker.observe(ev, keep=False)
        for rng in tracker.xa.ranges():
            if rng.xid == xid:
                return rng
    return None
