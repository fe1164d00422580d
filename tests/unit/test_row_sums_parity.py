"""verify's row fold in the C core (`row_sums`, with its own SHA-1, through
`verify.lake.fold_columns`) gives exactly what its Python twin (`verify.lake.fold_rows`:
Arrow's joined row texts and hashlib) gives: on random columns of every framing, NULLs,
sliced arrays, 64-bit offsets, empty and long values, with the CPU's SHA instructions and
without them; and it refuses what it cannot fold."""
from __future__ import annotations

import hashlib
import random
from array import array
from typing import Any, Iterator

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake._speedups.native import c_module, function
from binlake.verify import lake
from binlake.verify.canonical import Column

pytestmark = pytest.mark.skipif(function("row_sums") is None, reason="no C core")


@pytest.fixture(params=[True, False], ids=["sha-ni", "portable"])
def simd(request: Any) -> Iterator[bool]:
    before = c_module.sha1_set_simd(request.param)
    try:
        yield request.param
    finally:
        c_module.sha1_set_simd(before)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.sampled_from([b"x" * 55, b"y" * 56, b"z" * 64,
                                                   b"w" * 119, b"v" * 120]))
def test_sha1_is_hashlibs(data: bytes) -> None:
    for on in (True, False):
        before = c_module.sha1_set_simd(on)
        try:
            assert c_module.sha1(data) == hashlib.sha1(data).digest()
        finally:
            c_module.sha1_set_simd(before)


def test_sha1_of_long_and_misaligned_buffers(simd: bool) -> None:
    data = random.Random(7).randbytes(3_000_000)
    for start, n in ((0, len(data)), (1, 1_000_003), (13, 65), (63, 4097)):
        view = memoryview(data)[start:start + n]
        assert c_module.sha1(view) == hashlib.sha1(view).digest()


VALUES = ["", "a", "12,3", "é✓", "N", "-0p1", "x" * 200, "y" * 257, "z" * 5000]


def _column(rng: random.Random, n: int) -> pa.Array:
    """n random value texts: NULLs or not, sliced (a non-zero offset), large_string."""
    nulls = rng.random() < 0.5
    vals = [None if nulls and rng.random() < 0.3 else rng.choice(VALUES) for _ in range(n)]
    shape = rng.choice(["plain", "sliced", "large"])
    if shape == "sliced":
        return pa.array([None, "pre"] + vals + ["post"], pa.string()).slice(2, n)
    return pa.array(vals, pa.large_string() if shape == "large" else pa.string())


def _ref(cols: list[Column], texts: list[pa.Array], chunks: list[int],
         slots: int) -> tuple[list[int], list[int]]:
    """canonical.row_sql's text in plain Python, hashed by hashlib."""
    counts, xors = [0] * slots, [0] * slots
    for i, c in enumerate(chunks):
        parts = []
        for col, a in zip(cols, texts):
            v = a[i].as_py()
            parts.append("N" if v is None else
                         f"{len(v.encode())}:{v}" if col.kind == "text" else v)
        counts[c] += 1
        xors[c] ^= int.from_bytes(hashlib.sha1(",".join(parts).encode()).digest()[:8], "big")
    return counts, xors


@pytest.mark.parametrize("seed", range(12))
def test_row_sums_is_fold_rows(seed: int, simd: bool) -> None:
    rng = random.Random(seed)
    n = rng.randrange(1, 300)
    cols = [Column(f"c{i}", rng.choice(["text", "int", "float"]), "x")
            for i in range(rng.randrange(1, 30))]
    texts = [_column(rng, n) for _ in cols]
    slots = rng.randrange(1, 6)
    chunks = [rng.randrange(slots) for _ in range(n)]
    got = array("Q", bytes(8 * slots)), array("Q", bytes(8 * slots))
    want = array("Q", bytes(8 * slots)), array("Q", bytes(8 * slots))
    lake.fold_columns(tuple(cols), texts, chunks, *got)
    lake.fold_rows(tuple(cols), [t.cast(pa.string()) for t in texts], chunks, *want)
    assert got == want
    assert (list(got[0]), list(got[1])) == _ref(cols, texts, chunks, slots)
    lake.fold_columns(tuple(cols), texts, chunks, *got)  # adds to what they hold
    assert list(got[0]) == [2 * chunks.count(s) for s in range(slots)]
    assert list(got[1]) == [0] * slots


def test_row_sums_refuses_what_it_cannot_fold() -> None:
    a = pa.array(["a", "b"], pa.string())
    col = (None, a.buffers()[1], a.buffers()[2], 0, False, True)
    acc = array("Q", bytes(16)), array("Q", bytes(16))
    with pytest.raises(ValueError, match="chunk 2 is not below 2"):
        c_module.row_sums([col], [0, 2], *acc)
    with pytest.raises(ValueError, match="fewer rows than chunks"):
        c_module.row_sums([col], [0, 1, 1], *acc)
    with pytest.raises(ValueError, match="differ in size"):
        c_module.row_sums([col], [0, 1], acc[0], array("Q", bytes(8)))
    bad = (None, array("i", [0, 1, 99]).tobytes(), b"ab", 0, False, False)
    with pytest.raises(ValueError, match="row 1's offsets are out of its data"):
        c_module.row_sums([bad], [0, 1], *acc)
    with pytest.raises(TypeError):
        c_module.row_sums([col], [0, 1], bytes(16), bytes(16))


def test_fold_columns_takes_only_string_arrays() -> None:
    """A value text the C core cannot read as offsets and data is refused by name, not
    hashed as whatever its buffers hold."""
    acc = array("Q", bytes(8)), array("Q", bytes(8))
    with pytest.raises(TypeError, match="column n: a value text must be a string array"):
        lake.fold_columns((Column("n", "int", "int"),), [pa.array([1, 2], pa.int64())],
                          [0, 0], *acc)
    assert list(acc[0]) == [0]
