"""File-mode feeding: however the bytes are cut into chunks, the same events come out.

The decoder keeps each fed chunk as is and carries over only an event cut by the chunk's
end, so events split at every possible place (inside the magic, the header, the size field,
the body, across many chunks) are what these tests aim at.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from binlake.binlog.decoder import BinlogDecoder
from binlake.errors import DecodeError, TruncatedError


def _corpus_file(corpus_dir: Path) -> bytes:
    # A small MariaDB file with rows events of several sizes.
    for p in sorted(corpus_dir.rglob("*")):
        if p.is_file() and p.stat().st_size < 200_000 and p.read_bytes()[:4] == b"\xfebin":
            data = p.read_bytes()
            if _events(data, [len(data)]):
                return data
    pytest.skip("no small binlog in the corpus")


def _events(data: bytes, cuts: list[int]) -> list[tuple]:
    dec = BinlogDecoder(allow_unknown=True)
    out = []
    start = 0
    for cut in sorted(set(cuts)) + [len(data)]:
        dec.feed(data[start:cut])
        start = cut
        out.extend((type(ev).__name__, ev.offset, ev.end, ev.header) for ev in dec.events())
    dec.close()
    return out


@pytest.fixture(scope="module")
def binlog(corpus_dir: Path) -> bytes:
    return _corpus_file(corpus_dir)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_chunking_gives_the_same_events(binlog: bytes, data) -> None:
    whole = _events(binlog, [])
    cuts = data.draw(st.lists(st.integers(0, len(binlog)), max_size=40))
    assert _events(binlog, cuts) == whole
    assert len(whole) > 5


def test_byte_by_byte_and_tiny_chunks(binlog: bytes) -> None:
    whole = _events(binlog, [])
    # byte-at-a-time over the magic, the FDE and the first events
    assert _events(binlog, list(range(1, 3000))) == whole
    assert _events(binlog, list(range(0, len(binlog), 7))) == whole


def test_offsets_and_resume_point(binlog: bytes) -> None:
    dec = BinlogDecoder(allow_unknown=True)
    dec.feed(binlog[:2])
    assert list(dec.events()) == [] and dec.offset == 0
    dec.feed(binlog[2:101])
    evs = list(dec.events())
    assert dec.offset == (evs[-1].end if evs else 4)
    dec.feed(binlog[101:])
    rest = list(dec.events())
    assert rest and dec.offset == len(binlog)
    dec.close()


@pytest.mark.parametrize("cut_back", [1, 5, 13, 18, 19, 40])
def test_truncated_file_names_the_event_start(binlog: bytes, cut_back: int) -> None:
    whole = _events(binlog, [])
    data = binlog[:len(binlog) - cut_back]
    if len(data) in {end for _, _, end, _ in whole}:
        pytest.skip("the cut falls on an event boundary")
    last_start = max(start for _, start, _, _ in whole if start < len(data))
    dec = BinlogDecoder(allow_unknown=True)
    for i in range(0, len(data), 1000):
        dec.feed(data[i:i + 1000])
        list(dec.events())
    with pytest.raises(TruncatedError) as exc:
        dec.close()
    assert exc.value.offset == last_start


def test_not_a_binlog_even_when_the_magic_is_split() -> None:
    dec = BinlogDecoder()
    dec.feed(b"\xfeb")
    assert list(dec.events()) == []
    dec.feed(b"ad!" + bytes(30))
    with pytest.raises(DecodeError, match="not a binlog"):
        list(dec.events())
    short = BinlogDecoder()
    short.feed(b"\xfeb")
    with pytest.raises(TruncatedError, match="too short"):
        short.close()


def test_a_huge_event_in_many_small_chunks_is_joined_once() -> None:
    """A 32 MiB event fed in 64 KiB chunks: its header is read from the first carried piece,
    not by joining everything carried so far at every feed (quadratic, and a second copy of
    the event at each step), and the event is joined once when complete."""
    import struct
    import tracemalloc

    size = 32 << 20
    header = struct.pack("<IBIIIH", 0, 2, 1, size, 4 + size, 0)  # a QUERY-typed event header
    event = header + bytes(size - len(header))
    chunks = [event[i:i + (64 << 10)] for i in range(0, size, 64 << 10)]
    dec = BinlogDecoder(checksum=0, allow_unknown=True)
    dec.feed(b"\xfebin")
    assert list(dec.events()) == []
    tracemalloc.start()
    try:
        for chunk in chunks[:-1]:
            dec.feed(chunk)
            assert list(dec.events()) == []  # still incomplete
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert dec.offset == 4  # the event's start is the resume point
    # The carried chunks are the test's own objects: nothing of the event's size was made.
    assert peak < (1 << 20), peak
    dec.feed(chunks[-1])
    (ev,) = list(dec.events())  # decoded once whole
    assert (ev.offset, ev.end, ev.header.event_size) == (4, 4 + size, size)
    dec.close()


def _full(ev) -> tuple:
    """Everything an event carries (rows included), to compare after its bytes are gone."""
    import dataclasses

    return tuple((f.name, getattr(ev, f.name)) for f in dataclasses.fields(ev) if f.compare)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(1, 5000))
def test_borrowed_chunks_are_not_needed_after_the_next_feed(binlog: bytes, size: int) -> None:
    """read_events reads into two buffers in turn: each chunk is overwritten right after the
    next one is fed. The events handed out must not refer to those bytes."""
    dec = BinlogDecoder(allow_unknown=True)
    whole = BinlogDecoder(allow_unknown=True)
    whole.feed(binlog)
    expect = [_full(ev) for ev in whole.events()]
    buffers = (bytearray(b"\xee" * size), bytearray(b"\xee" * size))
    got, turn = [], 0
    for start in range(0, len(binlog), size):
        chunk = binlog[start:start + size]
        buf = buffers[turn]
        turn ^= 1
        buf[:len(chunk)] = chunk
        buf[len(chunk):] = b"\xee" * (size - len(chunk))  # the rest of the buffer: garbage
        dec.feed(memoryview(buf)[:len(chunk)], borrowed=True)
        got.extend(dec.events())
        other = buffers[turn]  # the chunk fed before this one: overwritten from now on
        other[:] = b"\xee" * size
    dec.close()
    assert [_full(ev) for ev in got] == expect
    assert any(getattr(ev, "rows", None) for ev in got)


def test_a_table_map_met_again_is_a_full_copy_at_its_place(corpus_dir: Path) -> None:
    """Repeated TABLE_MAPs are copied from the first one's parse (TableMapEvent.moved):
    every field but the place is the parse's, the place is the event's own."""
    from dataclasses import fields

    from binlake.binlog.table_map import TableMapEvent

    dec = BinlogDecoder(file="f")
    dec.feed((corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"
              ).read_bytes())
    maps = [ev for ev in dec.events() if isinstance(ev, TableMapEvent)]
    seen: dict[int, TableMapEvent] = {}
    again = 0
    for tm in maps:
        first = seen.setdefault(tm.table_id, tm)
        if first is tm or tm.columns is not first.columns:  # (a parse of its own)
            continue
        again += 1
        assert (tm.offset, tm.header) != (first.offset, first.header)
        for f in fields(TableMapEvent):
            if f.name in ("header", "file", "offset", "end"):
                continue
            assert getattr(tm, f.name) == getattr(first, f.name), f.name
        assert tm.row_decoders is first.row_decoders  # compiled decoders shared
        assert tm.end == tm.offset + tm.header.event_size
    assert again > 0


def test_moved_carries_every_field() -> None:
    """Every field of a TableMapEvent but its place survives `moved` (a field added later
    and forgotten there fails here)."""
    from dataclasses import fields

    from binlake.binlog.table_map import TableMapEvent

    values = {f.name: object() for f in fields(TableMapEvent)}
    tm = TableMapEvent(**values)
    place = {"header": object(), "file": object(), "offset": object(), "end": object()}
    moved = tm.moved(**place)
    for name, value in values.items():
        assert getattr(moved, name) is place.get(name, value), name
