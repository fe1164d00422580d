"""Value types that plain Python has no word for: absent columns, invalid temporals, JSON null.

A MINIMAL/NOBLOB row image leaves columns out; MySQL allows '0000-00-00' and '2024-02-00'; a
MySQL JSON column can hold the JSON literal null. None of them is SQL NULL, and a CDC tool
that turns them into NULL loses data, so each gets a type.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .columns.json_diff import JsonDiff


class _Absent:
    """Marker for a column that is not in the row image (not the same as NULL)."""

    __slots__ = ()
    _instance: "_Absent | None" = None

    def __new__(cls) -> "_Absent":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


class _JsonNull:
    """The JSON literal `null` as the whole value of a MySQL JSON column.

    SQL NULL is None; a JSON column can also hold the JSON document `null` (SELECT shows the
    text 'null'), and the two must stay apart downstream. Nested nulls inside a document are
    plain None: there they are unambiguous.
    """

    __slots__ = ()
    _instance: "_JsonNull | None" = None

    def __new__(cls) -> "_JsonNull":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "JSON_NULL"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "JSON_NULL"


JSON_NULL = _JsonNull()


@dataclass(frozen=True, slots=True)
class InvalidTemporal:
    """A DATE/DATETIME/TIMESTAMP value Python cannot hold: zero dates and zero-in-date parts.

    `text` is the value as MySQL prints it, e.g. '0000-00-00 00:00:00' or '2024-02-00'.
    """

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class MySQLTime:
    """A TIME value: signed, hours may exceed 24 (range -838:59:59.999999 .. 838:59:59.999999).

    `timedelta` alone cannot say '-00:00:01' vs '00:00:01' cleanly in MySQL notation, so the
    sign and the magnitude are kept apart.
    """

    negative: bool
    hours: int
    minutes: int
    seconds: int
    microseconds: int = 0

    def to_timedelta(self) -> _dt.timedelta:
        delta = _dt.timedelta(
            hours=self.hours, minutes=self.minutes, seconds=self.seconds,
            microseconds=self.microseconds,
        )
        return -delta if self.negative else delta

    def format(self, fsp: int = 6) -> str:
        sign = "-" if self.negative else ""
        text = f"{sign}{self.hours:02d}:{self.minutes:02d}:{self.seconds:02d}"
        if fsp > 0:
            text += "." + f"{self.microseconds:06d}"[:fsp]
        return text

    def __str__(self) -> str:
        return self.format(6 if self.microseconds else 0)


@dataclass(frozen=True, slots=True)
class Geometry:
    """A GEOMETRY value as the server stores it: SRID plus well-known binary (WKB)."""

    srid: int
    wkb: bytes

    @classmethod
    def from_storage(cls, data: bytes) -> "Geometry":
        return cls(int.from_bytes(data[:4], "little"), bytes(data[4:]))


@dataclass(frozen=True, slots=True)
class JsonPatch:
    """A JSON column of a PARTIAL_UPDATE_ROWS after image whose before image is not in the
    event (binlog_row_image=MINIMAL): the diffs to apply to the stored document, with
    `binlake.binlog.columns.json_diff.apply_json_diffs(document, list(patch.diffs))`."""

    diffs: tuple[JsonDiff, ...]
