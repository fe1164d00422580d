"""A MySQL JSON column holding the JSON document `null` is not SQL NULL.

No local server writes MySQL binary JSON (MariaDB's JSON is text), and the corpus has no
top-level JSON null, so the row images here are built from the documented format: a JSON
column is a 4-byte length plus the binary document; `04 00` is the literal null.
"""
from __future__ import annotations

import json
import pickle

import pytest

from binlake.binlog.columns.json_binary import decode_json_binary, decode_json_column
from binlake.binlog.columns.rowcodec import compile_c_row_decoder, compile_python_row_decoder
from binlake.binlog.constants import ColumnType as T
from binlake.binlog.table_map import ColumnInfo
from binlake.cdc.jsontext import value_text_function
from binlake.cdc.changes import json_value
from binlake.binlog.values import JSON_NULL

COLS = [ColumnInfo(index=0, type=T.LONG, binlog_type=T.LONG, meta=0, nullable=False, name="id"),
        ColumnInfo(index=1, type=T.JSON, binlog_type=T.JSON, meta=4, nullable=True, name="doc")]
PRESENT = [True, True]


def _row(doc: bytes | None) -> bytes:
    nulls = 0b10 if doc is None else 0
    body = (7).to_bytes(4, "little")
    if doc is not None:
        body += len(doc).to_bytes(4, "little") + doc
    return bytes([nulls]) + body


def _decoders():
    out = [compile_python_row_decoder(COLS, PRESENT)]
    c = compile_c_row_decoder(COLS, PRESENT)
    if c is not None:
        out.append(c)
    return out


@pytest.mark.parametrize("dec", _decoders(), ids=lambda d: type(d).__name__)
def test_json_null_document_is_not_sql_null(dec) -> None:
    assert dec(_row(b"\x04\x00"), 0)[0] == (7, JSON_NULL)
    assert dec(_row(b""), 0)[0] == (7, JSON_NULL)  # MySQL reads an empty document as null
    assert dec(_row(None), 0)[0] == (7, None)  # SQL NULL
    assert dec(_row(b"\x04\x01"), 0)[0] == (7, True)
    # Nested nulls stay plain None: [null] is a small array holding the literal null.
    arr = b"\x02" + (1).to_bytes(2, "little") + (7).to_bytes(2, "little") + b"\x04" + b"\x00\x00"
    assert dec(_row(arr), 0)[0] == (7, [None])


def test_json_null_outputs() -> None:
    assert decode_json_binary(b"\x04\x00") is None  # the document decoder itself is unchanged
    assert decode_json_column(b"\x04\x00") is JSON_NULL
    assert json_value(JSON_NULL) is None and not JSON_NULL
    assert pickle.loads(pickle.dumps(JSON_NULL)) is JSON_NULL
    text = value_text_function(COLS[1])
    # Spark/Delta images carry JSON columns as JSON text: 'null' there, a missing value for NULL.
    assert json.loads(text(JSON_NULL)) == "null"
    assert json.loads(text({"a": None})) == '{"a":null}'
