"""The server's float text for verify (`canonical.value_sql`, evaluated by a real MariaDB)
is the driver's (`verify.lake._float_text`) and the exact frexp text, for every power of
two a double has, its neighbours on both sides (where LOG2 rounds to the wrong exponent),
subnormals, the extremes and random bit patterns; and for FLOAT columns, widened."""
from __future__ import annotations

import math
import random
import struct
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from binlake.replica.url import ServerURL  # noqa: E402
from binlake.verify import lake  # noqa: E402
from binlake.verify.canonical import Column, value_sql  # noqa: E402
from binlake.verify.source import Source  # noqa: E402

pytestmark = pytest.mark.integration

DB = "verify_float"


def frexp_text(v: float) -> str:
    """'<sign><exponent>p<53-bit mantissa>', '0' for either zero, from frexp."""
    if v == 0:
        return "0"
    m, e = math.frexp(abs(v))  # m in [0.5, 1)
    return f"{'-' if v < 0 else '+'}{e - 1}p{int(m * 2 ** 53)}"


def doubles() -> list[float]:
    out = [0.0, -0.0, 0.1, 0.3, 1 / 3, -1.5, 1.7976931348623157e308, 2.2250738585072014e-308,
           struct.unpack("<d", struct.pack("<q", 1))[0],                 # the smallest
           struct.unpack("<d", struct.pack("<q", (1 << 52) - 1))[0]]     # the largest subnormal
    for k in range(-1074, 1024):
        p = 2.0 ** k
        out += [p, math.nextafter(p, 0), math.nextafter(p, math.inf), -p]
    rng = random.Random(11)
    while len(out) < 10_000:
        v = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(v):
            out.append(v)
    return [v for v in out if math.isfinite(v)]


def floats() -> list[float]:
    """float32 values, as doubles: powers of two, their float32 neighbours, random bits."""
    def f32(bits: int) -> float:
        v: float = struct.unpack("<f", struct.pack("<I", bits))[0]
        return v

    out = [f32(1), f32(0x007FFFFF), f32(0x7F7FFFFF), 0.0]
    for e in range(1, 255):
        bits = e << 23
        out += [f32(bits), f32(bits - 1), f32(bits + 1)]
    rng = random.Random(12)
    while len(out) < 3000:
        v = f32(rng.getrandbits(32))
        if math.isfinite(v):
            out.append(v)
    return out


@pytest.fixture(scope="module")
def server(mariadb: Any) -> Any:
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}", database=None)
    mariadb.sql("CREATE TABLE d (id INT PRIMARY KEY, v DOUBLE)",
                "CREATE TABLE f (id INT PRIMARY KEY, v FLOAT)", database=DB)
    for table, values in (("d", doubles()), ("f", floats())):
        for at in range(0, len(values), 2000):
            mariadb.sql(f"INSERT INTO {table} VALUES " + ",".join(
                f"({at + i}, {v!r})" for i, v in enumerate(values[at:at + 2000])), database=DB)
    return mariadb


@pytest.mark.parametrize("table, values, dtype", [("d", doubles, "float64"),
                                                  ("f", floats, "float32")])
def test_server_float_text_is_the_drivers(server: Any, table: str, values: Any,
                                          dtype: str) -> None:
    want = values()
    src = Source(ServerURL.parse(server.url))
    try:
        col = Column("v", "float", "double" if table == "d" else "float")
        rows = src.rows(f"SELECT id, v + 0e0, {value_sql(col)} FROM {DB}.{table} ORDER BY id")
    finally:
        src.close()
    assert len(rows) == len(want)
    stored = [float(v) for _, v, _ in rows]
    assert stored == want  # the server holds exactly the values written
    got = [t for _, _, t in rows]
    driver = lake._float_text(pa.array(want, getattr(pa, dtype)())).to_pylist()
    assert got == driver
    assert got == [frexp_text(v) for v in want]
