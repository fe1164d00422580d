"""The C extension (`_speedups`), loaded and configured once, for every caller.

`c_module` is the extension, or None when it is not built. `speedups` is the same, or None
when BINLAKE_PURE_PYTHON is set: callers that have a Python twin use `speedups`, so the
variable switches every fast path at once. Every C path keeps its Python twin and a parity
test (tests/unit, tests/corpus).
"""
from __future__ import annotations

import os
from decimal import Decimal
from typing import Any, Callable

from ...errors import DecodeError
from ..values import ABSENT, MySQLTime
from . import temporal

__all__ = ["c_module", "function", "prepare_float_text", "speedups"]


def _load() -> Any:
    try:
        from . import _speedups as mod
    except ImportError:  # no compiler at install time: the Python twins run
        return None
    mod.configure(ABSENT, Decimal, MySQLTime, DecodeError, temporal.decode_date,
                  temporal.decode_datetime2, temporal.decode_timestamp2)
    return mod


c_module: Any = _load()
speedups: Any = None if os.environ.get("BINLAKE_PURE_PYTHON") else c_module


def function(name: str) -> Callable[..., Any] | None:
    """A function of the C extension by name, or None without it (BINLAKE_PURE_PYTHON=1)."""
    return getattr(speedups, name, None) if speedups is not None else None


_POW10_SET: list[bool] = []


def prepare_float_text() -> None:
    """Hand the C writers their float tables once (see _set_pow10); a no-op without the
    extension."""
    if speedups is not None and not _POW10_SET:
        _set_pow10()


def _set_pow10() -> None:
    """Hand the C writer its 126-bit powers of ten (put_repr in _speedups.c): for k in
    [-292, 324], g = floor(10^k * 2^(125 - floor(log2 10^k))) + 1, as (g >> 63, g & (2^63 - 1)),
    computed exactly with Python integers. Without them the C writer formats floats with dtoa."""
    set_pow10 = getattr(speedups, "set_pow10", None)
    if set_pow10 is not None:
        out = bytearray()
        for k in range(-292, 325):
            r = 125 - ((k * 913124641741) >> 38)  # 125 - floor(log2 10^k)
            num, den = 10 ** max(k, 0) << max(r, 0), 10 ** max(-k, 0) << max(-r, 0)
            g = num // den + 1
            out += (g >> 63).to_bytes(8, "little") + (g & ((1 << 63) - 1)).to_bytes(8, "little")
        set_pow10(bytes(out))
    _POW10_SET.append(True)
