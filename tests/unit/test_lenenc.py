"""The one length-encoded integer reader (_util/lenenc.py) behind protocol/wire.py,
binlog/wire.py, binlog/compression.py and binlog/columns/json_diff.py: the same values, and
each caller's own errors."""
from __future__ import annotations

import pytest

from binlake.binlog.compression import _packed_int as compression_packed_int
from binlake.binlog.wire import packed_int
from binlake.errors import DecodeError, ProtocolError, TruncatedError
from binlake.protocol.wire import lenenc_int, read_lenenc_int

VALUES = [0, 1, 250, 251, 252, 0xFFFF, 0x10000, 0xFFFFFF, 0x1000000, (1 << 64) - 1]


@pytest.mark.parametrize("value", VALUES)
def test_every_reader_reads_what_the_writer_wrote(value: int) -> None:
    data = b"\x00\x00" + lenenc_int(value) + b"tail"
    end = 2 + len(lenenc_int(value))
    assert read_lenenc_int(data, 2) == (value, end)
    assert packed_int(data, 2) == (value, end)
    assert packed_int(memoryview(data), 2) == (value, end)
    assert compression_packed_int(data, 2, "field") == (value, end)


def test_null_marker_is_none_for_packets_and_an_error_in_events() -> None:
    assert read_lenenc_int(b"\xfb", 0) == (None, 1)
    with pytest.raises(DecodeError, match="prefix 0xfb at body offset 0"):
        packed_int(b"\xfb", 0)
    with pytest.raises(DecodeError, match="field: invalid packed integer prefix 0xfb"):
        compression_packed_int(b"\xfb", 0, "field")


def test_bad_prefix_past_the_end_and_cut_short_raise_each_callers_error() -> None:
    with pytest.raises(ProtocolError, match="prefix 0xff at offset 0"):
        read_lenenc_int(b"\xff", 0)
    with pytest.raises(DecodeError, match="prefix 0xff at body offset 0"):
        packed_int(b"\xff", 0)
    with pytest.raises(ProtocolError, match="past the end"):
        read_lenenc_int(b"", 0)
    with pytest.raises(DecodeError, match="at body offset 1 is past the end"):
        packed_int(b"\x01", 1)
    with pytest.raises(TruncatedError, match="past the end"):
        compression_packed_int(b"", 0, "field")
    with pytest.raises(ProtocolError, match="cut short"):
        read_lenenc_int(b"\xfc\x01", 0)
    with pytest.raises(DecodeError, match="packed integer: needs 2 bytes at body offset 1, 1 left"):
        packed_int(b"\xfc\x01", 0)
    with pytest.raises(TruncatedError, match="needs 3 bytes"):
        compression_packed_int(b"\xfc\x01", 0, "field")


@pytest.mark.parametrize("value", VALUES)
def test_json_diff_lengths_use_the_one_reader_within_their_bound(value: int) -> None:
    from binlake.binlog.columns.json_diff import _packed_int as json_diff_packed_int

    data = lenenc_int(value) + b"tail"
    end = len(lenenc_int(value))
    assert json_diff_packed_int(data, 0, len(data)) == (value, end)
    assert json_diff_packed_int(data, 0, end) == (value, end)
    if end > 1:  # a bound inside the integer cuts it short
        with pytest.raises(DecodeError, match="truncated inside a length"):
            json_diff_packed_int(data, 0, end - 1)


def test_json_diff_lengths_refuse_null_and_0xff() -> None:
    from binlake.binlog.columns.json_diff import _packed_int as json_diff_packed_int

    for first in (0xFB, 0xFF):
        with pytest.raises(DecodeError, match=f"invalid length byte 0x{first:02x}"):
            json_diff_packed_int(bytes((first, 0, 0)), 0, 3)
