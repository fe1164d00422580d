"""The C JSON writer's text path (UTF-8 check + JSON escaping, 16 bytes at a time) against
the Python encoder, on texts built to put every kind of byte at every offset of a vector."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.binlog.constants import ColumnType as T
from binlake.binlog.table_map import ColumnInfo

from simd import simd_level  # noqa: F401  (a fixture: each test below at every vector level)
from test_rowcodec_c import _c_json_run, _json_pair, _json_run

# (the level fixture only sets which code runs: the same for every example)
_EACH = {"suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
         "deadline": None}


# pieces that matter to the writer: plain runs of every length around the 16-byte step,
# escapes, multi-byte characters, U+2028/2029 (not escaped), DEL, and invalid sequences
# (stray continuation, overlong, surrogate, beyond U+10FFFF, truncated at the end)
PIECES = [b"a" * k for k in (1, 3, 7, 8, 15, 16, 17, 31)] + [
    b'"', b"\\", b"\n", b"\r", b"\t", b"\b", b"\f", b"\x00", b"\x01", b"\x1f", b"\x7f", b" ",
    "é".encode(), "€".encode(), "界".encode(), "😀".encode(), "\u2028".encode(),
    "\u2029".encode(), "\U0010ffff".encode(), "\ud7ff".encode(), "\ue000".encode(),
]
INVALID = [b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80",
           b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xfe",
           b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3", b"\xe2\x28\xa1", b"\xc3\x28"]


def _cols(kind: str) -> list[ColumnInfo]:
    if kind == "utf8":  # TXT_UTF8: invalid text raises UnicodeDecodeError
        return [ColumnInfo(index=0, type=T.BLOB, binlog_type=T.BLOB, meta=4, nullable=True,
                           collation=45)]
    if kind == "json":
        return [ColumnInfo(index=0, type=T.BLOB, binlog_type=T.BLOB, meta=4, nullable=True,
                           collation=45, is_json=True)]
    # TXT_UTF8_OR_BYTES (no collation known): invalid text falls back to base64
    return [ColumnInfo(index=0, type=T.VARCHAR, binlog_type=T.VARCHAR, meta=1000, nullable=True)]


def _row(kind: str, raw: bytes) -> bytes:
    prefix = 2 if kind == "bytes" else 4
    return b"\x00" + len(raw).to_bytes(prefix, "little") + raw


texts = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)


@pytest.mark.usefixtures("simd_level")
@settings(max_examples=400, **_EACH)
@given(st.sampled_from(["utf8", "json", "bytes"]), texts, st.data())
def test_text_writer_agrees_with_python(kind: str, raw: bytes, data: st.DataObject) -> None:
    if data.draw(st.booleans()):  # one invalid sequence somewhere
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.sampled_from(INVALID)) + raw[at:]
    jdec, pydec, enc = _json_pair(_cols(kind), [True])
    buf = _row(kind, raw) + _row(kind, raw[:data.draw(st.integers(0, len(raw)))])
    expect, got = _json_run(jdec, pydec, enc, buf), _c_json_run(jdec, buf)
    assert expect == got


@pytest.mark.usefixtures("simd_level")
@settings(max_examples=200, **_EACH)
@given(st.text(max_size=200))
def test_any_text_escapes_like_json_dumps(text: str) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    jdec, _, _ = _json_pair(_cols("utf8"), [True])
    try:
        text.encode()
    except UnicodeEncodeError:  # lone surrogates: not UTF-8, the decoder's error
        with pytest.raises(UnicodeDecodeError):
            jdec.json(_row("utf8", raw), 0)
        return
    img, _ = jdec.json(_row("utf8", raw), 0)
    assert img == json.dumps({"c0": text}, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.usefixtures("simd_level")
@settings(max_examples=300, **_EACH)
@given(st.lists(st.sampled_from(PIECES + [b'"' * 5, b'\\"', b'{"k":"v","n":[1,2]}', b"\\" * 3]),
                min_size=10, max_size=300).map(b"".join))
def test_long_texts_dense_with_quotes_escape_like_json_dumps(raw: bytes) -> None:
    """Texts past the 32-byte vectors (JSON documents in text columns: a quote every few
    bytes, control characters now and then)."""
    jdec, _, _ = _json_pair(_cols("utf8"), [True])
    img, _ = jdec.json(_row("utf8", raw), 0)
    assert img == json.dumps({"c0": raw.decode()}, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.usefixtures("simd_level")
@pytest.mark.parametrize("raw", [b'"' * 100_003, b'\\"' * 40_001, (b'ab"\\' * 9 + b"\n") * 3001,
                                 ("é\"" * 20_000).encode(), b"x" * 70_001 + b'"'])
def test_huge_texts_that_double_when_escaped(raw: bytes) -> None:
    """The output buffer grows while the vector loop writes twice what it reads."""
    jdec, _, _ = _json_pair(_cols("utf8"), [True])
    img, _ = jdec.json(_row("utf8", raw), 0)
    assert img == json.dumps({"c0": raw.decode()}, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.usefixtures("simd_level")
def test_every_offset_of_a_vector() -> None:
    """Each special piece at each offset 0..40 of a plain text, valid and cut short."""
    jdec, pydec, enc = _json_pair(_cols("bytes"), [True])
    for piece in PIECES[8:] + INVALID:
        for at in range(70):
            for tail in (0, 1, 5, 16, 20):
                raw = b"x" * at + piece + b"y" * tail
                buf = _row("bytes", raw)
                assert _json_run(jdec, pydec, enc, buf) == _c_json_run(jdec, buf), (piece, at, tail)


# -- FLOAT/DOUBLE: the C writer keeps the text of recent values (keyed by their bits) ----------

_SPECIAL_BITS = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF, 1, 0x000FFFFFFFFFFFFF, 0x3FB999999999999A]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 2 ** 64 - 1) | st.sampled_from(_SPECIAL_BITS), min_size=1,
                max_size=6), st.lists(st.integers(0, 40), min_size=1, max_size=40),
       st.integers(0, 63))
def test_repeated_floats_write_the_same_text(pool: list[int], picks: list[int], flip: int) -> None:
    """Values repeat across rows (as in update and delete images): every repeat, and every
    value sharing a cache slot with another or one bit away from another, must give the
    formatter's text."""
    # neighbours one bit away, and values in the same slot of the C cache (its hash is
    # (bits + kind) * K >> 54: adding K's inverse mod 2**64 moves the product by 1)
    same_slot = pow(0x9E3779B97F4A7C15, -1, 2 ** 64)
    pool = pool + [v ^ (1 << flip) for v in pool] + [(v + same_slot) % 2 ** 64 for v in pool]
    cols = [ColumnInfo(index=0, type=T.DOUBLE, binlog_type=T.DOUBLE, meta=8, nullable=True),
            ColumnInfo(index=1, type=T.FLOAT, binlog_type=T.FLOAT, meta=4, nullable=True)]
    jdec, pydec, enc = _json_pair(cols, [True, True])
    buf = b"".join(b"\x00" + pool[k % len(pool)].to_bytes(8, "little")
                   + (pool[(k + 1) % len(pool)] >> 32).to_bytes(4, "little") for k in picks)
    expect, got = _json_run(jdec, pydec, enc, buf), _c_json_run(jdec, buf)
    assert expect[0] == "ok" and expect == got


# -- DOUBLE text without dtoa (Schubfach in put_repr): must be repr() exactly ------------------

def _double_col() -> list[ColumnInfo]:
    return [ColumnInfo(index=0, type=T.DOUBLE, binlog_type=T.DOUBLE, meta=8, nullable=True)]


def _doubles_agree(bits: list[int]) -> None:
    import struct

    jdec, _, _ = _json_pair(_double_col(), [True])
    buf = b"".join(b"\x00" + (b % 2 ** 64).to_bytes(8, "little") for b in bits)
    out: list = []
    assert jdec.json_many(buf, 0, len(buf), out) == len(buf)
    for b, img in zip(bits, out):
        (d,) = struct.unpack("<d", (b % 2 ** 64).to_bytes(8, "little"))
        assert img == b'{"c0":' + repr(d).encode() + b"}", hex(b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2 ** 64 - 1) | st.floats().map(
    lambda f: int.from_bytes(__import__("struct").pack("<d", f), "little")), max_size=50))
def test_doubles_print_as_repr(bits: list[int]) -> None:
    _doubles_agree(bits)


def test_doubles_at_the_edges_print_as_repr() -> None:
    """Powers of two (the asymmetric intervals) and of ten, their neighbours, integers about
    2^53, short decimals, every exponent: where a shortest-digits algorithm goes wrong."""
    import math
    import random
    import struct

    def b(x: float) -> int:
        return int.from_bytes(struct.pack("<d", x), "little")

    bits = []
    for e in range(-1074, 1024):
        bits += [b(math.ldexp(1.0, e)) + d for d in (-1, 0, 1)]
    for k in range(-325, 309):
        bits += [b(float(f"1e{k}")) + d for d in (-2, -1, 0, 1, 2)]
        bits += [b(float(f"9.999999999999999e{k}")) if k < 308 else 0]
    bits += [b(float(i)) for i in range(2 ** 53 - 50, 2 ** 53 + 50)]
    rnd = random.Random(2024)
    bits += [b(rnd.randint(-10 ** 17, 10 ** 17) / 10 ** rnd.randint(0, 20)) for _ in range(20000)]
    bits += [rnd.getrandbits(64) for _ in range(20000)]
    _doubles_agree(bits)


def test_utf8_check_agrees_with_python_on_short_sequences() -> None:
    """Every 1- and 2-byte sequence, and 3-/4-byte ones from every lead byte with the edge
    values of each range after it: the C check (a DFA) must accept exactly what Python's
    strict decoder accepts; the column falls back to base64 otherwise."""
    jdec, pydec, enc = _json_pair(_cols("bytes"), [True])
    edge = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
    seqs = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    seqs += [bytes([a, b, c]) for a in range(0xC0, 0x100) for b in edge for c in edge]
    seqs += [bytes([a, b, c, d]) for a in range(0xE0, 0x100) for b in range(0x70, 0xD0)
             for c in edge for d in (0x7F, 0x80, 0xBF, 0xC0)]
    seqs += [b"x" * 17 + s + b"y" * 17 for s in seqs[256::97]]  # inside the 16-byte loop too
    buf = b"".join(_row("bytes", s) for s in seqs)
    assert _json_run(jdec, pydec, enc, buf) == _c_json_run(jdec, buf)


# -- FLOAT text without %g retries (Schubfach on the float32): must be float32_text's --------

def _floats_agree(bits: list[int]) -> None:
    import struct

    from binlake.cdc.changes import float32_text

    col = [ColumnInfo(index=0, type=T.FLOAT, binlog_type=T.FLOAT, meta=4, nullable=True)]
    jdec, _, _ = _json_pair(col, [True])
    buf = b"".join(b"\x00" + (b % 2 ** 32).to_bytes(4, "little") for b in bits)
    out: list = []
    assert jdec.json_many(buf, 0, len(buf), out) == len(buf)
    for b, img in zip(bits, out):
        (f,) = struct.unpack("<f", (b % 2 ** 32).to_bytes(4, "little"))
        if f != f or f in (float("inf"), float("-inf")):
            continue  # not JSON numbers: the writer's own spelling, tested elsewhere
        assert img == b'{"c0":' + repr(float32_text(f)).encode() + b"}", hex(b)


def test_floats_print_as_the_shortest_float32_text() -> None:
    """Every exponent with its neighbours (powers of two: the asymmetric intervals), powers of
    ten, integers about 2^24, subnormals, and random bit patterns."""
    import math
    import random
    import struct

    def b(x: float) -> int:
        return int.from_bytes(struct.pack("<f", x), "little")

    bits = [0, 1 << 31, 1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3DCCCCCD]
    for e in range(-149, 128):
        bits += [b(math.ldexp(1.0, e)) + d for d in (-1, 0, 1)]
    for k in range(-45, 39):
        try:
            bits += [b(float(f"1e{k}")) + d for d in (-2, -1, 0, 1, 2)]
        except OverflowError:
            pass
    bits += [b(float(i)) + d for i in range(2 ** 24 - 40, 2 ** 24 + 40) for d in (0, 1)]
    rnd = random.Random(32)
    bits += [b(rnd.randint(-10 ** 9, 10 ** 9) / 10 ** rnd.randint(0, 12)) for _ in range(30000)]
    bits += [rnd.getrandbits(32) for _ in range(60000)]
    _floats_agree([x % 2 ** 32 for x in bits])
