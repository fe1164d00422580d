"""Packet framing: split and reassembly at 2^24-1, sequence ids, and the zero-copy receive buffer."""
from __future__ import annotations

import os

import pytest

from binlake.errors import ProtocolError
from binlake.protocol.packets import MAX_PAYLOAD, PacketStream, frame, frame_parts, packet_header


def headers(data: bytes) -> list[tuple[int, int]]:
    """(length, seq) of every physical packet in wire bytes."""
    out = []
    pos = 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 3], "little")
        out.append((n, data[pos + 3]))
        pos += 4 + n
    assert pos == len(data)
    return out


def test_small_packet() -> None:
    data, seq = frame(b"\x03SELECT 1", 0)
    assert data == b"\x09\x00\x00\x00\x03SELECT 1"
    assert seq == 1


def test_empty_payload_is_one_empty_packet() -> None:
    assert frame(b"", 5) == (b"\x00\x00\x00\x05", 6)


def test_exactly_max_payload_needs_empty_trailer() -> None:
    payload = b"x" * MAX_PAYLOAD
    data, seq = frame(payload, 0)
    assert headers(data) == [(MAX_PAYLOAD, 0), (0, 1)]
    assert seq == 2


@pytest.mark.parametrize("size,expected", [
    (MAX_PAYLOAD - 1, [MAX_PAYLOAD - 1]),
    (MAX_PAYLOAD + 1, [MAX_PAYLOAD, 1]),
    (2 * MAX_PAYLOAD, [MAX_PAYLOAD, MAX_PAYLOAD, 0]),
    (2 * MAX_PAYLOAD + 10, [MAX_PAYLOAD, MAX_PAYLOAD, 10]),
])
def test_split_lengths(size: int, expected: list[int]) -> None:
    data, _ = frame(bytes(size), 254)
    hs = headers(data)
    assert [n for n, _ in hs] == expected
    assert [s for _, s in hs] == [(254 + i) & 0xFF for i in range(len(expected))]  # wraps at 256


def test_frame_parts_do_not_copy_the_body() -> None:
    payload = bytearray(MAX_PAYLOAD + 5)
    parts, seq = frame_parts(payload, 0)
    assert seq == 2
    assert isinstance(parts[1], memoryview) and parts[1].obj is payload
    assert b"".join(parts) == frame(bytes(payload), 0)[0]


@pytest.mark.parametrize("size", [0, 1, MAX_PAYLOAD - 1, MAX_PAYLOAD, MAX_PAYLOAD + 1, 2 * MAX_PAYLOAD + 3])
def test_round_trip_through_stream(size: int) -> None:
    payload = os.urandom(1024) * (size // 1024) + os.urandom(size % 1024)
    sender = PacketStream()
    receiver = PacketStream()
    wire_bytes = sender.frame(payload) + sender.frame(b"after")
    receiver.feed(wire_bytes)
    assert receiver.next_packet_copy() == payload
    assert bytes(receiver.next_packet()) == b"after"
    assert receiver.next_packet() is None
    assert receiver.seq == sender.seq


def test_large_payload_fed_in_chunks_with_recv_into() -> None:
    payload = os.urandom(MAX_PAYLOAD + 1000)
    data = PacketStream().frame(payload)
    rx = PacketStream(buffer_size=256 * 1024)
    pos = 0
    got = None
    while got is None:
        space = rx.recv_buffer()
        n = min(len(space), 100_000, len(data) - pos)
        space[:n] = data[pos:pos + n]
        rx.commit(n)
        pos += n
        got = rx.next_packet_copy()
        if got is None:
            assert rx.in_continuation or rx.buffered() > 0 or pos < len(data)
    assert got == payload
    assert pos == len(data)


def test_byte_at_a_time() -> None:
    tx = PacketStream()
    data = b"".join(tx.frame(bytes([i]) * i) for i in range(1, 40))
    rx = PacketStream(buffer_size=1)  # minimum size is enforced; growth and compaction happen
    got = []
    for b in data:
        rx.feed(bytes([b]))
        while (p := rx.next_packet()) is not None:
            got.append(bytes(p))
    assert got == [bytes([i]) * i for i in range(1, 40)]


def test_many_small_packets_through_a_small_buffer_compact() -> None:
    tx = PacketStream()
    payloads = [os.urandom(1 + (i * 37) % 3000) for i in range(2000)]
    data = b"".join(tx.frame(p) for p in payloads)
    rx = PacketStream(buffer_size=150_000)
    got = []
    pos = 0
    while pos < len(data):
        space = rx.recv_buffer()
        n = min(len(space), 7919, len(data) - pos)
        space[:n] = data[pos:pos + n]
        rx.commit(n)
        pos += n
        while (p := rx.next_packet()) is not None:
            got.append(bytes(p))
    assert got == payloads


def test_sequence_mismatch_raises() -> None:
    rx = PacketStream()
    rx.feed(packet_header(1, 0) + b"a" + packet_header(1, 5) + b"b")
    assert bytes(rx.next_packet()) == b"a"
    with pytest.raises(ProtocolError, match="sequence id 5, expected 1"):
        rx.next_packet()


def test_sequence_check_can_be_disabled_and_reset() -> None:
    rx = PacketStream(check_sequence=False)
    rx.feed(packet_header(1, 9) + b"a")
    assert bytes(rx.next_packet()) == b"a"
    assert rx.seq == 10
    rx.reset_sequence()
    assert rx.seq == 0


def test_sequence_wraps_at_256() -> None:
    tx, rx = PacketStream(), PacketStream()
    data = b"".join(tx.frame(b"p") for _ in range(300))
    rx.feed(data)
    n = 0
    while rx.next_packet() is not None:
        n += 1
    assert n == 300 and rx.seq == 300 % 256


def test_views_point_into_the_buffer() -> None:
    tx, rx = PacketStream(), PacketStream()
    rx.feed(tx.frame(b"hello") + tx.frame(b"world"))
    a = rx.next_packet()
    b = rx.next_packet()
    assert isinstance(a, memoryview) and bytes(a) == b"hello" and bytes(b) == b"world"
    assert a.obj is b.obj  # both slices of the one receive buffer: no copies


def test_commit_overflow_rejected() -> None:
    rx = PacketStream()
    space = rx.recv_buffer()
    with pytest.raises(ValueError):
        rx.commit(len(space) + 1)


def test_resync_accepts_the_next_sequence_id_once() -> None:
    rx = PacketStream()
    rx.feed(packet_header(1, 0) + b"a")
    assert bytes(rx.next_packet()) == b"a"
    rx.resync()
    rx.feed(packet_header(1, 77) + b"b" + packet_header(1, 78) + b"c" + packet_header(1, 3) + b"d")
    assert bytes(rx.next_packet()) == b"b"
    assert bytes(rx.next_packet()) == b"c"
    with pytest.raises(ProtocolError):
        rx.next_packet()


def test_unread_bytes_handed_to_a_caller_that_frames_packets_itself() -> None:
    """unread/advance: the receive buffer's unread bytes and the next sequence id, for a
    caller that frames whole packets itself (the replica's C runs of event packets); the
    packets after the ones it read still come out of next_packet in order."""
    s = PacketStream()
    data, seq = b"", 0
    for body in (b"one", b"two", b"three"):
        wire, seq = frame(body, seq)
        data += wire
    s.feed(data)
    buf, start, end, next_seq = s.unread()
    assert (end - start, next_seq) == (len(data), 0)
    assert bytes(buf[start:end]) == data
    s.advance(start + 7, 1)  # "one" read by the caller
    assert bytes(s.next_packet()) == b"two" and bytes(s.next_packet()) == b"three"
    assert s.next_packet() is None
    with pytest.raises(ValueError):
        s.advance(end + 1, 3)  # past what was received
    with pytest.raises(ValueError):
        s.advance(end, 256)


def test_wants_more_until_a_whole_packet_is_received() -> None:
    """wants_more: no whole packet in the unread bytes (a header cut, a body cut); the room
    the next packet needs is then noted, so the next receive has room for all of it."""
    body = bytes(range(256)) * 1200  # 300 KiB: more than the buffer grows by on its own
    wire, _ = frame(body, 0)
    s = PacketStream(buffer_size=1024)
    assert s.wants_more()  # nothing received
    s.feed(wire[:3])
    assert s.wants_more()  # a header cut
    s.feed(wire[3:2000])
    assert s.wants_more()  # a body cut
    assert len(s.recv_buffer()) >= len(wire) - 2000  # room for the rest of it at once
    s.feed(wire[2000:])
    assert not s.wants_more()
    assert bytes(s.next_packet()) == body and s.wants_more()


def test_unread_refused_while_the_framing_is_not_plain() -> None:
    """No unread bytes for a caller while a 16 MiB+ payload is half reassembled, the
    sequence id is being resynchronised, or sequence ids are not checked."""
    s = PacketStream()
    s.feed(packet_header(MAX_PAYLOAD, 0) + bytes(MAX_PAYLOAD))
    assert s.next_packet() is None and s.in_continuation
    assert s.unread() is None
    s = PacketStream()
    s.resync()
    assert s.unread() is None
    assert PacketStream(check_sequence=False).unread() is None
    assert PacketStream().unread() is not None
