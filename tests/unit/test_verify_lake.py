"""The driver's Delta side of verify (`binlake.verify.lake`): the canonical text in Arrow.

The whole path is compared with the source's SQL and Spark's in tests/spark/test_verify.py
(every column type); these tests pin the parts Arrow does differently from a plain cast.
"""
from __future__ import annotations

import hashlib
import math
import struct
from array import array
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")

from binlake._speedups.native import function  # noqa: E402
from binlake.verify import lake  # noqa: E402
from binlake.verify.canonical import Column  # noqa: E402


def float_ref(v: float | None) -> str | None:
    """The canonical float text by frexp: '<sign><exponent>p<53-bit mantissa>', '0'."""
    if v is None:
        return None
    if v == 0:
        return "0"
    m, e = math.frexp(abs(v))
    return f"{'-' if v < 0 else '+'}{e - 1}p{int(m * 2 ** 53)}"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
                max_size=40))
def test_float_text_is_the_exact_binary_value(values: list[float | None]) -> None:
    got = lake._float_text(pa.array(values, pa.float64())).to_pylist()
    assert got == [float_ref(v) for v in values]


def test_float_text_edges() -> None:
    tiny = struct.unpack("<d", struct.pack("<q", 1))[0]  # the smallest subnormal
    values = [tiny, -tiny, 3 * tiny, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0,
              1.5, -1.5, 0.1 + 0.2, None]
    got = lake._float_text(pa.array(values, pa.float64())).to_pylist()
    assert got[0] == "+-1074p4503599627370496"
    assert got[2] == "+-1073p6755399441055744"
    assert got[5] == "0" and got[6] == "+0p6755399441055744" and got[7] == "-0p6755399441055744"
    assert got == [float_ref(v) for v in values]
    # FLOAT columns are Float32 in Delta: compared by the double they widen to
    f32 = pa.array([1.17549435e-38, 16777217.0, -3.4028234663852886e38], pa.float32())
    assert lake._float_text(f32).to_pylist() == [float_ref(v) for v in f32.to_pylist()]


def test_decimal_text_never_uses_an_exponent() -> None:
    arr = pa.array([Decimal("1E-10"), Decimal("0E-10"), Decimal("-0.0000001000"), None,
                    Decimal("12345678901234567890.1234567890")], pa.decimal128(38, 10))
    assert lake._decimal_text(arr).to_pylist() == [
        "0.0000000001", "0.0000000000", "-0.0000001000", None,
        "12345678901234567890.1234567890"]
    small = pa.array([Decimal("0.0001"), Decimal("-12.5000")], pa.decimal128(30, 4))
    assert lake._decimal_text(small).to_pylist() == ["0.0001", "-12.5000"]


def row_ref(kinds: list[str], rows: list[tuple[str | None, ...]]) -> list[bytes]:
    """`canonical.row_sql`'s text in plain Python."""
    out = []
    for row in rows:
        parts = []
        for k, v in zip(kinds, row):
            if v is None:
                parts.append("N")
            elif k == "text":
                parts.append(f"{len(v.encode())}:{v}")
            else:
                parts.append(v)
        out.append(",".join(parts).encode())
    return out


@pytest.mark.parametrize("long", [False, True])
def test_row_text_pieces_hash_as_the_joined_text(long: bool) -> None:
    """Long text values are hashed where they lie (not copied): each row's hash is that of
    the one joined text, in C and in Python."""
    body = "é" * (400 if long else 3)
    kinds = ["int", "text", "text", "float", "text"]
    rows = [("1", body, "a,b", "0", None), ("2", None, "", None, body + "x"),
            ("3", "N", body, "+1p1", "")]
    cols = tuple(Column(f"c{i}", k, "x") for i, k in enumerate(kinds))
    texts = [pa.array([r[i] for r in rows], pa.string()) for i in range(len(kinds))]
    assert (len(lake.row_text(cols, texts)) > 1) == long
    want = [int.from_bytes(hashlib.sha1(t).digest()[:8], "big") for t in row_ref(kinds, rows)]
    for fold in {lake.fold_rows, lake.fold_columns if function("row_sums") else lake.fold_rows}:
        counts, xors = array("Q", bytes(8 * 3)), array("Q", bytes(8 * 3))
        fold(cols, texts, [0, 1, 2], counts, xors)
        assert list(counts) == [1, 1, 1] and list(xors) == want


def test_files_written_before_a_column_was_added_read_it_as_null() -> None:
    schema = pa.schema([("id", pa.int64()), ("n", pa.int64()), ("added", pa.string())])
    old = pa.record_batch([pa.array([1, 2], pa.int64()), pa.array([3, 4], pa.int32())],
                          names=["id", "n"])
    got = lake._conform(old, schema)
    assert got.schema == schema
    assert got.to_pydict() == {"id": [1, 2], "n": [3, 4], "added": [None, None]}


def plan_of(columns: tuple[Column, ...]) -> "lake.Plan":
    from binlake.verify.source import Chunk, Plan, SourceTable

    t = SourceTable("db", "t", columns, ("id",))
    return Plan(t, [Chunk(0), Chunk(1, lo=("10",))], None)


def test_driver_checksums_of_a_delta_table(tmp_path: "pytest.TempPathFactory") -> None:
    """A table delta-rs wrote, checksummed in the driver: rows split at the boundary, each
    chunk's XOR of the rows' 64-bit SHA-1s of their canonical text."""
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([1, 10, 11], pa.int64()),
                                    "s": pa.array(["a", None, "é"], pa.string())}))
    cols = (Column("id", "int", "bigint"), Column("s", "text", "varchar"))
    got = lake.DriverLake(path, plan_of(cols)).checksums()

    def h(text: str) -> int:
        return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")

    assert got == {0: (1, h("1,1:a")), 1: (2, h("10,N") ^ h("11,2:é"))}


def test_a_file_the_driver_cannot_read_is_one_clear_error(tmp_path: "pytest.TempPathFactory"
                                                          ) -> None:
    from deltalake import write_deltalake

    from binlake.verify.canonical import VerifyError

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int64())}))
    (part,) = path.glob("*.parquet")
    part.write_bytes(b"not parquet at all")
    with pytest.raises(VerifyError) as err:
        lake.DriverLake(str(path), plan_of((Column("id", "int", "bigint"),))).checksums()
    assert "db.t: the driver cannot read" in str(err.value) and "\n" not in str(err.value)
    assert "--engine spark" in (err.value.hint or "")


def test_key_bounds_come_from_the_delta_tables_keys(tmp_path: "pytest.TempPathFactory") -> None:
    """Every chunk_size-th key in key order, as the source's walk would give them; none
    when the Delta table holds far fewer rows than the source's estimate."""
    import datetime as dt

    from deltalake import write_deltalake

    from binlake.verify.source import SourceTable

    path = str(tmp_path / "t")
    days = [dt.date(2024, 1, 1 + i % 3) for i in range(10)]
    write_deltalake(path, pa.table({"d": pa.array(days, pa.date32()),
                                    "n": pa.array([9 - i for i in range(10)], pa.int64()),
                                    "blob": pa.array([bytes([i]) for i in range(10)])}))
    cols = (Column("d", "date", "date"), Column("n", "int", "bigint"),
            Column("blob", "binary", "blob"))
    t = SourceTable("db", "t", cols, ("d", "n"))
    keys = sorted((d.isoformat(), 9 - i) for i, d in enumerate(days))
    assert lake.key_bounds(path, t, 3, 10) == [(d, str(n)) for d, n in keys[3::3]]
    assert lake.key_bounds(path, t, 20, 10) == []
    assert lake.key_bounds(path, t, 3, 100) is None  # the source has far more rows
    blob = SourceTable("db", "t", cols, ("blob",))
    assert lake.key_bounds(path, blob, 4, None) == [("04",), ("08",)]
    assert lake.key_bounds(str(tmp_path / "none"), t, 3, 10) is None


def test_key_bounds_leave_big_tables_to_the_walk(tmp_path: "pytest.TempPathFactory",
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A table with more rows than the driver sorts in memory (by the log's statistics)."""
    from deltalake import write_deltalake

    from binlake.verify.source import SourceTable

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array(range(10), pa.int64())}))
    t = SourceTable("db", "t", (Column("id", "int", "bigint"),), ("id",))
    assert lake.key_bounds(path, t, 4, 10) == [("4",), ("8",)]
    monkeypatch.setattr(lake, "BOUND_ROWS", 9)
    assert lake.key_bounds(path, t, 4, 10) is None


def test_binary_hex_is_each_values_hex() -> None:
    """The hex of a binary column, made from its buffers in one call, is each value's
    upper-case hex: NULLs, empty values, sliced arrays, empty and all-NULL arrays."""
    import random

    rng = random.Random(5)
    for _ in range(100):
        n = rng.randrange(0, 40)
        vals = [None if rng.random() < 0.3 else rng.randbytes(rng.randrange(0, 20))
                for _ in range(n + 4)]
        arr = pa.array(vals, pa.binary()).slice(rng.randrange(0, 4), n)
        got = lake._hex_text(arr)
        got.validate(full=True)
        assert got.to_pylist() == [None if v is None else v.hex().upper()
                                   for v in arr.to_pylist()]
    assert lake._hex_text(pa.array([None, None], pa.binary())).to_pylist() == [None, None]


def test_batches_within_one_chunk_get_it_without_a_bisect_per_row() -> None:
    """An int key's chunks by the batch's min and max where both fall in one chunk, by
    each row's key otherwise: the same chunks either way."""
    from bisect import bisect_right

    from binlake.verify.source import Chunk, Plan, SourceTable

    key = Column("id", "int", "bigint")
    t = SourceTable("db", "t", (key,), ("id",))
    plan = Plan(t, [Chunk(0), Chunk(1, lo=("10",)), Chunk(2, lo=("20",))], None)
    chunk_of = lake._chunker(plan, [key])
    for ids in ([11, 12, 19], [10, 19, 15], [0, 5, -3], [20, 99], [9, 10], [19, 20, 3],
                [25, 1, 12]):
        batch = pa.record_batch([pa.array(ids, pa.int64())], names=["id"])
        got = chunk_of(batch, [0], [pa.array([str(i) for i in ids])])
        assert got == [bisect_right([10, 20], i) for i in ids], ids
