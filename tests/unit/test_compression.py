"""MariaDB compressed events and MySQL TRANSACTION_PAYLOAD, against real binlogs."""
from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.binlog.compression import (
    MARIADB_COMPRESSED_TWIN,
    TransactionPayload,
    decompress_payload,
    iter_payload_events,
    iter_transaction_events,
    mariadb_compress,
    mariadb_compressed_header,
    mariadb_uncompress,
    parse_transaction_payload,
    query_compressed_offset,
    rows_compressed_offset,
    uncompress_mariadb_event,
    uncompress_query_event,
    uncompress_rows_event,
)
from binlake.binlog.constants import EventType
from binlake.errors import DecodeError, TruncatedError

CORPUS = Path("/work/shared/corpus")
MARIA = CORPUS / "generated-mariadb-10.11"
COMPRESSED = MARIA / "mariadb-10.11.19-row-compressed-crc32.000001"
UNCOMPRESSED = MARIA / "mariadb-10.11.19-row-full-metafull-crc32.000001"
PAYLOAD_FILES = {
    # INDEX.md counts of the events inside TRANSACTION_PAYLOAD
    "rust_mysql_common/transaction_compression.000001": {2: 1, 16: 1, 19: 1, 30: 1},
    "binlog-connector-java/mysql-bin.compressed": {2: 1, 16: 1, 19: 1, 31: 1},
    "mysql-binlog-connector-rust/mysql-bin.000057": {2: 2, 16: 2, 19: 3, 29: 3, 30: 2, 31: 1},
}

needs_corpus = pytest.mark.skipif(not COMPRESSED.exists(), reason="binlog corpus not available")


def events(path: Path):
    data = path.read_bytes()
    pos = 4
    while pos < len(data):
        (size,) = struct.unpack_from("<I", data, pos + 9)
        yield pos, data[pos:pos + size]
        pos += size


def crc_ok(event: bytes) -> bool:
    return zlib.crc32(event[:-4]) == struct.unpack("<I", event[-4:])[0]


def post_header_lengths(path: Path) -> bytes:
    fde = next(ev for _, ev in events(path) if ev[4] == EventType.FORMAT_DESCRIPTION)
    return fde[19 + 57:-5]  # binlog version 2, server version 50, timestamp 4, header len 1


def strip_crc(event: bytes) -> bytes:
    out = bytearray(event[:-4])
    struct.pack_into("<I", out, 9, len(out))
    return bytes(out)


def with_crc(event: bytes) -> bytes:
    out = bytearray(event) + b"\0\0\0\0"
    struct.pack_into("<I", out, 9, len(out))
    struct.pack_into("<I", out, len(out) - 4, zlib.crc32(out[:-4]))
    return bytes(out)


@pytest.fixture(scope="module")
def maria():
    phl = post_header_lengths(COMPRESSED)
    compressed = [(off, ev) for off, ev in events(COMPRESSED) if ev[4] in MARIADB_COMPRESSED_TWIN]
    return phl, compressed


# ---------------------------------------------------------------- MariaDB records


@pytest.mark.parametrize("size, lenlen", [(1, 1), (255, 1), (256, 2), (65535, 2), (65536, 3), (1 << 24, 4)])
def test_record_round_trip(size, lenlen):
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    record = mariadb_compress(data)
    assert record[0] == 0x80 | lenlen
    assert mariadb_compressed_header(record) == (size, 1 + lenlen)
    assert mariadb_uncompress(record) == data
    assert mariadb_uncompress(memoryview(record)) == data


def record(declared: int, stream: bytes, header: int | None = None, lenlen: int = 4) -> bytes:
    return bytes([header if header is not None else 0x80 | lenlen]) + declared.to_bytes(lenlen, "big") + stream


@pytest.mark.parametrize(
    "buf, message",
    [
        (b"", "empty"),
        (record(3, zlib.compress(b"abc"), header=0x00), "header byte"),
        (record(3, zlib.compress(b"abc"), header=0x94), "unknown algorithm 1"),
        (record(3, zlib.compress(b"abc"), header=0x80), "header byte"),
        (record(3, zlib.compress(b"abc"), header=0x85), "header byte"),
        (record(3, zlib.compress(b"abc"), header=0x8C), "header byte"),
        (b"\x84\x00\x00", "inside its 4-byte length"),
        (record(0, zlib.compress(b"")), "length of 0"),
        (record(2, zlib.compress(b"abc")), "more than the declared"),
        (record(4, zlib.compress(b"abc")), "inflates to 3 bytes, declared 4"),
        (record(3, zlib.compress(b"abc")[:-3]), "ends early"),
        (record(3, zlib.compress(b"abc") + b"x"), "after the zlib stream"),
        (record(3, b"not zlib at all"), "zlib error"),
    ],
)
def test_record_errors(buf, message):
    with pytest.raises(DecodeError, match=message):
        mariadb_uncompress(buf)


def test_record_bomb_is_capped():
    bomb = zlib.compress(b"\0" * (64 << 20), 9)  # 64 MiB of zeros in ~64 KiB
    with pytest.raises(DecodeError, match="more than the declared"):
        mariadb_uncompress(record(100, bomb))


# ---------------------------------------------------------------- MariaDB events (corpus)


@needs_corpus
def test_corpus_compressed_events(maria):
    phl, compressed = maria
    counts = Counter(ev[4] for _, ev in compressed)
    assert counts == {165: 2, 166: 10, 167: 8, 168: 11}  # INDEX.md
    assert list(phl[165 - 1:171]) == [13, 8, 8, 8, 10, 10, 10]
    for off, ev in compressed:
        assert crc_ok(ev), off  # the CRC covers the compressed bytes on disk
        t = ev[4]
        out = uncompress_mariadb_event(ev, post_header_len=phl[t - 1], checksum_len=4)
        assert out[4] == MARIADB_COMPRESSED_TWIN[t]
        assert struct.unpack_from("<I", out, 9)[0] == len(out)
        assert crc_ok(out)
        assert out[:4] == ev[:4] and out[5:9] == ev[5:9] and out[13:19] == ev[13:19]
        start = (query_compressed_offset(ev) if t == 165
                 else rows_compressed_offset(ev, post_header_len=phl[t - 1]))
        assert out[:start] == ev[:start][:4] + bytes([out[4]]) + ev[5:9] + out[9:13] + ev[13:start]
        declared, _ = mariadb_compressed_header(ev[start:])
        assert len(out) == start + declared + 4


@needs_corpus
def test_corpus_query_compressed_texts(maria):
    phl, compressed = maria
    workload = (MARIA / "workload.sql").read_text(encoding="utf-8")
    texts = []
    for _, ev in compressed:
        if ev[4] == EventType.MARIADB_QUERY_COMPRESSED:
            out = uncompress_query_event(ev, post_header_len=phl[164], checksum_len=4)
            start = query_compressed_offset(ev)
            texts.append(out[start:-4].decode())
            assert out[start - 7:start] == b"corpus\0"  # db name precedes the compressed text
    assert texts == [
        "CREATE TABLE t_comp_ddl (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
        "INSERT INTO t_comp_ddl VALUES (1, REPEAT('compress me ', 5))",
    ]
    assert all(t in workload for t in texts)


@needs_corpus
def test_corpus_rows_match_the_uncompressed_scenario(maria):
    """The same workload ran uncompressed: decompressed rows bodies equal those, byte for byte
    (after the table id). Only the DELETEs that empty the tables left by earlier scenarios
    differ (different prior contents)."""
    phl, compressed = maria
    reference = Counter((ev[4], ev[25:-4]) for _, ev in events(UNCOMPRESSED) if ev[4] in (23, 24, 25))
    matched = unmatched = 0
    blobs = b""
    for _, ev in compressed:
        t = ev[4]
        if t == EventType.MARIADB_QUERY_COMPRESSED:
            continue
        out = uncompress_rows_event(ev, post_header_len=phl[t - 1], checksum_len=4)
        blobs += out
        if reference[(out[4], out[25:-4])]:
            matched += 1
        else:
            unmatched += 1
            assert t == EventType.MARIADB_DELETE_ROWS_COMPRESSED_V1
    assert matched == 20 and unmatched == 9
    assert b"x" * 70000 in blobs and ("ab" * 1000).encode() in blobs
    assert b'{"a":1,"b":[1,2,{"c":null}],"d":"\xc3\xbc"' in blobs  # the JSON column, as text


@needs_corpus
def test_without_checksum(maria):
    phl, compressed = maria
    for _, ev in compressed:
        t = ev[4]
        with_crc_out = uncompress_mariadb_event(ev, post_header_len=phl[t - 1], checksum_len=4)
        out = uncompress_mariadb_event(strip_crc(ev), post_header_len=phl[t - 1], checksum_len=0)
        assert out == strip_crc(with_crc_out)


@needs_corpus
def test_v2_compressed_rows_types(maria):
    """169..171 carry the v2 extra-data block and become WRITE/UPDATE/DELETE_ROWS_V2 (30..32)."""
    phl, compressed = maria
    for _, ev in compressed:
        t = ev[4]
        if t == EventType.MARIADB_QUERY_COMPRESSED:
            continue
        extra = b"\x05\x00\x00\x02\x01"  # length 5 (includes itself) + 3 bytes of extra info
        v2 = bytearray(ev[:27] + extra + ev[27:-4])
        v2[4] = t + 3
        v2 = with_crc(bytes(v2))
        out = uncompress_rows_event(v2, post_header_len=10, checksum_len=4)
        v1_out = uncompress_rows_event(ev, post_header_len=8, checksum_len=4)
        assert out[4] == t - 166 + 30
        assert out[27:32] == extra and out[32:-4] == v1_out[27:-4]
        with pytest.raises(DecodeError, match="post-header"):
            uncompress_rows_event(v2, post_header_len=8, checksum_len=4)
        with pytest.raises(DecodeError, match="post-header"):
            uncompress_rows_event(ev, post_header_len=10, checksum_len=4)


@needs_corpus
def test_event_level_errors(maria):
    phl, compressed = maria
    query = next(ev for _, ev in compressed if ev[4] == 165)
    rows = next(ev for _, ev in compressed if ev[4] == 166)
    with pytest.raises(DecodeError, match="not expected"):
        uncompress_query_event(rows, checksum_len=4)
    with pytest.raises(DecodeError, match="length field"):
        uncompress_query_event(query[:-1], checksum_len=4)
    with pytest.raises(DecodeError, match="too short"):
        uncompress_query_event(query, post_header_len=11)
    bad = bytearray(query)
    bad[19 + 8] = 200  # db name length past the end
    with pytest.raises(TruncatedError):
        uncompress_query_event(with_crc(bytes(bad[:-4])), checksum_len=4)
    bad = bytearray(rows)
    bad[-6] ^= 0xFF  # corrupt the zlib stream's tail (adler32)
    with pytest.raises(DecodeError):
        uncompress_rows_event(bytes(bad), post_header_len=8)
    with pytest.raises(TruncatedError):
        uncompress_mariadb_event(b"\x00" * 5, post_header_len=8)


# ---------------------------------------------------------------- MySQL TRANSACTION_PAYLOAD


def payload_bodies(rel: str):
    for off, ev in events(CORPUS / rel):
        if ev[4] == EventType.TRANSACTION_PAYLOAD:
            assert crc_ok(ev)
            yield off, ev[19:-4]


@needs_corpus
@pytest.mark.parametrize("rel", sorted(PAYLOAD_FILES))
def test_payload_inner_events(rel):
    counts: Counter[int] = Counter()
    bodies = list(payload_bodies(rel))
    assert bodies
    for _, body in bodies:
        tp = parse_transaction_payload(memoryview(body))
        assert tp.compression == "ZSTD" and tp.compression_code == 0
        assert len(tp.payload) + tp.header_len == len(body)
        raw = decompress_payload(tp)
        assert len(raw) == tp.uncompressed_size
        inner = list(iter_payload_events(raw))
        assert sum(len(e) for _, e in inner) == len(raw)
        for offset, event in inner:
            counts[event[4]] += 1
            assert struct.unpack_from("<I", event, 13)[0] == 0  # log_pos 0 inside
            assert not crc_ok(bytes(event))  # serialized without CRCs
        assert inner[0][1][4] == EventType.QUERY and bytes(inner[0][1][-5:]) == b"BEGIN"
        assert inner[-1][1][4] == EventType.XID
        for chunk in (1, 7, 64, 1 << 20):
            assert [(o, bytes(e)) for o, e in inner] == list(iter_transaction_events(tp, chunk=chunk))
    assert dict(counts) == PAYLOAD_FILES[rel]


def tlv(field: int, value: int) -> bytes:
    def packed(v: int) -> bytes:
        if v < 251:
            return bytes([v])
        if v < 1 << 16:
            return b"\xfc" + v.to_bytes(2, "little")
        if v < 1 << 24:
            return b"\xfd" + v.to_bytes(3, "little")
        return b"\xfe" + v.to_bytes(8, "little")
    enc = packed(value)
    return packed(field) + packed(len(enc)) + enc


def payload_body(payload: bytes, compression: int, uncompressed: int | None = None, extra: bytes = b"") -> bytes:
    head = tlv(2, compression)
    if uncompressed is not None:
        head += tlv(3, uncompressed)
    return head + extra + tlv(1, len(payload)) + b"\x00" + payload


@pytest.fixture(scope="module")
def real_inner_stream():
    _, body = next(payload_bodies("mysql-binlog-connector-rust/mysql-bin.000057"))
    return decompress_payload(parse_transaction_payload(body))


@needs_corpus
def test_payload_compression_none(real_inner_stream):
    """MySQL writes NONE with no uncompressed-size field; the payload is the raw events."""
    body = payload_body(real_inner_stream, 255)
    tp = parse_transaction_payload(body)
    assert tp.compression == "NONE" and tp.uncompressed_size == len(real_inner_stream)
    assert decompress_payload(tp) == real_inner_stream
    assert [e[4] for _, e in iter_payload_events(decompress_payload(tp))] == [2, 29, 19, 30, 16]
    assert [e[4] for _, e in iter_transaction_events(tp)] == [2, 29, 19, 30, 16]


@needs_corpus
def test_payload_large_and_multiframe(real_inner_stream):
    stream = real_inner_stream * 2000  # ~430 KB, several zstd frames
    comp = b"".join(zstandard.ZstdCompressor().compress(stream[i:i + 100_000])
                    for i in range(0, len(stream), 100_000))
    tp = parse_transaction_payload(payload_body(comp, 0, len(stream)))
    assert decompress_payload(tp) == stream
    assert sum(1 for _ in iter_transaction_events(tp, chunk=4096)) == 5 * 2000
    with pytest.raises(DecodeError, match="over the limit"):
        decompress_payload(tp, max_size=1000)


def test_payload_unknown_field_is_skipped():
    raw = b"hello"
    body = payload_body(raw, 255, extra=b"\x09\x03abc")
    assert bytes(parse_transaction_payload(body).payload) == raw


@pytest.mark.parametrize(
    "body, message",
    [
        (b"", "no end mark"),
        (tlv(2, 0) + tlv(1, 3), "no end mark"),
        (tlv(2, 0) + b"\x00abc", "lacks the payload size"),
        (tlv(1, 3) + b"\x00abc", "lacks the compression type"),
        (tlv(2, 7) + tlv(1, 3) + b"\x00abc", "unknown payload compression type 7"),
        (tlv(2, 255) + tlv(1, 5) + b"\x00abc", "exceeds"),
        (tlv(2, 255) + tlv(1, 3) + b"\x00abcCRC!", "follow the 3-byte payload"),
        (tlv(2, 255) + tlv(2, 255) + tlv(1, 3) + b"\x00abc", "twice"),
        (b"\x02\x02\x00" + tlv(1, 3) + b"\x00abc", "says 2 bytes"),
        (b"\xfb", "invalid packed integer"),
        (b"\xfe\x01", "needs 9 bytes"),
        (tlv(2, 255) + tlv(3, 9) + tlv(1, 3) + b"\x00abc", "declares 9"),
        (b"\x09\x20abc", "runs past the end"),
    ],
)
def test_payload_header_errors(body, message):
    with pytest.raises(DecodeError, match=message):
        parse_transaction_payload(body)


def test_payload_decompression_errors():
    stream = bytes(range(256)) * 100
    comp = zstandard.ZstdCompressor().compress(stream)
    cases = [
        (payload_body(comp, 0, len(stream) - 1), "past its declared"),
        (payload_body(comp, 0, len(stream) + 1), "declared"),
        (payload_body(comp[:-5], 0, len(stream)), "declared|zstd"),
        (payload_body(comp + b"junk", 0, len(stream)), "zstd payload"),
        (payload_body(b"\x00" * 20, 0, 10), "zstd payload"),
    ]
    for body, message in cases:
        tp = parse_transaction_payload(body)
        with pytest.raises(DecodeError, match=message):
            decompress_payload(tp)
        with pytest.raises(DecodeError):
            list(iter_transaction_events(tp))


def test_payload_bomb_is_capped():
    comp = zstandard.ZstdCompressor(level=19).compress(b"\0" * (256 << 20))  # 256 MiB of zeros
    tp = parse_transaction_payload(payload_body(comp, 0, 1000))
    with pytest.raises(DecodeError, match="past its declared 1000"):
        decompress_payload(tp)


def test_inner_event_errors():
    good = struct.pack("<IBIIIH", 0, 16, 1, 27, 0, 0) + b"\x00" * 8
    assert [o for o, _ in iter_payload_events(good + good)] == [0, 27]
    with pytest.raises(TruncatedError, match="inside an event header"):
        list(iter_payload_events(good + good[:10]))
    with pytest.raises(TruncatedError, match="runs past"):
        list(iter_payload_events(good + good[:-1]))
    tiny = struct.pack("<IBIIIH", 0, 16, 1, 5, 0, 0)
    with pytest.raises(DecodeError, match="has length 5"):
        list(iter_payload_events(tiny))
    for stream in (good + good[:10], good + good[:-1], tiny):
        tp = TransactionPayload("NONE", len(stream), memoryview(stream))
        with pytest.raises(DecodeError):
            list(iter_transaction_events(tp, chunk=3))


# ---------------------------------------------------------------- fuzzing


def mutate(data: st.DataObject, buf: bytes) -> bytes:
    out = bytearray(buf)
    for _ in range(data.draw(st.integers(0, 4))):
        if not out:
            break
        i = data.draw(st.integers(0, len(out) - 1))
        action = data.draw(st.sampled_from(["set", "delete", "insert"]))
        if action == "set":
            out[i] = data.draw(st.integers(0, 255))
        elif action == "delete":
            del out[i]
        else:
            out.insert(i, data.draw(st.integers(0, 255)))
    return bytes(out[:data.draw(st.integers(0, len(out)))])


@needs_corpus
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_fuzz_mariadb_events(data):
    phl = post_header_lengths(COMPRESSED)
    compressed = [ev for _, ev in events(COMPRESSED) if ev[4] in MARIADB_COMPRESSED_TWIN]
    ev = mutate(data, data.draw(st.sampled_from(compressed)))
    if len(ev) >= 13 and data.draw(st.booleans()):  # keep the length field consistent
        ev = ev[:9] + struct.pack("<I", len(ev)) + ev[13:]
    t = ev[4] if len(ev) > 4 else 166
    try:
        out = uncompress_mariadb_event(ev, post_header_len=phl[t - 1] if 0 < t <= len(phl) else 8,
                                       checksum_len=data.draw(st.sampled_from([0, 4])))
    except DecodeError:
        return
    assert out[4] in MARIADB_COMPRESSED_TWIN.values()


@settings(max_examples=300, deadline=None)
@given(data=st.data(), payload=st.binary(min_size=1, max_size=300))
def test_fuzz_records(data, payload):
    try:
        out = mariadb_uncompress(mutate(data, mariadb_compress(payload)))
    except DecodeError:
        return
    assert isinstance(out, bytes)


@needs_corpus
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_fuzz_transaction_payload(data):
    bodies = [b for rel in PAYLOAD_FILES for _, b in payload_bodies(rel)]
    body = mutate(data, data.draw(st.sampled_from(bodies)))
    try:
        tp = parse_transaction_payload(body)
        list(iter_transaction_events(tp, chunk=data.draw(st.sampled_from([5, 1 << 20]))))
        for _ in iter_payload_events(decompress_payload(tp)):
            pass
    except DecodeError:
        return
