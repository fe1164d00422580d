"""MySQL binary DECIMAL (NEWDECIMAL): base-10^9 groups, big-endian, sign in the top bit.

Decoded to an exact decimal.Decimal that keeps the column's scale ('2.50', not '2.5').
Used by row images, binary JSON opaque values and user variables.
"""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Callable

from ...errors import DecodeError

_DecimalDecoder = Callable[[bytes | bytearray | memoryview, int], tuple[Decimal, int]]
"""(buffer, position) -> (value, position after it)."""

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
MAX_PRECISION = 65
MAX_SCALE = 38  # MySQL caps at 30, MariaDB at 38


@lru_cache(maxsize=None)
def decimal_layout(precision: int, scale: int) -> tuple[int, tuple[tuple[int, int], ...]]:
    """(total size in bytes, ((bytes, digits) per group, integer part first))."""
    if not (1 <= precision <= MAX_PRECISION and 0 <= scale <= min(precision, MAX_SCALE)):
        raise DecodeError(f"invalid DECIMAL({precision},{scale}) metadata")
    intg0, intg0x = divmod(precision - scale, 9)
    frac0, frac0x = divmod(scale, 9)
    groups: list[tuple[int, int]] = []
    if intg0x:
        groups.append((_DIG2BYTES[intg0x], intg0x))
    groups += [(4, 9)] * (intg0 + frac0)
    if frac0x:
        groups.append((_DIG2BYTES[frac0x], frac0x))
    return sum(b for b, _ in groups), tuple(groups)


def decimal_bin_size(precision: int, scale: int) -> int:
    return decimal_layout(precision, scale)[0]


@lru_cache(maxsize=None)
def decoder_for(precision: int, scale: int) -> _DecimalDecoder:
    """Generate a straight-line decoder for one DECIMAL(p,s) layout: one big-endian integer,
    digit groups cut out with shifts, no per-group loop or byte copies."""
    size, groups = decimal_layout(precision, scale)
    top = 1 << (size * 8 - 1)
    lines = ["def dec(buf, pos):",
             f"    end = pos + {size}",
             "    if end > len(buf):",
             f"        raise DecodeError('DECIMAL({precision},{scale}) needs {size} bytes, '"
             " + str(len(buf) - pos) + ' left')",
             "    raw = int.from_bytes(buf[pos:end], 'big')",
             f"    if raw & {top}:",
             f"        raw ^= {top}; sign = ''",
             "    else:",
             f"        raw ^= {(1 << (size * 8)) - 1 ^ top}; sign = '-'"]
    shift = size * 8
    names, checks = [], []
    for i, (nbytes, ndigits) in enumerate(groups):
        shift -= nbytes * 8
        lines.append(f"    g{i} = (raw >> {shift}) & {(1 << (nbytes * 8)) - 1}")
        names.append((f"g{i}", ndigits))
        checks.append(f"g{i} >= {10 ** ndigits}")
    if checks:
        lines.append(f"    if {' or '.join(checks)}:")
        lines.append(f"        raise DecodeError('DECIMAL({precision},{scale}) has a digit group "
                     "beyond its digits')")
    expr = names[0][0] if names else "0"
    for name, ndigits in names[1:]:
        expr = f"({expr}) * {10 ** ndigits} + {name}"
    lines.append(f"    m = {expr}")
    lines.append(f"    return Decimal((sign if m else '') + str(m) + 'E-{scale}'), end")
    ns = {"Decimal": Decimal, "DecodeError": DecodeError}
    exec(compile("\n".join(lines), f"<decimal {precision},{scale}>", "exec"), ns)
    dec: _DecimalDecoder = ns["dec"]
    return dec


def decode_decimal(buf: bytes | bytearray | memoryview, pos: int, precision: int, scale: int
                   ) -> tuple[Decimal, int]:
    """Exact Decimal with the column's scale, and the position after the value."""
    return decoder_for(precision, scale)(buf, pos)


def decode_decimal_bin(buf: bytes | bytearray | memoryview, precision: int, scale: int) -> Decimal:
    return decode_decimal(buf, 0, precision, scale)[0]
