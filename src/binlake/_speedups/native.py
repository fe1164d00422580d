"""The C core's one loader and switchboard: every choice between the C extension
(`_speedups`) and its Python twins is made here, once, from the environment.

Callers read `switches` when a decoder, a batch builder or a file read starts (never per
event), and nothing else decides:

    switches.c          the extension in use, or None: not built, or BINLAKE_PURE_PYTHON=1
                        (then every fast path takes its Python twin)
    switches.simd       BINLAKE_SIMD: "" the widest vector code the CPU has, "avx2" at most
                        AVX2 (and 256-bit CRC folds), "0" none (no SHA instructions either;
                        applied to the extension as it loads; its utf8_simd() says what runs)
    switches.crc_ahead  BINLAKE_CRC_AHEAD (default 1; 0 turns it off): a mapped file's
                        checksums checked by a thread ahead of the decoder, given a second
                        CPU (binlog/files.py; a pool with a process per CPU turns it off)
    switches.scanner    the decoder's C scanner frames, checks and decodes the common rows
                        events whole (binlog/decoder.py; needs `c`); off: the decoder's
                        Python fast path (codecs/rows.py's fast_rows) with the C row decoders
    switches.records    `binlake decode` makes the records of the C scanner's runs in C
                        (cdc/runs.py's RecordRuns; needs `c`)
    switches.segments   the Arrow path's C scanner adds rows events to the batch itself
                        (cdc/arrow.py's file_batches; needs `c`)

Tests that compare a C path with its Python twin flip switches one way, for a block:
`with switches.set(c=None): ...` (restored after it). `c_module` is the extension whatever
the environment, for parity tests that call both. Every C path keeps its Python twin and a
parity test (tests/unit, tests/corpus).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any, Callable, Iterator

from ..errors import DecodeError
from ..binlog.values import ABSENT, MySQLTime
from ..binlog.columns import temporal

__all__ = ["Switches", "c_module", "function", "prepare_float_text", "switches"]


def _load() -> Any:
    try:
        from . import _core as mod  # type: ignore[attr-defined]  # (C, maybe not built)
    except ImportError:  # no compiler at install time: the Python twins run
        return None
    mod.configure(ABSENT, Decimal, MySQLTime, DecodeError, temporal.decode_date,
                  temporal.decode_datetime2, temporal.decode_timestamp2)
    _cap_simd(mod, os.environ.get("BINLAKE_SIMD", ""))
    return mod


def _cap_simd(mod: Any, simd: str) -> None:
    """The extension starts with the widest vector code the CPU has; BINLAKE_SIMD caps it."""
    if simd.startswith("0"):
        mod.utf8_set_simd("off")
        mod.crc32_set_simd(128)
        mod.sha1_set_simd(False)
    elif simd == "avx2":
        if mod.utf8_simd() == "avx512":
            mod.utf8_set_simd("avx2")
        if mod.crc32_set_simd(128) > 128:  # (the width before: the CPU's widest)
            mod.crc32_set_simd(256)


@dataclass
class Switches:
    """The choices between C and Python (see the module's docstring)."""

    c: Any
    simd: str
    crc_ahead: bool
    scanner: bool = True
    records: bool = True
    segments: bool = True

    @contextmanager
    def set(self, **changes: Any) -> Iterator["Switches"]:
        """Switches changed for a block, as a test compares a C path with its twin: what
        starts inside it (a decoder, a builder, a file read) sees them."""
        unknown = set(changes) - {f.name for f in fields(self)}
        if unknown:
            raise AttributeError(f"no such switch: {', '.join(sorted(unknown))}")
        before = {name: getattr(self, name) for name in changes}
        for name, value in changes.items():
            setattr(self, name, value)
        try:
            yield self
        finally:
            for name, value in before.items():
                setattr(self, name, value)


c_module: Any = _load()
switches = Switches(
    c=None if os.environ.get("BINLAKE_PURE_PYTHON") else c_module,
    simd=os.environ.get("BINLAKE_SIMD", ""),
    crc_ahead=os.environ.get("BINLAKE_CRC_AHEAD", "1") != "0",
)
def function(name: str) -> Callable[..., Any] | None:
    """A function of the C extension in use by name, or None without it."""
    c = switches.c
    return getattr(c, name, None) if c is not None else None


_POW10_SET: list[bool] = []


def prepare_float_text() -> None:
    """Hand the C writers their float tables once (see _set_pow10); a no-op without the
    extension."""
    if c_module is not None and not _POW10_SET:
        _set_pow10()


def _set_pow10() -> None:
    """Hand the C writer its 126-bit powers of ten (put_repr in float_text.c): for k in
    [-292, 324], g = floor(10^k * 2^(125 - floor(log2 10^k))) + 1, as (g >> 63, g & (2^63 - 1)),
    computed exactly with Python integers. Without them the C writer formats floats with dtoa."""
    set_pow10 = getattr(c_module, "set_pow10", None)
    if set_pow10 is not None:
        out = bytearray()
        for k in range(-292, 325):
            r = 125 - ((k * 913124641741) >> 38)  # 125 - floor(log2 10^k)
            num, den = 10 ** max(k, 0) << max(r, 0), 10 ** max(-k, 0) << max(-r, 0)
            g = num // den + 1
            out += (g >> 63).to_bytes(8, "little") + (g & ((1 << 63) - 1)).to_bytes(8, "little")
        set_pow10(bytes(out))
    _POW10_SET.append(True)
