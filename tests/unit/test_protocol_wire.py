"""Length-encoded integers and strings at every boundary, plus the bounds-checked Reader."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.errors import ProtocolError
from binlake.protocol import wire

BOUNDARIES = [
    (0, 1), (1, 1), (250, 1),
    (251, 3), (252, 3), (0xFFFF, 3),
    (0x10000, 4), (0xFFFFFF, 4),
    (0x1000000, 9), (0xFFFFFFFF, 9), (2**63, 9), (2**64 - 1, 9),
]


@pytest.mark.parametrize("value,size", BOUNDARIES)
def test_lenenc_int_sizes_and_round_trip(value: int, size: int) -> None:
    data = wire.lenenc_int(value)
    assert len(data) == size
    assert wire.read_lenenc_int(data, 0) == (value, size)
    # also inside a larger buffer, at an offset, via memoryview
    buf = memoryview(b"xx" + data + b"yy")
    assert wire.read_lenenc_int(buf, 2) == (value, 2 + size)


def test_lenenc_prefix_bytes() -> None:
    assert wire.lenenc_int(250) == b"\xfa"
    assert wire.lenenc_int(251) == b"\xfc\xfb\x00"
    assert wire.lenenc_int(0x10000) == b"\xfd\x00\x00\x01"
    assert wire.lenenc_int(0x1000000) == b"\xfe\x00\x00\x00\x01\x00\x00\x00\x00"


def test_lenenc_out_of_range() -> None:
    with pytest.raises(ValueError):
        wire.lenenc_int(-1)
    with pytest.raises(ValueError):
        wire.lenenc_int(2**64)


def test_lenenc_null_and_invalid() -> None:
    assert wire.read_lenenc_int(b"\xfb", 0) == (None, 1)
    with pytest.raises(ProtocolError):
        wire.read_lenenc_int(b"\xff", 0)
    with pytest.raises(ProtocolError):
        wire.Reader(b"\xfb").lenenc_int()


@pytest.mark.parametrize("data", [b"", b"\xfc\x01", b"\xfd\x01\x02", b"\xfe\x01\x02\x03\x04\x05\x06\x07"])
def test_lenenc_truncated(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        wire.read_lenenc_int(data, 0)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_lenenc_int_property(value: int) -> None:
    data = wire.lenenc_int(value)
    assert wire.read_lenenc_int(data, 0) == (value, len(data))


@given(st.binary(max_size=70000))
def test_lenenc_bytes_round_trip(value: bytes) -> None:
    r = wire.Reader(wire.lenenc_bytes(value) + b"tail")
    assert r.lenenc_bytes() == value
    assert r.rest() == b"tail"


def test_lenenc_string_boundary_lengths() -> None:
    for n in (250, 251, 0xFFFF, 0x10000):
        value = b"a" * n
        data = wire.lenenc_bytes(value)
        assert wire.Reader(data).lenenc_bytes() == value


def test_reader_fixed_ints_and_strings() -> None:
    data = (wire.int1(7) + wire.int2(0xBEEF) + wire.int3(0xABCDEF) + wire.int4(0xDEADBEEF)
            + wire.int8(2**64 - 2) + wire.nul_str("héllo") + wire.lenenc_str("wörld") + b"rest")
    r = wire.Reader(memoryview(data))
    assert r.u8() == 7
    assert r.u16() == 0xBEEF
    assert r.u24() == 0xABCDEF
    assert r.u32() == 0xDEADBEEF
    assert r.u64() == 2**64 - 2
    assert r.nul_str() == "héllo"
    assert r.lenenc_str() == "wörld"
    assert r.rest() == b"rest"
    assert r.at_end()


def test_reader_errors_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        wire.Reader(b"\x01").u16()
    with pytest.raises(ProtocolError):
        wire.Reader(b"abc").nul_bytes()
    with pytest.raises(ProtocolError):
        wire.Reader(b"\x05ab").lenenc_bytes()
    with pytest.raises(ValueError):
        wire.nul_bytes(b"a\x00b")


def test_nul_bytes_or_rest() -> None:
    r = wire.Reader(b"abc")
    assert r.nul_bytes_or_rest() == b"abc"
    r = wire.Reader(b"ab\x00cd")
    assert r.nul_bytes_or_rest() == b"ab"
    assert r.rest() == b"cd"
