"""The C JSON image writer's two flavors: the Arrow images (repr of a float) and the JSON
lines' (json.dumps of the formatted value), which differ where the C writer defers to the
column's formatter: NaN and infinities."""
from __future__ import annotations

import json
import struct

import pytest

from binlake.binlog.columns.rowcodec import compile_json_row_decoder
from binlake.binlog.constants import ColumnType as T
from binlake.binlog.table_map import ColumnInfo

COLS = [ColumnInfo(index=0, type=T.DOUBLE, binlog_type=T.DOUBLE, meta=8, nullable=True),
        ColumnInfo(index=1, type=T.FLOAT, binlog_type=T.FLOAT, meta=4, nullable=True)]


def _images(lines: bool, values: list[tuple[float, float]]) -> list[bytes]:
    dec = compile_json_row_decoder(COLS, ["d", "f"], [True, True], lines)
    if dec is None:
        pytest.skip("BINLAKE_PURE_PYTHON=1: the C JSON writer is switched off")
    buf = b"".join(b"\x00" + struct.pack("<d", d) + struct.pack("<f", f) for d, f in values)
    out: list = []
    assert dec.json_many(buf, 0, len(buf), out) == len(buf)
    return out


def test_non_finite_floats_per_flavor() -> None:
    values = [(float("nan"), float("inf")), (float("-inf"), float("nan")), (1.5, 0.25)]
    arrow, lines = _images(False, values), _images(True, values)
    assert arrow == [b'{"d":nan,"f":inf}', b'{"d":-inf,"f":nan}', b'{"d":1.5,"f":0.25}']
    assert lines == [json.dumps({"d": d, "f": f}, separators=(",", ":")).encode()
                     for d, f in values]
    assert lines[0] == b'{"d":NaN,"f":Infinity}'
