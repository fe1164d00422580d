"""Temporal column codecs: DATE, TIME/TIME2, DATETIME/DATETIME2, TIMESTAMP/TIMESTAMP2, YEAR.

Zero and zero-in-date values ('0000-00-00', '2024-02-00') are kept as InvalidTemporal,
never turned into NULL. TIMESTAMP values are UTC instants (the binlog stores epoch seconds).
"""
from __future__ import annotations

import datetime as dt

from ..values import InvalidTemporal, MySQLTime

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
_FRAC_BYTES = (0, 1, 1, 2, 2, 3, 3)
_FRAC_SCALE = (0, 10000, 10000, 100, 100, 1, 1)


def frac_bytes(fsp: int) -> int:
    return _FRAC_BYTES[fsp]


def _frac(fsp_text: str, micro: int, fsp: int) -> str:
    return f".{micro:06d}"[: fsp + 1] if fsp else ""


def make_date(year: int, month: int, day: int) -> dt.date | InvalidTemporal:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return InvalidTemporal(f"{year:04d}-{month:02d}-{day:02d}")


def make_datetime(year: int, month: int, day: int, hour: int, minute: int, second: int,
                  micro: int, fsp: int) -> dt.datetime | InvalidTemporal:
    try:
        return dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        return InvalidTemporal(
            f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
            + _frac("", micro, fsp)
        )


def decode_date(v: int) -> dt.date | InvalidTemporal:
    """3-byte packed date: day 5 bits, month 4 bits, year the rest."""
    return make_date(v >> 9, (v >> 5) & 15, v & 31)


def decode_datetime2(intpart: int, micro: int, fsp: int) -> dt.datetime | InvalidTemporal:
    """5-byte big-endian DATETIME2 (offset 0x8000000000) plus the fraction."""
    v = intpart - 0x8000000000
    ymd = v >> 17
    ym = ymd >> 5
    hms = v & 0x1FFFF
    return make_datetime(ym // 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63,
                         micro, fsp)


def read_frac(buf: bytes | memoryview, pos: int, fsp: int) -> int:
    """Big-endian fraction of fsp digits -> microseconds."""
    n = _FRAC_BYTES[fsp]
    if n == 0:
        return 0
    return int.from_bytes(buf[pos:pos + n], "big") * _FRAC_SCALE[fsp]


def decode_timestamp2(seconds: int, micro: int, fsp: int) -> dt.datetime | InvalidTemporal:
    if seconds == 0 and micro == 0:
        return InvalidTemporal("0000-00-00 00:00:00" + _frac("", 0, fsp))
    return EPOCH + dt.timedelta(seconds=seconds, microseconds=micro)


def decode_timestamp(seconds: int) -> dt.datetime | InvalidTemporal:
    if seconds == 0:
        return InvalidTemporal("0000-00-00 00:00:00")
    return EPOCH + dt.timedelta(seconds=seconds)


def decode_datetime_v1(v: int) -> dt.datetime | InvalidTemporal:
    """Old 8-byte DATETIME: the decimal number YYYYMMDDhhmmss."""
    d, t = divmod(v, 1000000)
    return make_datetime(d // 10000, (d // 100) % 100, d % 100, t // 10000, (t // 100) % 100,
                         t % 100, 0, 0)


def decode_time_v1(v: int) -> MySQLTime:
    """Old 3-byte TIME: signed decimal number hhmmss."""
    if v & 0x800000:
        v -= 0x1000000
    neg = v < 0
    v = abs(v)
    return MySQLTime(neg, v // 10000, (v // 100) % 100, v % 100, 0)


def decode_time2(buf: bytes | memoryview, pos: int, fsp: int) -> MySQLTime:
    """TIME2: 3 bytes big-endian (offset 0x800000) + fraction; negative values borrow."""
    if fsp >= 5:
        packed = int.from_bytes(buf[pos:pos + 6], "big") - 0x800000000000
    else:
        intpart = int.from_bytes(buf[pos:pos + 3], "big") - 0x800000
        if fsp == 0:
            frac = 0
        elif fsp <= 2:
            frac = buf[pos + 3]
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x100
            frac *= 10000
        else:
            frac = int.from_bytes(buf[pos + 3:pos + 5], "big")
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x10000
            frac *= 100
        packed = (intpart << 24) + frac
    neg = packed < 0
    if neg:
        packed = -packed
    hms = packed >> 24
    micro = packed & 0xFFFFFF
    return MySQLTime(neg, (hms >> 12) & 0x3FF, (hms >> 6) & 0x3F, hms & 0x3F, micro)


def decode_year(v: int) -> int:
    return 0 if v == 0 else 1900 + v
