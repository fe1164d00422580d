"""Collation id -> Python codec, for decoding CHAR/VARCHAR/TEXT/ENUM bytes exactly.

Ids come from MySQL's and MariaDB's collation tables (SHOW COLLATION). MySQL's "latin1" is
really Windows-1252, and "utf8"/"utf8mb3" are UTF-8 limited to the BMP.
"""
from __future__ import annotations

import codecs
from functools import lru_cache

from ...errors import DecodeError

# charset name -> Python codec (None = binary: keep bytes)
CHARSET_CODECS: dict[str, str | None] = {
    "big5": "big5", "latin2": "iso8859_2", "dec8": "latin_1", "cp850": "cp850",
    "latin1": "cp1252", "hp8": "latin_1", "koi8r": "koi8_r", "swe7": "latin_1",
    "ascii": "ascii", "ujis": "euc_jp", "sjis": "shift_jis", "cp1251": "cp1251",
    "hebrew": "iso8859_8", "tis620": "tis_620", "euckr": "euc_kr", "latin7": "iso8859_13",
    "koi8u": "koi8_u", "gb2312": "gb2312", "greek": "iso8859_7", "cp1250": "cp1250",
    "gbk": "gbk", "cp1257": "cp1257", "latin5": "iso8859_9", "armscii8": "latin_1",
    "utf8mb3": "utf-8", "utf8": "utf-8", "ucs2": "utf-16-be", "cp866": "cp866",
    "keybcs2": "latin_1", "macce": "mac_latin2", "macroman": "mac_roman", "cp852": "cp852",
    "utf8mb4": "utf-8", "utf16": "utf-16-be", "utf16le": "utf-16-le", "cp1256": "cp1256",
    "utf32": "utf-32-be", "binary": None, "geostd8": "latin_1", "cp932": "cp932",
    "eucjpms": "euc_jp", "gb18030": "gb18030",
}

_SINGLE: dict[int, str] = {}
for _cs, _ids in {
    "big5": (1, 84), "latin2": (2, 9, 21, 27, 77), "dec8": (3, 69), "cp850": (4, 80),
    "latin1": (5, 8, 15, 31, 47, 48, 49, 94), "hp8": (6, 72), "koi8r": (7, 74),
    "swe7": (10, 82), "ascii": (11, 65), "ujis": (12, 91), "sjis": (13, 88),
    "cp1251": (14, 23, 50, 51, 52), "hebrew": (16, 71), "tis620": (18, 89),
    "euckr": (19, 85), "latin7": (20, 41, 42, 79), "koi8u": (22, 75), "gb2312": (24, 86),
    "greek": (25, 70), "cp1250": (26, 34, 44, 66, 99), "gbk": (28, 87),
    "cp1257": (29, 58, 59), "latin5": (30, 78), "armscii8": (32, 64),
    "utf8mb3": (33, 76, 83), "ucs2": (35, 90), "cp866": (36, 68), "keybcs2": (37, 73),
    "macce": (38, 43), "macroman": (39, 53), "cp852": (40, 81), "utf8mb4": (45, 46),
    "utf16": (54, 55), "utf16le": (56, 62), "cp1256": (57, 67), "utf32": (60, 61),
    "binary": (63,), "geostd8": (92, 93), "cp932": (95, 96), "eucjpms": (97, 98),
}.items():
    for _id in _ids:
        _SINGLE[_id] = _cs

_RANGES: tuple[tuple[int, int, str], ...] = (
    (101, 127, "utf16"), (128, 159, "ucs2"), (160, 191, "utf32"), (192, 223, "utf8mb3"),
    (224, 247, "utf8mb4"), (248, 250, "gb18030"), (255, 323, "utf8mb4"),
    # MariaDB extensions
    (576, 607, "utf8mb3"), (608, 639, "utf8mb4"), (640, 671, "ucs2"), (672, 703, "utf16"),
    (736, 767, "utf32"), (2048, 2303, "utf8mb3"), (2304, 2559, "utf8mb4"),
    (2560, 2815, "ucs2"), (2816, 3071, "utf16"), (3072, 3327, "utf32"),
)


def charset_of(collation: int) -> str | None:
    """Charset name of a collation id, or None when the id is unknown to binlake."""
    cs = _SINGLE.get(collation)
    if cs is not None:
        return cs
    for lo, hi, name in _RANGES:
        if lo <= collation <= hi:
            return name
    if 1024 < collation < 2048:  # MariaDB *_nopad_* collations: 1024 + the base id
        return charset_of(collation - 1024)
    return None


@lru_cache(maxsize=None)
def codec_for(collation: int | None) -> str | None:
    """Python codec for a collation; None means binary. Unknown ids are an error."""
    if collation is None:
        return "utf-8"
    cs = charset_of(collation)
    if cs is None:
        raise DecodeError(f"unknown collation id {collation}",
                          hint="report it to binlake with the server's SHOW COLLATION output")
    codec = CHARSET_CODECS[cs]
    if codec is not None:
        codecs.lookup(codec)
    return codec


def decode_text(data: bytes | memoryview, collation: int | None) -> str:
    """Decode strictly; a value the charset cannot hold is reported, never mangled."""
    codec = codec_for(collation)
    if codec is None:
        return bytes(data).decode("latin_1")
    try:
        return bytes(data).decode(codec)
    except UnicodeDecodeError as exc:
        raise DecodeError(f"value is not valid {codec} for collation {collation}: {exc}") from None
