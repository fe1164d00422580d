"""The C JSON writer's text path (UTF-8 check + JSON escaping, 16 bytes at a time) against
the Python encoder, on texts built to put every kind of byte at every offset of a vector."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.binlog.constants import ColumnType as T
from binlake.binlog.table_map import ColumnInfo

from test_rowcodec_c import _c_json_run, _json_pair, _json_run


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


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["utf8", "json", "bytes"]), texts, st.data())
def test_text_writer_agrees_with_python(kind: str, raw: bytes, data: st.DataObject) -> None:
    if data.draw(st.booleans()):  # one invalid sequence somewhere
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.sampled_from(INVALID)) + raw[at:]
    jdec, pydec, enc = _json_pair(_cols(kind), [True])
    buf = _row(kind, raw) + _row(kind, raw[:data.draw(st.integers(0, len(raw)))])
    expect, got = _json_run(jdec, pydec, enc, buf), _c_json_run(jdec, buf)
    assert expect == got


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


def test_every_offset_of_a_vector() -> None:
    """Each special piece at each offset 0..40 of a plain text, valid and cut short."""
    jdec, pydec, enc = _json_pair(_cols("bytes"), [True])
    for piece in PIECES[8:] + INVALID:
        for at in range(41):
            for tail in (0, 1, 5, 16, 20):
                raw = b"x" * at + piece + b"y" * tail
                buf = _row("bytes", raw)
                assert _json_run(jdec, pydec, enc, buf) == _c_json_run(jdec, buf), (piece, at, tail)
