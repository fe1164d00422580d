"""An event a replica's stream hands the decoder without an offset (decode_event(raw)) that
fails names its offset all the same, from its header's log_pos, and a checksum failure says
what to do about a stream: look at the primary's copy, or start again if the link damaged
it. Real events from the corpus, one byte changed."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from binlake.binlog.constants import ChecksumAlg
from binlake.binlog.decoder import BinlogDecoder
from binlake.errors import ChecksumError

FILE = "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"


def _stream_to_a_rows_event(path: Path) -> tuple[BinlogDecoder, int, bytes]:
    """A decoder fed the file's events as a stream feeds them (no offsets) up to its 4th
    rows event, and that event's (offset, bytes)."""
    data = path.read_bytes()
    dec = BinlogDecoder(checksum=ChecksumAlg.CRC32)
    dec.file = "mariadb-bin.000007"
    pos, rows = 4, 0
    while True:
        size = struct.unpack_from("<I", data, pos + 9)[0]
        raw = data[pos:pos + size]
        if data[pos + 4] in (23, 24, 25, 30, 31, 32):
            rows += 1
            if rows == 4:
                return dec, pos, raw
        dec.decode_event(raw)
        pos += size


@pytest.mark.parametrize("where", ["body", "stored checksum"])
def test_a_damaged_stream_event_names_its_offset_and_what_to_do(corpus_dir: Path, where) -> None:
    dec, offset, raw = _stream_to_a_rows_event(corpus_dir / FILE)
    damaged = bytearray(raw)
    damaged[len(raw) // 2 if where == "body" else len(raw) - 1] ^= 0x01
    assert dec.decode_event(raw)  # (whole, it decodes)
    with pytest.raises(ChecksumError) as info:
        dec.decode_event(bytes(damaged))
    err = info.value
    assert (err.file, err.offset) == ("mariadb-bin.000007", offset)
    assert f"mariadb-bin.000007 offset {offset} " in str(err)
    assert "damaged on the way" in str(err) and "start the stream again" in str(err)


def test_without_a_log_pos_no_offset_is_made_up(corpus_dir: Path) -> None:
    dec, _, raw = _stream_to_a_rows_event(corpus_dir / FILE)
    damaged = bytearray(raw)
    damaged[13:17] = bytes(4)  # log_pos 0 (as an artificial event has), and so a bad CRC32
    with pytest.raises(ChecksumError) as info:
        dec.decode_event(bytes(damaged))
    assert info.value.offset is None and "offset" not in str(info.value).split(":")[0]


def test_a_file_event_keeps_the_offset_its_reader_gives(corpus_dir: Path) -> None:
    dec, offset, raw = _stream_to_a_rows_event(corpus_dir / FILE)
    damaged = bytearray(raw)
    damaged[len(raw) // 2] ^= 0x01
    dec.file = "a-copy.000001"
    with pytest.raises(ChecksumError) as info:
        dec.decode_event(bytes(damaged), offset)
    assert info.value.offset == offset
    assert "restore the binlog" in str(info.value)  # a file's hint, not a stream's
