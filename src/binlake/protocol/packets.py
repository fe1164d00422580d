"""Packet framing: 3-byte length + 1-byte sequence id, payloads of 2^24-1 bytes split.

A logical payload of N bytes travels as physical packets of at most MAX_PAYLOAD (0xFFFFFF) bytes;
a physical packet of exactly MAX_PAYLOAD means "more follows", so a payload whose length is a
multiple of MAX_PAYLOAD ends with an empty packet. Sequence ids count up (mod 256) across both
directions within one command and restart at 0 for the next command.

PacketStream is sans-IO but built for the binlog hot path: the caller receives straight into its
buffer (``recv_buffer()`` + ``commit(n)``, i.e. ``sock.recv_into``), and ``next_packet()`` returns
a memoryview slice of that buffer without copying. The view is valid only until the next call
that adds data (``recv_buffer``/``feed``), which may move bytes; use ``next_packet_copy()`` to keep
a payload longer.
"""
from __future__ import annotations

from ..errors import ProtocolError

HEADER_SIZE = 4
MAX_PAYLOAD = 0xFFFFFF

#: Default receive buffer: large enough that recv_into returns many small binlog packets at once.
DEFAULT_BUFFER_SIZE = 1 << 20
#: a sequence id no packet has: the next packet's id is taken as it comes (see resync)
_RESYNC = -1
#: Compact/grow before receiving when less than this is free at the tail.
_MIN_FREE = 64 * 1024


def packet_header(length: int, seq: int) -> bytes:
    """The 4-byte header of one physical packet."""
    return bytes((length & 0xFF, (length >> 8) & 0xFF, (length >> 16) & 0xFF, seq & 0xFF))


def frame_parts(payload: bytes | bytearray | memoryview, seq: int) -> tuple[list[bytes | memoryview], int]:
    """Split one logical payload into header/body pieces; returns (pieces, next_seq).

    Pieces are returned unjoined so that a 100 MiB payload is not copied again just to frame it.
    """
    view = memoryview(payload)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    n = len(view)
    parts: list[bytes | memoryview] = []
    pos = 0
    while True:
        size = min(n - pos, MAX_PAYLOAD)
        parts.append(packet_header(size, seq))
        if size:
            parts.append(view[pos:pos + size])
        seq = (seq + 1) & 0xFF
        pos += size
        if size < MAX_PAYLOAD:
            return parts, seq


def frame(payload: bytes | bytearray | memoryview, seq: int) -> tuple[bytes, int]:
    """Frame one logical payload as wire bytes; returns (bytes, next_seq)."""
    n = len(payload)
    if n < MAX_PAYLOAD:
        return packet_header(n, seq) + bytes(payload), (seq + 1) & 0xFF
    parts, seq = frame_parts(payload, seq)
    return b"".join(parts), seq


class PacketStream:
    """Sequence ids plus a reusable receive buffer for one connection (no I/O)."""

    __slots__ = ("seq", "check_sequence", "_buf", "_view", "_size", "_start", "_end", "_need",
                 "_assembling")

    def __init__(self, buffer_size: int = DEFAULT_BUFFER_SIZE, *, check_sequence: bool = True) -> None:
        #: the sequence id of the next packet, sent or received
        self.seq = 0
        self.check_sequence = check_sequence
        self._size = max(buffer_size, 2 * _MIN_FREE)
        self._buf = bytearray(self._size)
        self._view = memoryview(self._buf)
        self._start = 0  # first unread byte
        self._end = 0  # end of received bytes
        self._need = HEADER_SIZE  # bytes the current incomplete packet needs (from _start)
        self._assembling: bytearray | None = None  # a >16 MiB payload being reassembled

    # -- sending -------------------------------------------------------------------------------

    def reset_sequence(self) -> None:
        """A new command starts: sequence ids restart at 0."""
        self.seq = 0

    def resync(self) -> None:
        """Accept whatever sequence id the next received packet has, then count on from it.

        For packets sent outside the command flow (a semi-sync ACK goes out with id 0 in the
        middle of a binlog stream); servers differ in how they number what follows.
        """
        self.seq = _RESYNC

    def frame(self, payload: bytes | bytearray | memoryview) -> bytes:
        """Wire bytes for one logical payload, using and advancing the sequence id."""
        data, self.seq = frame(payload, self.seq)
        return data

    def frame_parts(self, payload: bytes | bytearray | memoryview) -> list[bytes | memoryview]:
        """Like frame() but unjoined, for large payloads (send each piece in turn)."""
        parts, self.seq = frame_parts(payload, self.seq)
        return parts

    # -- receiving -----------------------------------------------------------------------------

    @property
    def in_continuation(self) -> bool:
        """True while part of a 16 MiB+ payload has been read and the rest has not."""
        return self._assembling is not None

    def buffered(self) -> int:
        """Bytes received but not yet returned as packets."""
        return self._end - self._start

    def wanted(self) -> int:
        """Bytes that complete the packet next_packet() last waited for (never reads past it).

        For edges that must not over-read, e.g. a server before the TLS handshake: whatever
        follows an SSLRequest belongs to TLS, not to this stream.
        """
        return max(self._need - (self._end - self._start), 1)

    def take_buffered(self) -> bytes:
        """Remove and return every unread byte (e.g. TLS records that followed an SSLRequest)."""
        data = bytes(self._view[self._start:self._end])
        self._start = self._end = 0
        self._need = HEADER_SIZE
        return data

    def recv_buffer(self) -> memoryview:
        """Free space to receive into (``sock.recv_into(stream.recv_buffer())``, then commit).

        Invalidates memoryviews returned by earlier next_packet() calls.
        """
        start = self._start
        if start == self._end:
            self._start = self._end = start = 0
        if self._size - self._end < _MIN_FREE or start + self._need > self._size:
            self._make_room()
        return self._view[self._end:]

    def commit(self, n: int) -> None:
        """Record that n bytes were written at the start of the last recv_buffer()."""
        if n < 0 or self._end + n > self._size:
            raise ValueError(f"commit({n}) exceeds the receive buffer")
        self._end += n

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes (copying); for callers that get bytes rather than recv_into."""
        pos = 0
        n = len(data)
        while pos < n:
            space = self.recv_buffer()
            k = min(len(space), n - pos)
            space[:k] = data[pos:pos + k]
            self.commit(k)
            pos += k

    def _make_room(self) -> None:
        pending = self._end - self._start
        want = max(self._need, pending) + _MIN_FREE
        if want > self._size:
            size = max(want, self._size * 2)
            new = bytearray(size)
            new[:pending] = self._view[self._start:self._end]
            self._buf = new
            self._view = memoryview(new)
            self._size = size
        elif self._start:
            # same-length slice assignment is allowed while memoryviews are exported; overlapping
            # ranges go through a temporary copy (the bytearray copy is a plain memcpy)
            src = self._view[self._start:self._end]
            self._buf[:pending] = src if pending <= self._start else bytes(src)
        self._start = 0
        self._end = pending

    def next_packet(self) -> memoryview | None:
        """The next complete logical payload as a view into the buffer, or None if incomplete.

        The view is only valid until more data is received; continuation packets (payloads of
        16 MiB or more) are reassembled into a separate buffer, the one copy that is unavoidable.
        """
        buf = self._buf
        while True:
            start = self._start
            avail = self._end - start
            if avail < HEADER_SIZE:
                self._need = HEADER_SIZE
                return None
            length = buf[start] | (buf[start + 1] << 8) | (buf[start + 2] << 16)
            total = HEADER_SIZE + length
            if avail < total:
                self._need = total
                return None
            seq = buf[start + 3]
            if seq != self.seq and self.check_sequence and self.seq != _RESYNC:
                raise ProtocolError(
                    f"packet out of order: sequence id {seq}, expected {self.seq}",
                    hint="the connection is out of step; reconnect",
                )
            self.seq = (seq + 1) & 0xFF
            self._start = start + total
            self._need = HEADER_SIZE
            body = self._view[start + HEADER_SIZE:start + total]
            assembling = self._assembling
            if length == MAX_PAYLOAD:
                if assembling is None:
                    self._assembling = bytearray(body)
                else:
                    assembling += body
                continue
            if assembling is not None:
                assembling += body
                self._assembling = None
                return memoryview(assembling)
            return body

    def unread(self) -> tuple[bytearray, int, int, int] | None:
        """(buffer, start, end, sequence id of the next packet) of the bytes received and not
        yet returned, for a caller that frames whole packets itself (then `advance`); None
        while the framing is not plain: a 16 MiB+ payload half reassembled, the sequence id
        being resynchronised or not checked."""
        if self._assembling is not None or self.seq == _RESYNC or not self.check_sequence:
            return None
        return self._buf, self._start, self._end, self.seq

    def wants_more(self) -> bool:
        """No whole packet is received yet (the room the next one needs is then noted for
        recv_buffer): a caller that frames packets itself (`unread`) receives first."""
        start = self._start
        avail = self._end - start
        if avail < HEADER_SIZE:
            self._need = HEADER_SIZE
            return True
        buf = self._buf
        total = HEADER_SIZE + (buf[start] | (buf[start + 1] << 8) | (buf[start + 2] << 16))
        if avail < total:
            self._need = total
            return True
        return False

    def advance(self, pos: int, seq: int) -> None:
        """The caller of `unread` read whole packets up to buffer offset `pos`; `seq` is the
        sequence id of the next one."""
        if not self._start <= pos <= self._end or not 0 <= seq <= 0xFF:
            raise ValueError(f"advance({pos}, {seq}) outside the unread bytes "
                             f"[{self._start}, {self._end}]")
        self._start = pos
        self.seq = seq
        self._need = HEADER_SIZE

    def next_packet_copy(self) -> bytes | None:
        """Like next_packet() but an owned bytes object, safe to keep."""
        view = self.next_packet()
        return None if view is None else bytes(view)


class PacketEndpoint:
    """The byte plumbing both protocol sides share: received bytes go into `stream`, bytes to
    send queue in `_out` until the I/O edge takes them with `data_to_send()`."""

    stream: PacketStream
    _out: list[bytes | memoryview]

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Hand over received bytes (b"" is not end-of-file here; the caller handles EOF)."""
        self.stream.feed(data)

    def recv_buffer(self) -> memoryview:
        """Buffer to recv_into without copying; follow with commit(n)."""
        return self.stream.recv_buffer()

    def commit(self, n: int) -> None:
        self.stream.commit(n)

    def data_to_send(self) -> bytes:
        """Bytes queued for the peer (then forgotten here)."""
        if not self._out:
            return b""
        data = b"".join(self._out)
        self._out.clear()
        return data
