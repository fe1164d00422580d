"""The sans-IO binlog decoder: bytes in, typed events out.

One decoder serves binlog files (feed raw file bytes, magic included) and live replication
streams (hand it one event at a time). It tracks the FORMAT_DESCRIPTION event (post-header
lengths and checksum algorithm), TABLE_MAPs, the current file name, encryption and payloads.
Nothing here opens files, touches sockets, sleeps or logs.
"""
from __future__ import annotations

import struct
import zlib
from functools import cache
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

from .._util.recent import make_room
from .._util.versions import version_tuple
from ..errors import ChecksumError, DecodeError, TruncatedError, UnknownEventError
from .constants import (
    BINLOG_MAGIC, CHECKSUM_LEN, HEADER_LEN, ROWS_EVENT_TYPES, ChecksumAlg, EventFlag, EventType as E,
)
from .codecs import control, query, rows
from .events import (Event, EventBase, FormatDescriptionEvent, MariaGtidEvent, TransactionPayloadEvent,
                     UnknownEvent, XidEvent)
from .._speedups.native import switches
from .header import EventHeader, parse_header, make_header
from .left_out import LeftOut
from .table_map import TableMapEvent, decode_table_map

if TYPE_CHECKING:
    from .encryption import BinlogDecryptor

try:  # ISA-L's CRC32 (carry-less multiply): faster than zlib's, the same checksum
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - isal is a dependency where it has wheels
    from zlib import crc32 as _crc32

_U32 = struct.Struct("<I")

# FDE post-header: binlog version 2 + server version 50 + create timestamp 4 + header length 1
_FDE_FIXED = 57

# Types whose bodies carry no row data and are handed on as opaque events.
_OPAQUE_TYPES = frozenset({
    E.START_V3, E.LOAD, E.SLAVE, E.CREATE_FILE, E.APPEND_BLOCK, E.EXEC_LOAD, E.DELETE_FILE,
    E.NEW_LOAD, E.BEGIN_LOAD_QUERY, E.TRANSACTION_CONTEXT, E.VIEW_CHANGE, E.IGNORABLE,
})


_MARIADB_COMPRESSED = frozenset(range(E.MARIADB_QUERY_COMPRESSED, E.MARIADB_DELETE_ROWS_COMPRESSED + 1))
# Binlogs whose rows events take the fast path (rows.fast_rows): CRC32 or no checksums.
_FAST_CHECKSUMS = frozenset({ChecksumAlg.CRC32, ChecksumAlg.OFF})


class PacketRun(Protocol):
    """The C iterator of `BinlogDecoder.scan_packets`: where it stands in the receive buffer
    (after the last event it handed out or passed over) and the sequence id of the next
    packet; the decoder's events and rows passed over so far (`LeftOut.skip`), and whether
    the events still to come are passed over (`skip`, which a group run's caller sets)."""

    pos: int
    seq: int
    skipped: int
    skipped_rows: int
    skip: int

    def __iter__(self) -> Iterator[Event]: ...

    def __next__(self) -> Event: ...


class RunMerge:
    """What `BinlogDecoder.merged_events` makes of the kept rows events of the C scanner's
    runs in a file (and of the TABLE_MAPs between them), in place of handing them out: the
    documented internal hook of the fast drivers, which own one each (cdc/runs.py's
    RecordRuns, cdc/arrow.py's file_batches); nothing else should make one.

    records: ("records", table filter): lists of change records, made in C as
    cdc.changes.ChangeTracker makes them, with the constants it keeps under this key.
    segments: (CdcSegments, before column, after column, most rows, most bytes): the events
    go into that Arrow batch, and the count of those taken comes out when the batch is full
    or the run ends. state(): between events, the open transaction's GTID and whether
    events may be merged (not inside an XA PREPARE, whose records are held). `events`
    counts the events merged so far. Without the C scanner (or in a run it cannot take)
    events come as events. Why: a big row is an event of its own, and the Python step per
    event weighs on a one-table read."""

    __slots__ = ("records", "segments", "state", "events")

    def __init__(self, state: Callable[[], tuple[str | None, bool]], *,
                 records: tuple[str, Any] | None = None,
                 segments: tuple[Any, Any, Any, int, int] | None = None) -> None:
        if (records is None) == (segments is None):
            raise ValueError("a RunMerge makes records or segments: give one of them")
        self.records = records
        self.segments = segments
        self.state = state
        self.events = 0


class TableResolver(Protocol):
    """Fills in what a TABLE_MAP lacks (names, signedness, charsets) from schema history.

    A resolver may also define `on_query(ev) -> DdlChange | None`, called for every QUERY
    event, to replay DDL; its answer is stored on `ev.ddl`.
    """

    def resolve(self, table_map: TableMapEvent) -> TableMapEvent: ...


def _checksum_aware(version: str) -> bool:
    v = version_tuple(version)
    if "mariadb" in version.lower():
        return v >= (5, 3, 0)
    return v >= (5, 6, 1)


class BinlogDecoder:
    """Decode binlog events; see `feed`/`events` (files) and `decode_event` (streams)."""

    def __init__(
        self,
        *,
        file: str | None = None,
        verify_checksums: bool = True,
        keys: dict[int, bytes] | None = None,
        allow_unknown: bool = False,
        checksum: int | None = None,
        table_resolver: TableResolver | None = None,
        table_filter: Callable[[str, str], bool] | None = None,
        json_images: bool | str = False,
        left_out: LeftOut | None = None,
        count_filtered: bool = False,
        skip_filtered: bool = False,
    ) -> None:
        self.file = file
        self.json_images = json_images
        """Rows events carry each image as its CDC JSON text (UTF-8 bytes) instead of value
        tuples, written in C from the row bytes (the Arrow/Spark path; needs the extension,
        else values as usual). "lines": the same, for the JSON lines of `decode` and
        `stream` (cdcjson.records_jsonl copies them): a table with JSON columns, whose CDC
        JSON has their text where the lines have the document, keeps value tuples."""
        self.verify_checksums = verify_checksums
        self.verified_until = -1
        """File offset below which every event's CRC32 is known to match (checked ahead by
        files.py's CrcAhead thread): those are not checked again. Set by the reader that
        knows; -1 (the default) checks every event."""
        self.keys = keys
        self.allow_unknown = allow_unknown
        self.table_filter = table_filter
        self.left_out = (left_out if left_out is not None
                         else LeftOut(count=count_filtered, skip=skip_filtered))
        """What is done with the left-out tables' rows events (see LeftOut); count_filtered
        and skip_filtered are the shorthand for a fixed one. Set by the decoder's owner: its
        maker, or a driver that takes the decoder to read with (cdc/runs.py's RecordRuns,
        cdc/arrow.py's file_batches) before it reads."""
        self.fde: FormatDescriptionEvent | None = None
        self.checksum_alg = ChecksumAlg.UNDEF if checksum is None else checksum
        self.tables: dict[int, TableMapEvent] = {}
        self._tm_cache: dict[bytes, TableMapEvent] = {}
        """Parsed TABLE_MAPs by their body bytes: a repeat is the cached map moved to its
        place (_dispatch, and the C scanner, which hands it to `table_resolver` too)."""
        self._tm_shapes: dict[bytes, TableMapEvent] = {}
        """The same maps by their body after the table id: a table the server numbered
        anew (its table cache evicted it, FLUSH TABLES) is the same parse and decoders."""
        self._rows_phl: dict[int, int] = {}  # rows event type -> post-header length (per FDE)
        self._decryptor: BinlogDecryptor | None = None
        # The common rows event framed, checked and decoded in one C call (rows.fast_rows's
        # twin: whatever it does not take goes the Python way below).
        c = switches.c
        self._scanner = None if c is None or not switches.scanner else c.RowsScanner(
            make_header, rows.make_rows_event, ("insert", "update", "delete"),
            self.tables, self._rows_phl, *_group_event_makers(c))
        self.table_resolver = table_resolver  # (the scanner's too)
        # File mode: the chunk being decoded is kept as given (never copied); only an event
        # cut by the chunk's end is carried over, as pieces joined once it is complete.
        self._buf: bytes | bytearray | memoryview = b""
        self._buf_start = 0  # file offset of _buf[0]
        self._read = 0  # bytes of _buf already consumed
        self._carry: list[bytes | bytearray | memoryview] = []  # unconsumed bytes just before _buf[0]
        self._carry_len = 0
        self._borrowed = False  # _buf is the caller's memory, reused after the next feed
        self._magic_checked = False
        self._file_mode = False
        self.events_decoded = 0
    # -- file mode -------------------------------------------------------------------------
    def feed(self, data: bytes | bytearray | memoryview, *, borrowed: bool = False) -> None:
        """Append raw file bytes (the first call starts with the 4-byte binlog magic).

        borrowed: the caller reuses `data`'s memory after the next feed (read_events reads
        into two buffers in turn). The decoder then copies only an event cut by the chunk's
        end, and nothing it hands out refers to the chunk: no fresh pages for every chunk and
        no copy of every event."""
        self._file_mode = True
        rest = len(self._buf) - self._read
        if rest:  # the old chunk ends inside an event (or the magic): carry those bytes
            tail = self._buf[self._read:] if self._read else self._buf
            self._carry.append(bytes(tail) if self._borrowed else tail)
            self._carry_len += rest
        self._buf_start += len(self._buf)
        self._buf = data if borrowed else bytes(data)  # no copy for bytes
        self._borrowed = borrowed
        self._read = 0

    def resume_at(self, offset: int) -> None:
        """Go on in file mode at `offset` (an event boundary), after the file's header
        events were handed to decode_event: the next bytes fed are the file's from there.
        For a reader of one part of a file (decode --jobs)."""
        self._file_mode = True
        self._magic_checked = True
        self._buf, self._buf_start, self._read, self._borrowed = b"", offset, 0, False
        self._carry.clear()
        self._carry_len = 0

    def _front(self, n: int) -> bytes | bytearray | memoryview:
        """The next n unconsumed bytes (the caller checked they exist): a slice of the chunk,
        or one bytes object joined from the carried pieces."""
        if not self._carry:
            return self._buf[self._read:self._read + n]
        if n <= self._carry_len:
            # A header inside the carried bytes: join only the pieces it spans (a 256 MiB
            # event arrives in 256 pieces; joining them all at every feed would be quadratic).
            got, pieces = 0, []
            for piece in self._carry:
                pieces.append(piece)
                got += len(piece)
                if got >= n:
                    break
            return b"".join(pieces)[:n]
        # one join (a join then `+` would hold the event three times over at the peak)
        return b"".join([*self._carry, self._buf[:n - self._carry_len]])

    def _consume(self, n: int) -> None:
        if self._carry:  # what is consumed always starts at the carried bytes
            self._read = n - self._carry_len
            self._carry.clear()
            self._carry_len = 0
        else:
            self._read += n

    def _event_size(self) -> int:
        if self._carry:
            size: int = _U32.unpack_from(self._front(13), 9)[0]
        else:
            size = _U32.unpack_from(self._buf, self._read + 9)[0]
        return size

    def events(self) -> Iterator[Event]:
        """Yield every complete event fed so far; keeps a partial tail for the next feed."""
        return self._events(None)  # type: ignore[return-value]  # (no merge: events only)

    def merged_events(self, merge: RunMerge) -> Iterator[Event | list[Any] | int]:
        """The fast drivers' hook (see RunMerge): `events()`, with the kept rows events of
        the C scanner's runs (and the TABLE_MAPs between them) merged as `merge` says: a
        list of change records or a count of events added to a batch in their place."""
        return self._events(merge)

    def _events(self, merge: RunMerge | None) -> Iterator[Event | list[Any] | int]:
        if not self._magic_checked:
            if self._carry_len + len(self._buf) - self._read < 4:
                return
            magic = self._front(4)
            if magic != BINLOG_MAGIC:
                raise DecodeError(f"not a binlog file: starts with {magic.hex()}, "
                                  f"expected {BINLOG_MAGIC.hex()}", file=self.file, offset=0)
            self._consume(4)
            self._magic_checked = True
        fast_types = rows.FAST_TYPES
        scanner = self._scanner
        while True:
            carried = bool(self._carry)
            if (scanner is not None and not carried and self._decryptor is None
                    and self.checksum_alg in _FAST_CHECKSUMS):
                # A run of common rows events lying whole in the chunk, in C: stops at the
                # first event it does not take, which the loop below decodes.
                left_out = self.left_out
                run = scanner.scan(self._buf, self._read, self._buf_start, self.file,
                                   self.checksum_alg == ChecksumAlg.CRC32, self.verify_checksums,
                                   self.table_filter, left_out.count, self.json_images,
                                   left_out.skip, self.verified_until, self._tm_cache)
                if merge is not None:
                    if merge.records is not None:
                        run.records = merge.records
                    else:
                        run.segments = merge.segments
                    state = merge.state
                    run.gtid, run.merge = state()
                for ev in run:
                    self._read = run.pos
                    t = type(ev)
                    if t is list or t is int:  # records mode's list, segments mode's count
                        n = run.batch_events
                        self.events_decoded += n
                        merge.events += n  # type: ignore[union-attr]  # (only when merging)
                        yield ev
                        continue
                    self.events_decoded += 1
                    yield ev
                    if merge is not None:  # (the event may open or close one)
                        run.gtid, run.merge = state()
                self._read = run.pos  # (after the events it passed over, if any)
            buf, read = self._buf, self._read
            avail = self._carry_len + len(buf) - read
            if avail < HEADER_LEN:
                return
            size = self._event_size() if carried else _U32.unpack_from(buf, read + 9)[0]
            offset = self._buf_start + read - self._carry_len
            if size < HEADER_LEN:
                raise DecodeError(f"event size {size} is smaller than the 19-byte header",
                                  file=self.file, offset=offset)
            if avail < size:
                return
            if carried:
                raw = self._front(size)  # the one copy of an event cut by a chunk end
                self._consume(size)
            else:
                # The event lies whole in the chunk (a slice of it, no copy); a common rows
                # event goes straight to the rows fast path (the C scanner's Python twin).
                raw = buf[read:read + size]
                self._read = read + size
                if (buf[read + 4] in fast_types and self._decryptor is None
                        and self.checksum_alg in _FAST_CHECKSUMS):
                    try:
                        ev = self._fast_rows(raw, parse_header(raw), offset)
                    except DecodeError as exc:
                        if exc.offset is None or exc.file is None:
                            raise exc.located(file=self.file, offset=offset) from None
                        raise
                    if ev is not None:
                        del raw
                        yield ev
                        continue
            events = self.decode_event(raw, offset)
            del raw  # not kept alive while the consumer works and the next event is read
            yield from events

    def close(self) -> None:
        """Call at end of input: leftover bytes mean the file ends inside an event."""
        left = self._carry_len + len(self._buf) - self._read
        offset = self.offset
        if not self._magic_checked and left < 4:
            raise TruncatedError(f"file of {left} bytes is too short to be a binlog",
                                 file=self.file, offset=0)
        if left:
            size = self._event_size() if left >= 13 else None
            detail = f"an event of {size} bytes" if size else "a partial event header"
            raise TruncatedError(f"file ends inside {detail}: {left} bytes left",
                                 file=self.file, offset=offset)

    @property
    def count_filtered(self) -> bool:
        """left_out.count (read only: the owner hands the decoder a LeftOut)."""
        return self.left_out.count

    @property
    def skip_filtered(self) -> bool:
        """left_out.skip (read only, as count_filtered)."""
        return self.left_out.skip

    @property
    def events_skipped(self) -> int:
        """Rows events of filtered tables passed over so far (`left_out.skip`)."""
        return 0 if self._scanner is None else self._scanner.skipped

    @property
    def rows_skipped(self) -> int:
        """The rows of those events (counted with `left_out.count`, else 0)."""
        return 0 if self._scanner is None else self._scanner.skipped_rows

    @property
    def offset(self) -> int:
        """File offset of the next undecoded byte (a safe resume point in file mode)."""
        return self._buf_start + self._read - self._carry_len

    # -- stream mode -----------------------------------------------------------------------
    def scan_packets(self, buf: bytearray, start: int, end: int, seq: int, *,
                     group: bool = False, skip: bool | None = None) -> PacketRun | None:
        """The common rows events of a replica's received event packets in buf[start:end]
        (sequence ids from `seq` on), framed, checked and decoded by one C iterator that
        stops at the first packet it does not take; its `pos` and `seq` say where the stream
        stands after the events it handed out. None when this decoder cannot (no C
        extension, an encrypted binlog, a checksum it does not know): read packet by packet.

        group: the XID and MariaDB GTID events, and the TABLE_MAPs parsed before (as
        decode_event takes them), come in the run too. Its `skip` then says, event by event,
        whether left-out tables' rows are passed over (`skip` when it starts, else the
        decoder's left_out.skip): the caller sets it as those events open and close
        transactions."""
        scanner = self._scanner
        if scanner is None or self._decryptor is not None or self.checksum_alg not in _FAST_CHECKSUMS:
            return None
        left_out = self.left_out
        args = (buf, start, end, seq, self.file, self.checksum_alg == ChecksumAlg.CRC32,
                self.verify_checksums, self.table_filter, left_out.count, self.json_images,
                left_out.skip if skip is None else skip)
        run: PacketRun | None = (scanner.scan_packets(*args, self._tm_cache) if group
                                 else scanner.scan_packets(*args))
        return run

    def decode_event(self, raw: bytes | bytearray | memoryview, offset: int | None = None) -> list[Event]:
        """Decode one whole event. Returns a list: a TRANSACTION_PAYLOAD expands to itself
        followed by its inner events."""
        if (offset is None and self._scanner is not None and self._decryptor is None
                and self.checksum_alg in _FAST_CHECKSUMS):
            # A replica's common rows event, decoded where it lies (its receive buffer:
            # nothing of it is kept) in one C call; None: anything else, decoded below.
            ev = self._scanner.one(raw, self.file, self.checksum_alg == ChecksumAlg.CRC32,
                                   self.verify_checksums, self.table_filter,
                                   self.left_out.count, self.json_images, self._tm_cache)
            if ev is not None:
                self.events_decoded += 1
                return [ev]
        try:
            return self._decode(raw, offset)
        except DecodeError as exc:
            if offset is None:  # a replica's stream: the event's header says where it lies
                raise _stream_located(exc, self.file, raw) from None
            if exc.offset is None or exc.file is None:
                raise exc.located(file=self.file, offset=offset) from None
            raise

    @property
    def table_resolver(self) -> TableResolver | None:
        """Fills in what each TABLE_MAP lacks (schema history); the C scanner calls it too."""
        return self._table_resolver

    @table_resolver.setter
    def table_resolver(self, resolver: TableResolver | None) -> None:
        self._table_resolver = resolver
        if self._scanner is not None:
            self._scanner.resolve = None if resolver is None else resolver.resolve

    def _decode(self, raw: bytes | bytearray | memoryview, offset: int | None) -> list[Event]:
        if len(raw) < HEADER_LEN:
            raise TruncatedError(f"event of {len(raw)} bytes is shorter than its header")
        if self._decryptor is not None and offset is not None:
            raw = self._decryptor.decrypt_event(bytes(raw), offset)
        elif raw[4] in rows.FAST_TYPES and self.checksum_alg in _FAST_CHECKSUMS:
            # The common rows event, decoded where it lies (a replica's receive buffer too:
            # nothing of it is kept).
            header = parse_header(raw)
            if header.event_size == len(raw):
                ev = self._fast_rows(raw, header, offset)
                if ev is not None:
                    return [ev]
        if not isinstance(raw, bytes):
            raw = bytes(raw)
        header = parse_header(raw)
        code = header.type_code
        tname = E.name_of(code)
        if header.event_size != len(raw):
            raise TruncatedError(f"{tname} header says {header.event_size} bytes, "
                                 f"have {len(raw)}", event_type=tname)
        if offset is None:
            offset = header.log_pos - header.event_size if header.log_pos else 0
            end = header.log_pos
        else:
            end = offset + header.event_size
        self.events_decoded += 1
        if code == E.FORMAT_DESCRIPTION:
            return [self._decode_fde(raw, header, offset, end)]
        body_end = self._verify_checksum(raw, tname, offset)
        base: EventBase = {"header": header, "file": self.file, "offset": offset, "end": end}
        try:
            if code in ROWS_EVENT_TYPES and code not in _MARIADB_COMPRESSED:
                # The hot path: rows codecs read the event in place (a body copy would double
                # the memory of a 32 MiB event and cost a pass over every byte).
                return [self._decode_rows(code, raw, base, HEADER_LEN, body_end)]
            if code in _MARIADB_COMPRESSED:
                return self._decode_compressed(code, raw, base, offset)
            return self._dispatch(code, raw[HEADER_LEN:body_end], base, offset)
        except DecodeError as exc:
            if exc.event_type is None:
                raise type(exc)(exc.reason, file=exc.file, offset=exc.offset, event_type=tname,
                                hint=exc.hint or None) from None
            raise
        except (IndexError, struct.error, ValueError, OverflowError, UnicodeDecodeError) as exc:
            # A codec met bytes its bounds checks did not foresee: still a named, located error.
            raise DecodeError(f"malformed event body ({type(exc).__name__}: {exc})",
                              event_type=tname, hint="the event is malformed or corrupt") from None

    def _fast_rows(self, raw: bytes | bytearray | memoryview, header: EventHeader, offset: int | None) -> Event | None:
        """A common rows event in one step (rows.fast_rows), checksum first; None: the
        general path decodes it (and raises what is wrong)."""
        size = len(raw)
        tail = CHECKSUM_LEN if self.checksum_alg == ChecksumAlg.CRC32 else 0
        if size < HEADER_LEN + tail:
            return None
        if tail and self.verify_checksums and (offset is None or offset + size > self.verified_until):
            with memoryview(raw) as view:
                if _crc32(view[:-4]) != _U32.unpack_from(raw, size - 4)[0]:
                    return None
        code = header.type_code
        phl = self._rows_phl.get(code)
        if phl is None:
            phl = self._rows_phl[code] = self._post_header_len(code, 10 if code in (
                E.WRITE_ROWS_V2, E.UPDATE_ROWS_V2, E.DELETE_ROWS_V2) else 8)
        if offset is None:  # a stream: the header's log_pos is where the event ends
            end = header.log_pos
            offset = end - size if end else 0
        else:
            end = offset + size
        ev = rows.fast_rows(code, raw, header, self.file, offset, end, phl, self.tables,
                            HEADER_LEN, size - tail, self.table_filter,
                            self.left_out.count, self.json_images)
        if ev is not None:
            self.events_decoded += 1
        return ev

    def _decode_compressed(self, code: int, raw: bytes, base: EventBase, offset: int) -> list[Event]:
        """MariaDB compressed QUERY/rows events: the CRC (verified) covers the compressed
        bytes; decode the plain twin, keeping the on-disk header."""
        from .compression import uncompress_mariadb_event

        raw = uncompress_mariadb_event(
            raw, post_header_len=self._post_header_len(code, 13 if code == E.MARIADB_QUERY_COMPRESSED else 8),
            checksum_len=CHECKSUM_LEN if self.checksum_alg == ChecksumAlg.CRC32 else 0)
        code = raw[4]
        body = raw[HEADER_LEN:-CHECKSUM_LEN] if self.checksum_alg == ChecksumAlg.CRC32 else raw[HEADER_LEN:]
        events = self._dispatch(code, body, base, offset)
        for ev in events:
            if hasattr(ev, "compressed"):
                ev.compressed = True
        return events

    def _verify_checksum(self, raw: bytes, tname: str, offset: int) -> int:
        """Check the CRC32 (if the binlog has them); returns where the body ends."""
        if self.checksum_alg == ChecksumAlg.CRC32:
            if len(raw) < HEADER_LEN + CHECKSUM_LEN:
                raise TruncatedError(f"{tname} too short for its checksum", event_type=tname)
            if self.verify_checksums and offset + len(raw) > self.verified_until:
                expected = _U32.unpack_from(raw, len(raw) - 4)[0]
                with memoryview(raw) as view:
                    actual = _crc32(view[:-4])
                if expected != actual:
                    raise ChecksumError(f"CRC32 mismatch: stored 0x{expected:08x}, "
                                        f"computed 0x{actual:08x}", event_type=tname)
            return len(raw) - CHECKSUM_LEN
        return len(raw)

    def _decode_fde(self, raw: bytes, header: EventHeader, offset: int, end: int) -> FormatDescriptionEvent:
        body = raw[HEADER_LEN:]
        if len(body) < _FDE_FIXED:
            raise TruncatedError("FORMAT_DESCRIPTION body too short", event_type="FORMAT_DESCRIPTION")
        binlog_version = int.from_bytes(body[:2], "little")
        server_version = bytes(body[2:52]).split(b"\0", 1)[0].decode("ascii", "replace")
        create_ts = int.from_bytes(body[52:56], "little")
        header_len = body[56]
        if binlog_version != 4 or header_len != HEADER_LEN:
            raise DecodeError(f"binlog format v{binlog_version} with a {header_len}-byte header "
                              "is not supported (MySQL 3.23/4.x)", event_type="FORMAT_DESCRIPTION")
        if _checksum_aware(server_version):
            alg = body[-5]
            post = bytes(body[_FDE_FIXED:-5])
            if alg == ChecksumAlg.CRC32 and self.verify_checksums:
                # The CRC was computed before the server set LOG_EVENT_BINLOG_IN_USE_F.
                check = bytearray(raw[:-4])
                flags = int.from_bytes(check[17:19], "little") & ~EventFlag.BINLOG_IN_USE
                check[17:19] = flags.to_bytes(2, "little")
                expected = int.from_bytes(raw[-4:], "little")
                if zlib.crc32(check) != expected:
                    raise ChecksumError("CRC32 mismatch in FORMAT_DESCRIPTION",
                                        event_type="FORMAT_DESCRIPTION")
            elif alg not in (ChecksumAlg.OFF, ChecksumAlg.CRC32):
                raise DecodeError(f"unknown checksum algorithm {alg}", event_type="FORMAT_DESCRIPTION")
        else:
            alg = ChecksumAlg.UNDEF
            post = bytes(body[_FDE_FIXED:])
        fde = FormatDescriptionEvent(
            header=header, file=self.file, offset=offset, end=end, binlog_version=binlog_version,
            server_version=server_version, create_timestamp=create_ts, header_length=header_len,
            post_header_lengths=post, checksum_alg=alg)
        self.fde = fde
        self._rows_phl.clear()
        self.checksum_alg = alg if alg != ChecksumAlg.UNDEF else ChecksumAlg.OFF
        self.tables.clear()
        self._tm_cache.clear()
        self._tm_shapes.clear()
        return fde

    def _post_header_len(self, code: int, default: int) -> int:
        if self.fde is None:
            return default
        n = self.fde.post_header_len(code)
        return default if n is None else n

    def _map_table(self, tm: TableMapEvent) -> None:
        """Make `tm` the map of its table id, as the last one mapped (the C scanner moves a
        repeat to the end too). Why bounded: a server that keeps numbering tables anew
        would grow `tables` by an id per transaction for a whole binlog file. What goes is
        the ids mapped longest ago: a rows event refers to a map of its own statement,
        always among the last ones."""
        tables = self.tables
        if tables.pop(tm.table_id, None) is None:
            make_room(tables)
        tables[tm.table_id] = tm

    def _table_map(self, body: bytes, base: EventBase, post_header_len: int) -> TableMapEvent:
        """A TABLE_MAP whose bytes were not met before: parsed, or, when only its table id
        is new, the earlier map of the same bytes renumbered (sharing its parse and compiled
        decoders). Why: a server with more tables than its table cache numbers a table anew
        each time it opens it again, and a parse and new decoders cost far more than a
        copy, for every transaction that touches such a table."""
        id_len = 4 if post_header_len == 6 else 6
        shape = bytes(body[id_len:])
        known = self._tm_shapes.get(shape)
        if known is not None:
            return known.renumbered(int.from_bytes(body[:id_len], "little"), base["header"],
                                    base["file"], base["offset"], base["end"])
        tm = decode_table_map(memoryview(body), base, post_header_len,
                              mariadb=self.fde is not None and self.fde.is_mariadb)
        make_room(self._tm_shapes)
        self._tm_shapes[shape] = tm
        return tm

    def _dispatch(self, code: int, body: bytes, base: EventBase, offset: int) -> list[Event]:
        if code in ROWS_EVENT_TYPES:  # MariaDB compressed rows, after uncompressing
            return [self._decode_rows(code, body, base, 0, len(body))]
        if code == E.TABLE_MAP:
            cached = self._tm_cache.get(body)
            if cached is not None:
                # Same bytes as an earlier TABLE_MAP: reuse its parse (and compiled decoders).
                tm = cached.moved(base["header"], base["file"], base["offset"], base["end"])
            else:
                tm = self._table_map(body, base, self._post_header_len(code, 8))
                make_room(self._tm_cache)
                self._tm_cache[body] = tm
            if self.table_resolver is not None:
                tm = self.table_resolver.resolve(tm)
            self._map_table(tm)
            return [tm]
        simple = _SIMPLE.get(code)
        if simple is not None:
            return [simple(body, base)]
        if code == E.QUERY:
            ev = query.decode_query(body, base, self._post_header_len(code, 13))
            on_query = getattr(self.table_resolver, "on_query", None)
            if on_query is not None:
                # The schema history applies DDL at this exact position (files and streams alike).
                ev.ddl = on_query(ev)
            return [ev]
        if code == E.EXECUTE_LOAD_QUERY:
            # A QUERY event with LOAD DATA fields (file id, offsets, duplicates) in its post-header.
            ev = query.decode_query(body, base, self._post_header_len(code, 26))
            ev.status_vars["load_file_id"] = int.from_bytes(body[13:17], "little")
            return [ev]
        if code == E.ROTATE:
            rotate = control.decode_rotate(body, base, self._post_header_len(code, 8))
            if not self._file_mode and (rotate.header.flags & EventFlag.ARTIFICIAL
                                        or rotate.header.log_pos == 0):
                # A replication stream starts (or switches files) with an artificial ROTATE.
                self.file = rotate.next_file
                rotate.file = rotate.next_file
            return [rotate]
        if code == E.MARIADB_START_ENCRYPTION:
            started = control.decode_start_encryption(body, base)
            self._start_encryption(body)
            return [started]
        if code == E.TRANSACTION_PAYLOAD:
            return self._decode_payload(body, base)
        if code in _OPAQUE_TYPES:
            return [control.decode_opaque(code, body, base)]
        if self.allow_unknown or base["header"].flags & EventFlag.IGNORABLE:
            # LOG_EVENT_IGNORABLE_F: the server itself says replicas may pass it over, but
            # binlake still hands it on so nothing disappears silently.
            return [UnknownEvent(**base, body=bytes(body))]
        raise UnknownEventError(f"unknown event type {code}", event_type=E.name_of(code))

    def _decode_rows(self, code: int, body: bytes, base: EventBase, start: int, end: int) -> Event:
        """Rows of body[start:end]."""
        phl = self._post_header_len(code, 10 if code in (E.WRITE_ROWS_V2, E.UPDATE_ROWS_V2,
                                                       E.DELETE_ROWS_V2, E.PARTIAL_UPDATE_ROWS) else 8)
        head = rows.parse_rows_header(body, phl, start)
        table_id = head[0]
        table = self.tables.get(table_id)
        if table is None:
            raise DecodeError(f"rows event for table id {table_id} without a preceding TABLE_MAP",
                              event_type=E.name_of(code),
                              hint="start reading at a transaction boundary (a GTID or BEGIN event)")
        if self.table_filter is not None and not self.table_filter(table.schema, table.table):
            # The user asked for other tables only: keep the event, skip decoding its rows
            # (or only count them, for a replica's resume point).
            if self.left_out.count:
                return rows.decode_rows(code, body, base, phl, table, header=head, start=start,
                                        end=end, count_only=True)
            return rows.rows_event(base, rows.KIND[code], table_id, head[1], table, [], head[2],
                                   code, filtered_rows=0)
        return rows.decode_rows(code, body, base, phl, table, json_images=self.json_images,
                                header=head, start=start, end=end)

    def _decode_payload(self, body: bytes, base: EventBase) -> list[Event]:
        from .compression import iter_transaction_events, parse_transaction_payload

        tp = parse_transaction_payload(body)
        outer = TransactionPayloadEvent(**base, compression=tp.compression,
                                        payload_size=len(tp.payload),
                                        uncompressed_size=tp.uncompressed_size)
        out: list[Event] = [outer]
        saved_alg = self.checksum_alg
        self.checksum_alg = ChecksumAlg.OFF  # inner events carry no checksum
        try:
            for i, (_, raw) in enumerate(iter_transaction_events(tp)):
                for ev in self._decode(raw, base["offset"]):
                    ev.end = base["end"]
                    ev.inner_index = i
                    out.append(ev)
        finally:
            self.checksum_alg = saved_alg
        outer.event_count = len(out) - 1
        return out

    def _start_encryption(self, body: bytes) -> None:
        from .encryption import BinlogDecryptor

        if not self.keys:
            raise DecodeError("the binlog is encrypted and no key was given",
                              event_type="START_ENCRYPTION",
                              hint="pass --key-file with the server's file_key_management key file")
        self._decryptor = BinlogDecryptor(body, self.keys)


_SIMPLE: dict[int, Callable[[Any, EventBase], Event]] = {
    E.STOP: control.decode_stop,
    E.XID: control.decode_xid,
    E.INTVAR: control.decode_intvar,
    E.RAND: control.decode_rand,
    E.USER_VAR: control.decode_user_var,
    E.INCIDENT: control.decode_incident,
    E.HEARTBEAT: control.decode_heartbeat,
    E.HEARTBEAT_V2: control.decode_heartbeat_v2,
    E.ROWS_QUERY: control.decode_rows_query,
    E.MARIADB_ANNOTATE_ROWS: control.decode_annotate_rows,
    E.MARIADB_BINLOG_CHECKPOINT: control.decode_binlog_checkpoint,
    E.XA_PREPARE: control.decode_xa_prepare,
}


@cache
def _group_event_makers(c: Any) -> tuple[Any, ...]:
    """XidEvent, MariaGtidEvent and TableMapEvent makers for the C scanner of extension `c`,
    which fills the fields in this order (event_rows.h: scan_group_event, scan_table_map); a
    field added to any of these classes fails here, at import, not with a wrong event."""
    return (c.SlotMaker(XidEvent, ("header", "file", "offset", "end", "inner_index", "xid")),
            c.SlotMaker(MariaGtidEvent, (
                "header", "file", "offset", "end", "inner_index", "domain_id", "server_id",
                "seq_no", "flags", "commit_id", "xid", "flags_extra", "extra_engines",
                "sa_seq_no", "thread_id")),
            c.SlotMaker(TableMapEvent, (
                "header", "file", "offset", "end", "inner_index", "table_id", "flags", "schema",
                "table", "columns", "primary_key", "primary_key_prefixes",
                "has_optional_metadata", "row_decoders")))


if switches.c is not None:
    _group_event_makers(switches.c)  # (checked at import)


def _register_gtid_codecs() -> None:
    """GTID codecs live in codecs/gtid.py; bound here so the table stays in one place."""
    from .codecs import gtid

    _SIMPLE.update({
        E.GTID: gtid.decode_gtid,
        E.ANONYMOUS_GTID: gtid.decode_gtid,
        E.GTID_TAGGED: gtid.decode_gtid_tagged,
        E.PREVIOUS_GTIDS: gtid.decode_previous_gtids,
        E.MARIADB_GTID: gtid.decode_maria_gtid,
        E.MARIADB_GTID_LIST: gtid.decode_maria_gtid_list,
    })


_register_gtid_codecs()


_STREAM_CHECKSUM_HINT = (
    "the event arrived corrupt: look at it in the primary's binlog (mariadb-binlog or "
    "mysqlbinlog at this offset); if it is whole there, the bytes were damaged on the way: "
    "start the stream again, it resumes before this event")


def _stream_located(exc: DecodeError, file: str | None, raw: Any) -> DecodeError:
    """A stream's decode error with the event's offset from its header (its end, log_pos,
    less its length), where the error does not name one. A checksum error says what to
    look at: the primary's copy, or the link. So does a length that disagrees with the
    packet (TruncatedError): a packet is a whole event, so that is damage, not an end."""
    offset = exc.offset
    if offset is None and len(raw) >= HEADER_LEN:
        log_pos = _U32.unpack_from(raw, 13)[0]
        if log_pos >= len(raw):
            offset = log_pos - len(raw)
    return exc.located(file=file, offset=offset,
                       hint=_STREAM_CHECKSUM_HINT if isinstance(exc, (ChecksumError, TruncatedError))
                       else None)
