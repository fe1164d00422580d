"""The vector levels of the C extension's text code this CPU can run, for tests that must
pass on each (the CPU's best level is what runs by default; the others are fallbacks)."""
from __future__ import annotations

import pytest

speedups = pytest.importorskip("binlake._speedups._core")


def levels() -> list[str]:
    """'off' always, then 'avx2' and 'avx512' where the CPU has them."""
    start = speedups.utf8_simd()
    have = []
    for level in ("off", "avx2", "avx512"):
        try:
            speedups.utf8_set_simd(level)
        except ValueError:
            continue
        have.append(level)
    speedups.utf8_set_simd(start)
    return have


@pytest.fixture(params=levels())
def simd_level(request):
    """Runs the test once per level (set for its duration)."""
    before = speedups.utf8_set_simd(request.param)
    yield request.param
    speedups.utf8_set_simd(before)
