"""MariaDB binlog decryption against a real encrypted binlog, plus round trips for CBC and CTR."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.binlog.constants import EventType
from binlake.binlog.encryption import (
    BinlogDecryptor,
    load_key_file,
    parse_start_encryption,
)
from binlake.errors import ConfigError, DecodeError

CORPUS = Path("/work/shared/corpus/generated-mariadb-10.11")
ENCRYPTED = CORPUS / "mariadb-10.11.19-encrypted-row-full-crc32.000001"
KEY_FILE = CORPUS / "binlog-key.txt"

needs_corpus = pytest.mark.skipif(not ENCRYPTED.exists(), reason="binlog corpus not available")

PLAUSIBLE = {
    EventType.QUERY, EventType.TABLE_MAP, EventType.WRITE_ROWS_V1, EventType.UPDATE_ROWS_V1,
    EventType.DELETE_ROWS_V1, EventType.XID, EventType.ROTATE, EventType.STOP,
    EventType.MARIADB_GTID, EventType.MARIADB_GTID_LIST, EventType.MARIADB_ANNOTATE_ROWS,
    EventType.MARIADB_BINLOG_CHECKPOINT,
}


def raw_events(data: bytes):
    """(offset, event bytes) using only the clear length field at 9..13."""
    pos = 4
    while pos < len(data):
        (size,) = struct.unpack_from("<I", data, pos + 9)
        yield pos, data[pos:pos + size]
        pos += size


def crc_ok(event: bytes) -> bool:
    return zlib.crc32(event[:-4]) == struct.unpack("<I", event[-4:])[0]


def query_text(event: bytes) -> str:
    body = event[19:-4]
    db_len = body[8]
    (status_len,) = struct.unpack_from("<H", body, 11)
    return body[13 + status_len + db_len + 1:].decode("utf-8")


@pytest.fixture(scope="module")
def corpus():
    data = ENCRYPTED.read_bytes()
    keys = load_key_file(KEY_FILE.read_text())
    events = list(raw_events(data))
    start_index = next(i for i, (_, ev) in enumerate(events) if ev[4] == EventType.MARIADB_START_ENCRYPTION)
    start_body = events[start_index][1][19:-4]
    return keys, start_body, events[start_index + 1:]


@pytest.fixture(scope="module")
def decrypted(corpus):
    keys, start_body, encrypted = corpus
    dec = BinlogDecryptor(start_body, keys)
    return [(off, dec.decrypt_event(ev, off)) for off, ev in encrypted]


# ---------------------------------------------------------------- a test-side encryptor
# Written from the scheme documented in binlake.binlog.encryption, to prove the decryptor
# is its exact inverse (the corpus only has CBC).


def encrypt_event(plain: bytes, offset: int, key: bytes, nonce: bytes, mode: str) -> bytes:
    size = len(plain)
    moved = bytearray(plain)
    moved[9:13] = plain[0:4]
    data = bytes(moved[4:])
    iv = nonce + struct.pack("<I", offset & 0xFFFFFFFF)
    if mode == "aes_ctr":
        enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
        cipher = enc.update(data) + enc.finalize()
    else:
        full = len(data) - len(data) % 16
        enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        cipher = enc.update(data[:full]) + enc.finalize() if full else b""
        ecb = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        mask = ecb.update(iv) + ecb.finalize()
        cipher += bytes(a ^ b for a, b in zip(data[full:], mask))
    out = bytearray(size)
    out[4:] = cipher
    out[0:4] = cipher[5:9]
    struct.pack_into("<I", out, 9, size)
    return bytes(out)


def start_body(key_version: int = 1, nonce: bytes = bytes(range(12))) -> bytes:
    return b"\x01" + struct.pack("<I", key_version) + nonce


def fake_event(type_code: int, offset: int, body: bytes) -> bytes:
    size = 19 + len(body) + 4
    head = struct.pack("<IBIIIH", 1700000000, type_code, 1, size, offset + size, 0)
    event = head + body
    return event + struct.pack("<I", zlib.crc32(event))


# ---------------------------------------------------------------- key files


def test_load_key_file_corpus():
    keys = load_key_file(KEY_FILE.read_text()) if KEY_FILE.exists() else None
    if keys is not None:
        assert list(keys) == [1] and len(keys[1]) == 32


def test_load_key_file_formats():
    text = (
        "# comment\n"
        "\n"
        "  1;F5502320F8429037B8DAEF761B189D12\r\n"
        "2;770A8A65DA156D24EE2A093277530142770A8A65DA156D24 trailing words\n"
        "   # indented comment\n"
        "100;" + "ab" * 32 + "\n"
    )
    keys = load_key_file(text)
    assert keys[1] == bytes.fromhex("F5502320F8429037B8DAEF761B189D12")
    assert len(keys[2]) == 24 and len(keys[100]) == 32
    assert load_key_file(text.encode()) == keys


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("1;abcd\n", "line 1"),
        ("# ok\nx;" + "00" * 16, "line 2"),
        ("1:" + "00" * 16, "line 1"),
        ("0;" + "00" * 16, "invalid key id"),
        ("1;" + "00" * 33, "line 1"),
        ("1;" + "0" * 31, "line 1"),
        ("", "no keys"),
        ("# only comments\n", "no keys"),
    ],
)
def test_load_key_file_errors(text, fragment):
    with pytest.raises(ConfigError, match=fragment):
        load_key_file(text)


def test_encrypted_key_file_is_refused_clearly():
    with pytest.raises(ConfigError, match="encrypted .*not supported"):
        load_key_file(b"Salted__\x01\x02\x03\x04\x05\x06\x07\x08garbage")
    with pytest.raises(ConfigError, match="not supported"):
        load_key_file("Salted__abc")


# ---------------------------------------------------------------- START_ENCRYPTION


def test_parse_start_encryption():
    s = parse_start_encryption(start_body(7, b"N" * 12))
    assert (s.scheme, s.key_version, s.nonce) == (1, 7, b"N" * 12)
    with pytest.raises(DecodeError):
        parse_start_encryption(b"\x01\x00")
    with pytest.raises(DecodeError, match="scheme 2"):
        parse_start_encryption(b"\x02" + b"\x00" * 16)


@needs_corpus
def test_corpus_start_encryption(corpus):
    _, body, _ = corpus
    s = parse_start_encryption(body)
    assert s.scheme == 1 and s.key_version == 1 and len(s.nonce) == 12


# ---------------------------------------------------------------- the corpus file


@needs_corpus
def test_decrypt_every_event(decrypted, corpus):
    _, _, encrypted = corpus
    assert len(decrypted) == 140  # INDEX.md: "encrypted:140"
    for (off, raw), (_, plain) in zip(encrypted, decrypted):
        assert len(plain) == len(raw)
        assert crc_ok(plain), f"CRC mismatch at {off}"
        assert plain[4] in PLAUSIBLE, f"type {plain[4]} at {off}"
        assert struct.unpack_from("<I", plain, 9)[0] == len(plain)
        assert struct.unpack_from("<I", plain, 13)[0] == off + len(plain)  # end_log_pos
        assert struct.unpack_from("<I", plain, 5)[0] == 1  # server id
    types = {plain[4] for _, plain in decrypted}
    assert {EventType.QUERY, EventType.TABLE_MAP, EventType.WRITE_ROWS_V1, EventType.XID,
            EventType.MARIADB_GTID} <= types
    # the session ran with SET timestamp=1700000000
    assert all(struct.unpack_from("<I", p, 0)[0] == 1700000000
               for _, p in decrypted if p[4] == EventType.QUERY)


@needs_corpus
def test_decrypted_statements_come_from_the_workload(decrypted):
    workload = (CORPUS / "workload.sql").read_text(encoding="utf-8")
    section = workload.split("-- scenario encrypted-row-full-crc32", 1)[1].split("-- scenario ", 1)[0]
    queries = [query_text(p) for _, p in decrypted if p[4] == EventType.QUERY]
    annotations = [p[19:-4].decode("utf-8") for _, p in decrypted if p[4] == EventType.MARIADB_ANNOTATE_ROWS]
    assert "CREATE DATABASE IF NOT EXISTS corpus" in queries
    assert sum(q.startswith("CREATE TABLE ") for q in queries) == section.count("CREATE TABLE ") == 10
    for q in queries:
        if q.startswith(("BEGIN", "SAVEPOINT", "ROLLBACK TO")):
            continue
        assert q in section, q
    assert len(annotations) == 23 and all(a in section for a in annotations)
    assert any("emoji 😀 ünïcödé 中文" in a for a in annotations)


@needs_corpus
def test_cbc_reencryption_reproduces_the_file(corpus, decrypted):
    """Re-encrypting each plaintext gives the on-disk bytes: the tail handling is exact."""
    keys, body, encrypted = corpus
    nonce = parse_start_encryption(body).nonce
    tails = set()
    for (off, raw), (_, plain) in zip(encrypted, decrypted):
        assert encrypt_event(plain, off, keys[1], nonce, "aes_cbc") == raw
        tails.add((len(raw) - 4) % 16)
    assert len(tails) > 8  # many partial-block lengths were exercised


@needs_corpus
def test_explicit_cbc_and_memoryview_input(corpus, decrypted):
    keys, body, encrypted = corpus
    dec = BinlogDecryptor(memoryview(body), keys, algorithm="aes_cbc")
    off, raw = encrypted[5]
    assert dec.decrypt_event(memoryview(raw), off) == decrypted[5][1]


@needs_corpus
def test_ctr_round_trip(corpus, decrypted):
    keys, body, _ = corpus
    nonce = parse_start_encryption(body).nonce
    for algorithm in ("aes_ctr", "auto"):
        dec = BinlogDecryptor(body, keys, algorithm=algorithm)
        for off, plain in decrypted:
            assert dec.decrypt_event(encrypt_event(plain, off, keys[1], nonce, "aes_ctr"), off) == plain
        assert dec.algorithm == "aes_ctr"


@pytest.mark.parametrize("key_len", [16, 24, 32])
@pytest.mark.parametrize("mode", ["aes_cbc", "aes_ctr"])
def test_synthetic_round_trip(key_len, mode):
    key = bytes(range(key_len))
    dec = BinlogDecryptor(start_body(), {1: key}, algorithm=mode)
    offset = 256 + 40
    for body_len in range(0, 40):  # covers events shorter than one AES block after byte 4
        plain = fake_event(EventType.XID, offset, bytes(range(body_len)))
        raw = encrypt_event(plain, offset, key, bytes(range(12)), mode)
        assert raw[9:13] == plain[9:13]  # length in clear
        assert dec.decrypt_event(raw, offset) == plain
        offset += len(plain)


def test_offsets_above_4gib_wrap_in_the_iv():
    key = b"k" * 16
    dec = BinlogDecryptor(start_body(), {1: key}, algorithm="aes_cbc", relay_log=True)
    plain = fake_event(EventType.QUERY, 0, b"x" * 50)
    raw = encrypt_event(plain, (1 << 32) + 100, key, bytes(range(12)), "aes_cbc")
    assert dec.decrypt_event(raw, (1 << 32) + 100) == plain


# ---------------------------------------------------------------- wrong keys and bad input


@needs_corpus
def test_wrong_key_gives_decode_error(corpus):
    _, body, encrypted = corpus
    for algorithm in ("aes_cbc", "aes_ctr", "auto"):
        dec = BinlogDecryptor(body, {1: b"\x00" * 32}, algorithm=algorithm)
        with pytest.raises(DecodeError, match="wrong key"):
            for off, raw in encrypted:
                dec.decrypt_event(raw, off)


@needs_corpus
def test_wrong_offset_gives_decode_error(corpus):
    keys, body, encrypted = corpus
    dec = BinlogDecryptor(body, keys, algorithm="aes_cbc")
    off, raw = encrypted[0]
    with pytest.raises(DecodeError, match="wrong key") as info:
        dec.decrypt_event(raw, off + 16)
    assert info.value.offset == off + 16


def test_length_mismatch_and_short_input():
    dec = BinlogDecryptor(start_body(), {1: b"k" * 16})
    with pytest.raises(DecodeError, match="length field"):
        dec.decrypt_event(b"\x00" * 9 + struct.pack("<I", 99) + b"\x00" * 20, 300)
    with pytest.raises(DecodeError, match="shorter than a header"):
        dec.decrypt_event(b"\x00" * 10, 300)


def test_key_selection():
    with pytest.raises(ConfigError, match="key id 1"):
        BinlogDecryptor(start_body(), {2: b"k" * 16})
    with pytest.raises(ConfigError, match="version 3"):
        BinlogDecryptor(start_body(key_version=3), {1: b"k" * 16})
    dec = BinlogDecryptor(start_body(key_version=3), {(1, 3): b"v" * 16, 1: b"k" * 16})
    assert dec.key == b"v" * 16
    with pytest.raises(ConfigError, match="AES needs"):
        BinlogDecryptor(start_body(), {1: b"short"})
    with pytest.raises(ConfigError, match="algorithm"):
        BinlogDecryptor(start_body(), {1: b"k" * 16}, algorithm="aes_gcm")


@needs_corpus
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_events_raise_only_decode_error(corpus, data):
    keys, body, encrypted = corpus
    dec = BinlogDecryptor(body, keys, algorithm=data.draw(st.sampled_from(["aes_cbc", "aes_ctr", "auto"])))
    off, raw = data.draw(st.sampled_from(encrypted))
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    raw = bytes(raw[:cut])
    try:
        out = dec.decrypt_event(raw, data.draw(st.sampled_from([off, off + 1, 0])))
    except DecodeError:
        return
    assert len(out) == len(raw)
