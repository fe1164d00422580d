"""The C row decoder must agree with the generated Python decoder on every input.

The Python decoder is the reference (it is what the corpus and live tests proved first);
here random table shapes meet random bytes, valid or not, and both decoders must return the
same rows and positions, or both fail.
"""
from __future__ import annotations

import dataclasses
import math
import struct
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.binlog.columns.rowcodec import compile_c_row_decoder, compile_python_row_decoder
from binlake.binlog.constants import ColumnType as T
from binlake.binlog.table_map import ColumnInfo
from binlake.errors import DecodeError

pytestmark = pytest.mark.skipif(
    compile_c_row_decoder([], []) is None, reason="C extension not built (pure-Python install)")

ERRORS = (DecodeError, ValueError, IndexError, struct.error, UnicodeDecodeError, OverflowError)


def _string_meta(max_len: int, real: int = T.STRING) -> int:
    b0 = real ^ (((max_len >> 4) & 0x300) ^ 0x300) >> 4 << 4 if max_len > 255 else real
    return (b0 << 8) | (max_len & 0xFF)


@st.composite
def column(draw: st.DrawFn, index: int) -> ColumnInfo:
    kind = draw(st.sampled_from([
        "int", "float", "double", "year", "decimal", "date", "datetime2", "timestamp2", "time2",
        "varchar", "char", "binary", "blob", "enum", "set", "bit", "datetime1", "time1",
        "timestamp1", "geometry", "json_text", "vector", "uuid", "inet6", "inet4"]))
    def mk(t: int, meta: int, **kw: object) -> ColumnInfo:
        return ColumnInfo(index=index, type=t, binlog_type=t, meta=meta, nullable=True, **kw)
    if kind == "int":
        t = draw(st.sampled_from([T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG]))
        return mk(t, 0, unsigned=draw(st.booleans()))
    if kind == "float":
        return mk(T.FLOAT, 4)
    if kind == "double":
        return mk(T.DOUBLE, 8)
    if kind == "year":
        return mk(T.YEAR, 0)
    if kind == "decimal":
        p = draw(st.integers(1, 65))
        s = draw(st.integers(0, min(p, 30)))
        return mk(T.NEWDECIMAL, (p << 8) | s)
    if kind == "date":
        return mk(T.DATE, 0)
    if kind in ("datetime2", "timestamp2", "time2"):
        t = {"datetime2": T.DATETIME2, "timestamp2": T.TIMESTAMP2, "time2": T.TIME2}[kind]
        return mk(t, draw(st.integers(0, 6)))
    if kind == "datetime1":
        return mk(T.DATETIME, 0)
    if kind == "time1":
        return mk(T.TIME, 0)
    if kind == "timestamp1":
        return mk(T.TIMESTAMP, 0)
    if kind == "varchar":
        coll = draw(st.sampled_from([None, 8, 33, 45, 63, 28, 95]))
        return mk(T.VARCHAR, draw(st.sampled_from([10, 255, 256, 1000])), collation=coll)
    if kind in ("char", "binary"):
        n = draw(st.sampled_from([1, 5, 40, 255]))
        return mk(T.STRING, _string_meta(n), collation=63 if kind == "binary" else draw(
            st.sampled_from([None, 8, 45])))
    if kind == "blob":
        return mk(T.BLOB, draw(st.integers(1, 4)), collation=draw(st.sampled_from([None, 63, 45])))
    if kind == "json_text":
        return mk(T.BLOB, 4, collation=45, is_json=True)
    if kind == "enum":
        size = draw(st.sampled_from([1, 2]))
        labels = draw(st.none() | st.lists(st.text("abc", min_size=1, max_size=3), min_size=1,
                                           max_size=5).map(tuple))
        return mk(T.ENUM, (T.ENUM << 8) | size, enum_values=labels)
    if kind == "set":
        size = draw(st.sampled_from([1, 2, 8]))
        labels = draw(st.none() | st.lists(st.text("xyz", min_size=1, max_size=2), min_size=1,
                                           max_size=8).map(tuple))
        return mk(T.SET, (T.SET << 8) | size, set_values=labels)
    if kind == "bit":
        nbits = draw(st.integers(1, 64))
        return mk(T.BIT, ((nbits // 8) << 8) | (nbits % 8))
    if kind == "geometry":
        return mk(T.GEOMETRY, 4)
    if kind in ("uuid", "inet6", "inet4"):  # BINARY(16)/(4) that the schema history names
        return mk(T.STRING, _string_meta(4 if kind == "inet4" else 16), collation=63,
                  plugin_type=kind)
    return mk(T.VECTOR, 4)


@st.composite
def shape(draw: st.DrawFn) -> tuple[list[ColumnInfo], list[bool]]:
    n = draw(st.integers(1, 12))
    cols = [draw(column(i)) for i in range(n)]
    present = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    present[draw(st.integers(0, n - 1))] = True  # an image without columns takes no bytes
    return cols, present


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _run(dec, buf: bytes) -> tuple[str, object]:
    rows, pos = [], 0
    try:
        while pos < len(buf):
            row, pos = dec(buf, pos)
            rows.append(row)
    except ERRORS:
        return "error", len(rows)
    if pos > len(buf):
        # Python slices past the end without an error; rows.py rejects the overrun. The C
        # decoder stops at the row itself.
        return "error", len(rows) - 1
    return "ok", (tuple(rows), pos)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape(), st.binary(max_size=300))
def test_c_decoder_agrees_with_python_on_random_bytes(sh, buf: bytes) -> None:
    cols, present = sh
    py = compile_python_row_decoder(cols, present)
    c = compile_c_row_decoder(cols, present)
    r_py, r_c = _run(py, buf), _run(c, buf)
    assert r_py[0] == r_c[0], (r_py, r_c, py.__source__)
    if r_py[0] == "ok":
        assert _same(r_py[1], r_c[1]), (r_py, r_c, py.__source__)
    else:
        assert r_py[1] == r_c[1]  # failed at the same row


def _encode_valid(c: ColumnInfo, draw: st.DrawFn) -> bytes:
    """Mostly well-formed values, so the happy paths are compared too."""
    t = c.type
    if t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG):
        size = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}[t]
        return draw(st.binary(min_size=size, max_size=size))
    if t == T.DATE:
        y, m, d = draw(st.integers(0, 9999)), draw(st.integers(0, 12)), draw(st.integers(0, 31))
        return ((y << 9) | (m << 5) | d).to_bytes(3, "little")
    if t == T.DATETIME2:
        y, mo = draw(st.integers(0, 9999)), draw(st.integers(0, 12))
        d, h = draw(st.integers(0, 31)), draw(st.integers(0, 23))
        mi, s = draw(st.integers(0, 59)), draw(st.integers(0, 59))
        x = ((((y * 13 + mo) << 5) | d) << 17) | (h << 12) | (mi << 6) | s
        fb = (0, 1, 1, 2, 2, 3, 3)[c.fsp]
        frac = draw(st.integers(0, 10 ** c.fsp - 1)) * 10 ** (6 - c.fsp) if c.fsp else 0
        fr = {0: b"", 1: (frac // 10000).to_bytes(1, "big"), 2: (frac // 100).to_bytes(2, "big"),
              3: frac.to_bytes(3, "big")}[fb]
        return (x + 0x8000000000).to_bytes(5, "big") + fr
    if t == T.TIMESTAMP2:
        fb = (0, 1, 1, 2, 2, 3, 3)[c.fsp]
        return draw(st.integers(0, 2 ** 32 - 1)).to_bytes(4, "big") + bytes(fb)
    if t == T.NEWDECIMAL:
        from binlake.binlog.columns.decimal import decimal_bin_size

        size = decimal_bin_size(c.precision, c.scale)
        return bytes([0x80]) + bytes(size - 1) if draw(st.booleans()) else bytes([0x7F]) + b"\xff" * (size - 1)
    if t in (T.VARCHAR, T.BLOB):
        text = draw(st.text(max_size=20)).encode("utf-8")
        prefix = 1 if t == T.VARCHAR and c.meta < 256 else (2 if t == T.VARCHAR else c.meta)
        return len(text).to_bytes(prefix, "little") + text
    if t == T.STRING and c.plugin_type:  # UUID/INET: trailing zero bytes may be left out
        raw = draw(st.binary(min_size=0, max_size=4 if c.plugin_type == "inet4" else 16))
        return bytes([len(raw)]) + raw
    return b""


def _valid_table(data: st.DataObject) -> tuple[list[ColumnInfo], bytes]:
    """A random table of common types and a few well-formed rows of it."""
    kinds = [T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.DATE, T.DATETIME2, T.TIMESTAMP2,
             T.NEWDECIMAL, T.VARCHAR, T.BLOB]
    n = data.draw(st.integers(1, 8))
    cols = []
    for i in range(n):
        t = data.draw(st.sampled_from(kinds + ["uuid", "inet6", "inet4"]))
        if isinstance(t, str):
            width = 4 if t == "inet4" else 16
            cols.append(ColumnInfo(index=i, type=T.STRING, binlog_type=T.STRING,
                                   meta=_string_meta(width), nullable=True, collation=63,
                                   plugin_type=t))
            continue
        meta = {T.DATETIME2: data.draw(st.integers(0, 6)), T.TIMESTAMP2: data.draw(st.integers(0, 6)),
                T.NEWDECIMAL: (data.draw(st.integers(10, 65)) << 8) | data.draw(st.integers(0, 9)),
                T.VARCHAR: data.draw(st.sampled_from([20, 300])), T.BLOB: 2}.get(t, 0)
        cols.append(ColumnInfo(index=i, type=t, binlog_type=t, meta=meta, nullable=True,
                               unsigned=data.draw(st.booleans()),
                               collation=45 if t in (T.VARCHAR, T.BLOB) else None))
    buf = b""
    for _ in range(data.draw(st.integers(1, 4))):
        nulls = data.draw(st.integers(0, (1 << n) - 1))
        buf += nulls.to_bytes((n + 7) // 8, "little")
        for i, c in enumerate(cols):
            if not nulls >> i & 1:
                buf += _encode_valid(c, data.draw)
    return cols, buf


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_c_decoder_agrees_with_python_on_valid_rows(data: st.DataObject) -> None:
    cols, buf = _valid_table(data)
    n = len(cols)
    present = [True] * n
    r_py = _run(compile_python_row_decoder(cols, present), buf)
    r_c = _run(compile_c_row_decoder(cols, present), buf)
    assert r_py[0] == "ok"
    assert r_c[0] == "ok" and _same(r_py[1], r_c[1])
    out: list = []
    pos = compile_c_row_decoder(cols, present).many(buf, 0, len(buf), out)
    assert pos == len(buf) and _same(tuple(out), r_py[1][0])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape(), st.binary(max_size=300))
def test_count_walks_the_rows_many_decodes(sh, buf: bytes) -> None:
    """count() (rows of filtered tables, not decoded) ends where many() ends, row for row."""
    cols, present = sh
    c = compile_c_row_decoder(cols, present)
    out: list = []
    try:
        end = c.many(buf, 0, len(buf), out)
    except ERRORS:
        end = None
    try:
        counted = c.count(buf, 0, len(buf))
    except ERRORS:
        counted = None
    if end is not None:
        # many() succeeded: every value was well formed, so the widths agree.
        assert counted == (len(out), end)
    elif counted is not None:
        # count() only checks widths (a bad UTF-8 text or date still has its width).
        assert counted[1] == len(buf) and counted[0] >= len(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_count_on_valid_rows_and_pairs(data: st.DataObject) -> None:
    cols, buf = _valid_table(data)
    dec = compile_c_row_decoder(cols, [True] * len(cols))
    out: list = []
    dec.many(buf, 0, len(buf), out)
    assert dec.count(buf, 0, len(buf)) == (len(out), len(buf))
    pairs = buf + buf  # as (before, after) pairs: one per two images
    assert dec.count(pairs, 0, len(pairs), dec) == (len(out), len(pairs))


def test_many_pairs_and_errors_keep_the_good_rows() -> None:
    cols = [ColumnInfo(index=0, type=T.LONG, binlog_type=T.LONG, meta=0, nullable=True),
            ColumnInfo(index=1, type=T.VARCHAR, binlog_type=T.VARCHAR, meta=10, nullable=True,
                       collation=45)]
    dec = compile_c_row_decoder(cols, [True, True])
    row = lambda i, s: b"\x00" + struct.pack("<i", i) + bytes([len(s)]) + s
    buf = row(1, b"a") + row(2, b"bb") + row(3, b"ccc") + row(4, b"dddd")
    out: list = []
    assert dec.many(buf, 0, len(buf), out, dec) == len(buf)
    assert out == [((1, "a"), (2, "bb")), ((3, "ccc"), (4, "dddd"))]
    out = []
    with pytest.raises(ValueError, match="truncated"):
        dec.many(buf[:-2], 0, len(buf) - 2, out)
    assert out == [(1, "a"), (2, "bb"), (3, "ccc")]
    bad = row(5, b"\xff\xfe")
    with pytest.raises(UnicodeDecodeError):
        dec(bad, 0)


# -- JSON images: the C writer against the Python encoder of cdc/arrow.py ----------------

def _json_pair(cols: list[ColumnInfo], present: list[bool]):
    from binlake.binlog.columns.rowcodec import compile_json_row_decoder
    from binlake.binlog.table_map import TableMapEvent
    from binlake.cdc.arrow import image_encoder

    names = [f"c{c.index}" for c in cols]
    named = [dataclasses.replace(c, name=n) for c, n in zip(cols, names)]
    tm = TableMapEvent.__new__(TableMapEvent)
    object.__setattr__(tm, "columns", named)
    object.__setattr__(tm, "schema", "db")
    object.__setattr__(tm, "table", "t")
    object.__setattr__(tm, "row_decoders", {})
    jdec = compile_json_row_decoder(named, names, present)
    if jdec is None:
        pytest.skip("BINLAKE_PURE_PYTHON=1: the C JSON writer is switched off")
    return jdec, compile_python_row_decoder(named, present), image_encoder(tm)


def _json_run(jdec, pydec, enc, buf: bytes) -> tuple[str, object]:
    r = _run(pydec, buf)
    if r[0] != "ok":
        return r
    return "ok", [enc(row).encode() for row in r[1][0]]


def _c_json_run(jdec, buf: bytes) -> tuple[str, object]:
    out: list = []
    try:
        pos = jdec.json_many(buf, 0, len(buf), out)
    except ERRORS:
        return "error", len(out)
    assert pos == len(buf)
    return "ok", out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape(), st.binary(max_size=300))
def test_c_json_images_agree_with_the_python_encoder(sh, buf: bytes) -> None:
    cols, present = sh
    jdec, pydec, enc = _json_pair(cols, present)
    expect, got = _json_run(jdec, pydec, enc, buf), _c_json_run(jdec, buf)
    assert expect[0] == got[0], (expect, got, pydec.__source__)
    assert expect[1] == got[1], (expect, got, pydec.__source__)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_c_json_images_agree_on_valid_rows(data: st.DataObject) -> None:
    cols, buf = _valid_table(data)
    n = len(cols)
    jdec, pydec, enc = _json_pair(cols, [True] * n)
    expect, got = _json_run(jdec, pydec, enc, buf), _c_json_run(jdec, buf)
    assert expect[0] == "ok" and expect == got


def test_json_text_escapes_like_json_dumps() -> None:
    import json

    cols = [ColumnInfo(index=0, type=T.VARCHAR, binlog_type=T.VARCHAR, meta=300, nullable=True,
                       collation=45),
            ColumnInfo(index=1, type=T.DOUBLE, binlog_type=T.DOUBLE, meta=8, nullable=True)]
    jdec, _, _ = _json_pair(cols, [True, True])
    text = 'a"b\\c\n\x01\x1f\x7f é 😀 ' * 3
    raw = text.encode()
    buf = b"\x00" + len(raw).to_bytes(2, "little") + raw + struct.pack("<d", 0.1)
    img, pos = jdec.json(buf, 0)
    assert pos == len(buf)
    assert json.loads(img) == {"c0": text, "c1": 0.1}
    assert img == json.dumps({"c0": text, "c1": 0.1}, ensure_ascii=False,
                             separators=(",", ":")).encode()


def test_json_text_buffer_grows_with_escapes() -> None:
    import json

    cols = [ColumnInfo(index=0, type=T.BLOB, binlog_type=T.BLOB, meta=4, nullable=True,
                       collation=45)]
    jdec, _, _ = _json_pair(cols, [True])
    for text in ('"' * 70_000, "\x01" * 50_000 + "é" * 10, "a" * 9 + "\n" * 30_000 + "😀"):
        raw = text.encode()
        img, pos = jdec.json(b"\x00" + len(raw).to_bytes(4, "little") + raw, 0)
        assert pos == 5 + len(raw)
        assert img == json.dumps({"c0": text}, ensure_ascii=False, separators=(",", ":")).encode()


# -- updates: the after image's unchanged values are the before image's ---------------------

def _valid_values(data: st.DataObject, cols: list[ColumnInfo]) -> list[bytes | None]:
    """One well-formed row as each column's bytes (None: NULL)."""
    return [None if data.draw(st.integers(0, 4)) == 0 else _encode_valid(c, data.draw)
            for c in cols]


def _row_bytes(values: list[bytes | None]) -> bytes:
    nulls = sum(1 << i for i, v in enumerate(values) if v is None)
    return nulls.to_bytes((len(values) + 7) // 8, "little") + b"".join(v for v in values if v)


def _update_images(data: st.DataObject, cols: list[ColumnInfo]
                   ) -> tuple[bytes, list[tuple[list[bytes | None], list[bytes | None]]]]:
    """An update event's rows: 1-3 (before, after) images, each after image keeping some of
    its before image's values byte for byte; as bytes and as each column's bytes."""
    pairs = []
    for _ in range(data.draw(st.integers(1, 3))):
        before = _valid_values(data, cols)
        keep = data.draw(st.lists(st.booleans(), min_size=len(cols), max_size=len(cols)))
        pairs.append((before, [b if k else a for b, a, k in
                               zip(before, _valid_values(data, cols), keep)]))
    return b"".join(_row_bytes(b) + _row_bytes(a) for b, a in pairs), pairs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_update_pairs_share_the_values_whose_bytes_did_not_change(data: st.DataObject) -> None:
    """An after value with the before value's bytes is that same object; every value is what
    decoding the after image alone gives."""
    cols, _ = _valid_table(data)
    dec = compile_c_row_decoder(cols, [True] * len(cols))
    buf, pairs = _update_images(data, cols)
    out: list = []
    assert dec.many(buf, 0, len(buf), out, dec) == len(buf)
    expect = _run(compile_python_row_decoder(cols, [True] * len(cols)), buf)
    assert expect[0] == "ok" and _same(tuple(v for pair in out for v in pair), expect[1][0])
    for (before, after), (bvals, avals) in zip(out, pairs):
        for i, (bv, av) in enumerate(zip(bvals, avals)):
            if bv is not None and bv is av:  # (the same bytes, kept)
                assert after[i] is before[i], (i, cols[i])


def test_update_pairs_share_across_different_images_and_not_json_documents() -> None:
    """MINIMAL before image (the key alone) and a FULL after image: the key is shared. A
    MySQL JSON document is a dict: decoded twice, so that the two images never share one."""
    cols = [ColumnInfo(index=0, type=T.LONG, binlog_type=T.LONG, meta=0, nullable=True),
            ColumnInfo(index=1, type=T.VARCHAR, binlog_type=T.VARCHAR, meta=100, nullable=True,
                       collation=45),
            ColumnInfo(index=2, type=T.JSON, binlog_type=T.JSON, meta=4, nullable=True)]
    bdec = compile_c_row_decoder(cols, [True, False, False])
    adec = compile_c_row_decoder(cols, [True, True, False])
    key = struct.pack("<i", 7_000_001)  # (an int CPython does not cache)
    buf = b"\x00" + key + b"\x00" + key + b"\x02hi"
    out: list = []
    assert bdec.many(buf, 0, len(buf), out, adec) == len(buf)
    (before, after), = out
    assert repr(before[1]) == "ABSENT" and after[:2] == (7_000_001, "hi")
    assert after[0] is before[0]

    full = compile_c_row_decoder(cols, [True, True, True])
    doc = b"\x00\x00\x00\x04\x00"  # {} in MySQL's binary JSON
    image = b"\x00" + key + b"\x02hi" + struct.pack("<I", len(doc)) + doc
    out = []
    assert full.many(image + image, 0, 2 * len(image), out, full) == 2 * len(image)
    (before, after), = out
    assert before == after == (7_000_001, "hi", {})
    assert after[0] is before[0] and after[1] is before[1] and after[2] is not before[2]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_update_json_images_copy_the_unchanged_values_text(data: st.DataObject) -> None:
    """An update event's packed JSON images (the after image's unchanged values copied from
    the before image's text) are the images each encoded alone."""
    cols, _ = _valid_table(data)
    jdec, pydec, enc = _json_pair(cols, [True] * len(cols))
    buf, pairs = _update_images(data, cols)
    alone = [tuple(enc(pydec(_row_bytes(v), 0)[0]).encode() for v in pair) for pair in pairs]
    packed, pos = jdec.json_rows(buf, 0, len(buf), jdec)
    assert pos == len(buf) and list(packed) == alone


def test_a_text_columns_kind_guess_follows_its_values() -> None:
    """A utf8mb4 column keeps a guess between values (the kind of its next str) that picks
    the one-pass conversion: values that make it right, too wide (narrowed after), too
    narrow (converted again), ASCII and after an error, each still CPython's str, in its
    canonical kind, or CPython's error."""
    cols = [ColumnInfo(index=0, type=T.BLOB, binlog_type=T.BLOB, meta=4, nullable=True,
                       collation=45)]
    dec = compile_c_row_decoder(cols, [True])
    # (the guess is sure after two values of a kind in a row; the comments say which way
    # each value goes)
    values = ["é" * 700 + "🚀", "😀" + "x" * 600,  # two passes, then UCS-4 is sure
              "z" * 600 + "😀",  # one pass, right
              "€" * 300,  # one pass, too wide: narrowed
              "你" * 250, "你" * 100 + "😀",  # two passes, UCS-2 sure; one pass too narrow
              "🚀" * 200, "a" * 900,  # UCS-4 sure; ASCII in one pass: narrowed
              "é" * 400, "ß" * 300, "ß" * 300 + "Ā",  # Latin-1 sure; too narrow
              "Ā" * 300, "ſ" * 300,  # UCS-2 (2-byte sequences) sure
              b"\xc4\x80" * 300 + b"\xf0\x9f\x98" + b"y" * 700,  # one pass: not UTF-8
              "é" * 300 + "€", "a" * 700]
    for v in values:
        raw = v if isinstance(v, bytes) else v.encode()
        row = b"\x00" + struct.pack("<I", len(raw)) + raw
        try:
            want: object = raw.decode()
        except UnicodeDecodeError:
            with pytest.raises(UnicodeDecodeError):
                dec(row, 0)
            continue
        got, pos = dec(row, 0)
        assert pos == len(row)
        assert got == (want,) and type(got[0]) is str
        assert sys.getsizeof(got[0]) == sys.getsizeof(want)  # the canonical kind
