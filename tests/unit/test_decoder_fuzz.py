"""Random and mutated event bytes never crash the decoder with anything but its own
DecodeError, and never hang."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from binlake.binlog.decoder import BinlogDecoder
from binlake.errors import DecodeError
from binlake.binlog.files import read_events

SOURCES = [
    "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-nochecksum.000001",
    "rust_mysql_common/json.binlog.000001",
    "rust_mysql_common/vector.binlog",
    "binlog-connector-java/mysql-bin.compressed",
    "generated-mariadb-10.11/mariadb-10.11.19-row-compressed-crc32.000001",
]


@pytest.fixture(scope="module")
def seeds(corpus_dir: Path) -> list[tuple[bytes, list[tuple[int, int]]]]:
    """(file bytes, [(offset, size) of each event]) for a few varied files."""
    out = []
    for rel in SOURCES:
        path = corpus_dir / rel
        data = path.read_bytes()
        spans = []
        try:
            for ev in read_events(path):
                if ev.inner_index is None:
                    spans.append((ev.offset, ev.header.event_size))
        except DecodeError:
            pass
        out.append((data, spans))
    return out


def _decode_all(data: bytes) -> None:
    dec = BinlogDecoder(file="fuzz", verify_checksums=False)
    dec.feed(data)
    for _ in dec.events():
        pass
    dec.close()


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_events_raise_only_decode_errors(seeds, data) -> None:
    blob, spans = data.draw(st.sampled_from(seeds))
    offset, size = data.draw(st.sampled_from(spans[1:]))  # keep the FDE intact
    buf = bytearray(blob[: offset + size])
    n = data.draw(st.integers(1, 8))
    for _ in range(n):
        i = data.draw(st.integers(offset + 19, offset + size - 1))  # body bytes
        buf[i] = data.draw(st.integers(0, 255))
    try:
        _decode_all(bytes(buf))
    except DecodeError:
        pass


@settings(max_examples=300, deadline=2000)
@given(st.binary(min_size=0, max_size=400))
def test_random_bytes_after_magic(random: bytes) -> None:
    try:
        _decode_all(b"\xfebin" + random)
    except DecodeError:
        pass


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_truncation_anywhere_is_named(seeds, data) -> None:
    blob, spans = data.draw(st.sampled_from(seeds))
    cut = data.draw(st.integers(4, len(blob) - 1))
    try:
        _decode_all(blob[:cut])
    except DecodeError as exc:
        assert exc.offset is not None
