"""Handing memory a finished batch freed back to the operating system."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

_LIBC: Any = None


def total_memory() -> int | None:
    """The machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def release_freed() -> None:
    """Return freed heap pages to the OS: glibc's `malloc_trim` (Python's large strings and
    lists) and Arrow's pool (`release_unused`). Both allocators keep what a batch freed for
    reuse, so a driver that held one large batch stays that large between batches otherwise.
    A no-op where there is no glibc."""
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except ImportError:  # pragma: no cover - pyarrow is a dependency of every caller
        pass
