"""`release_freed` hands what a batch freed back to the OS (the driver between batches)."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from binlake._util.memory import release_freed


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_freed_batch_memory_goes_back() -> None:
    release_freed()
    base = _rss_mb()
    # a batch's worth of Arrow buffers and mid-sized Python strings, held then dropped
    # (every 4th string kept: freed pages between live ones stay with glibc until trimmed)
    arrays = [pa.array([b"x" * 2000] * 20_000, pa.binary()) for _ in range(4)]
    texts = [("%d" % i) * 400 for i in range(60_000)]
    kept = texts[::4]
    del arrays, texts
    held = _rss_mb()
    release_freed()
    after = _rss_mb()
    assert len(kept) == 15_000
    assert held - base > 100, (base, held)  # the test did hold memory
    assert held - after > 0.5 * (held - base), (base, held, after)
