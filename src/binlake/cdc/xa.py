"""XA transactions: changes prepared in one event group and decided in a later one.

MariaDB 10.5+ and MySQL 5.7.7+ log `XA PREPARE` as an event group of its own: the rows, then
`XA END` and an XA_PREPARE event. The decision comes later, in a group holding only the
statement `XA COMMIT xid` or `XA ROLLBACK xid`, with any number of other transactions in
between. A change is committed by the XA COMMIT alone, so binlake hands its records out there,
stamped with the XA COMMIT's position and GTID, and never at the PREPARE; a ROLLBACK drops them
(a reader that handed them out at PREPARE would leave phantom rows behind a rollback).

A prepared transaction can outlive any reader, so a position taken between PREPARE and the
decision carries each pending XID with the byte range of its PREPARE group (`PreparedRange`).
A reader that meets an XA COMMIT whose rows it did not hold (it started or resumed after the
PREPARE, or it is a Spark task reading a later range) re-reads that range.

`XA COMMIT ... ONE PHASE` is an ordinary transaction in MariaDB's binlog; MySQL logs it as a
prepare group whose XA_PREPARE event says `one_phase`: its records go out at that event.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..errors import BinlakeError
from .._util.lazy_re import LazyPattern

class XaError(BinlakeError):
    """An XA decision whose prepared changes cannot be found."""


def xid_text(format_id: int, gtrid: bytes, bqual: bytes) -> str:
    """The one spelling of an XID binlake compares: X'gtrid',X'bqual',format_id (signed), as
    MariaDB's GTID events and both servers' XA statements in the binlog write it."""
    if format_id >= 1 << 31:
        format_id -= 1 << 32
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{format_id}"


_PART = r"(?:[xX]'[0-9a-fA-F]*'|0[xX][0-9a-fA-F]+|'(?:[^'\\]|\\.|'')*')"
_XID = LazyPattern(rf"^\s*({_PART})(?:\s*,\s*({_PART})(?:\s*,\s*(-?\d+))?)?\s*$", re.DOTALL)
_DECISION = LazyPattern(r"^\s*XA\s+(COMMIT|ROLLBACK)\s+(.*?)(\s+ONE\s+PHASE)?\s*;?\s*$",
                        re.IGNORECASE | re.DOTALL)
_START = LazyPattern(r"^\s*XA\s+(?:START|BEGIN)\s+(.*?)(?:\s+(?:JOIN|RESUME))?\s*;?\s*$",
                     re.IGNORECASE | re.DOTALL)


def _literal(text: str) -> bytes:
    if text[0] in "xX" and text[1] == "'":
        return bytes.fromhex(text[2:-1])
    if text[0] == "0":
        digits = text[2:]
        return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
    body = text[1:-1].replace("''", "'")
    return re.sub(r"\\(.)", lambda m: {"0": "\0", "n": "\n", "r": "\r", "t": "\t",
                                      "Z": "\x1a"}.get(m.group(1), m.group(1)),
                  body, flags=re.DOTALL).encode("utf-8")


def parse_xid(text: str) -> str:
    """'xa1' / X'786131',X'',1 / 'a','b',7 as written after XA COMMIT -> `xid_text` form."""
    m = _XID.match(text)
    if m is None:
        raise XaError(f"cannot read the XID {text!r}")
    gtrid = _literal(m.group(1))
    bqual = _literal(m.group(2)) if m.group(2) else b""
    return xid_text(int(m.group(3)) if m.group(3) else 1, gtrid, bqual)


def recovered_xids(rows: Iterable[Sequence[Any]], mariadb: bool) -> set[str]:
    """The XIDs of an `XA RECOVER` answer, in `xid_text` form. Asked with the XID in hex so
    any bytes survive: MariaDB's FORMAT='SQL' gives `X'gtrid',X'bqual',format`, MySQL's
    CONVERT XID gives `0x` + the hex of gtrid and bqual together, cut by the two lengths.
    Raises ValueError or XaError on another form."""
    out = set()
    for fmt, glen, blen, data in (r[:4] for r in rows):
        text = data.decode("ascii") if isinstance(data, bytes) else str(data)
        if mariadb:
            out.add(parse_xid(text))
            continue
        if not text.startswith("0x"):
            raise ValueError(f"XA RECOVER data {text!r} is not 0x + hex")
        raw = bytes.fromhex(text[2:])
        g, b = int(glen), int(blen)
        if not 0 <= g <= 64 or not 0 <= b <= 64 or g + b != len(raw):
            raise ValueError(f"XA RECOVER lengths {g} + {b} do not cut {len(raw)} bytes")
        out.add(xid_text(int(fmt), raw[:g], raw[g:]))
    return out


def decision(query: str) -> tuple[bool, str] | None:
    """(commit?, xid) for `XA COMMIT xid` / `XA ROLLBACK xid`; None for anything else (and for
    XA COMMIT ... ONE PHASE, which is never logged as a decision of its own)."""
    if not query[:8].lstrip()[:2].upper() == "XA":
        return None
    m = _DECISION.match(query)
    if m is None or m.group(3):
        return None
    return m.group(1).upper() == "COMMIT", parse_xid(m.group(2))


def xa_start(query: str) -> str | None:
    """The XID of `XA START xid` (MySQL opens its prepare groups with it), else None."""
    if not query[:8].lstrip()[:2].upper() == "XA":
        return None
    m = _START.match(query)
    return parse_xid(m.group(1)) if m is not None else None


@dataclass(frozen=True, slots=True)
class PreparedRange:
    """Where a pending XA transaction's PREPARE group lies: [start, end) of `file`."""

    xid: str
    file: str
    start: int
    end: int

    def to_json(self) -> list[Any]:
        return [self.xid, self.file, self.start, self.end]

    @classmethod
    def from_json(cls, data: Any) -> "PreparedRange":
        ok = (isinstance(data, (list, tuple)) and len(data) == 4 and isinstance(data[0], str)
              and isinstance(data[1], str) and all(isinstance(v, int) and not isinstance(v, bool)
                                                   and v >= 4 for v in data[2:])
              and data[2] < data[3])
        if not ok:
            raise ValueError(f"a prepared XA range is [xid, file, start, end], not {data!r}")
        return cls(data[0], data[1], data[2], data[3])

    def __str__(self) -> str:
        return f"{self.xid} prepared at {self.file}:{self.start}-{self.end}"


Held = tuple[list[Any], int]
"""A prepare group's records and the units they span: every row and statement record of the
group before any table filter (each record's `row` is its unit index), so a resume's skip
count means the same whatever the filter."""


class XaLedger:
    """The pending prepared XA transactions of one reader, across its connections.

    Sans-IO: the change tracker tells it what the binlog says (a prepare group opens, its
    records, its XA_PREPARE event, a decision) and asks it what to hand out.
    """

    def __init__(self, pending: Iterable[PreparedRange] = ()) -> None:
        self._ranges: dict[str, PreparedRange] = {r.xid: r for r in pending}
        self._held: dict[str, Held] = {}
        self._open: tuple[str, str, int] | None = None
        """(xid, file, start) of the prepare group being read."""
        self.holding = False
        """Inside a prepare group: its records are held, not handed out (a plain attribute:
        the rows hot path reads it for every rows event)."""
        self._buffer: list[Any] | None = None
        self._units = 0
        self.one_phase_seen: tuple[str, int] | None = None
        """(xid, units) of the last one-phase group read (a re-read of one looks for it)."""

    def begin(self, xid: str, file: str | None, start: int, *, keep: bool) -> None:
        """A prepare group opens at `start` (its GTID event, or XA START without one)."""
        self._open = (xid, file or "", start)
        self._buffer = [] if keep else None
        self._units = 0
        self.holding = True

    def hold(self, records: list[Any], units: int) -> None:
        """Records of the group's next `units` rows (or statement records), each `row` its
        place among them; it becomes its place counted from the group's start."""
        base = self._units
        if self._buffer is not None:
            for rec in records:
                rec.row += base
            self._buffer.extend(records)
        self._units = base + units

    def prepared(self, xid: str, end: int, one_phase: bool, file: str | None = None
                 ) -> tuple[Held | None, PreparedRange]:
        """The XA_PREPARE event (ending at `end`): (records to hand out now, the group's
        range). One phase (MySQL): the group is a commit, its records go out now (None if
        they were not kept: the caller re-reads the range). Else none go out, and the
        transaction is pending until its decision."""
        opened, buffer = self._open, self._buffer
        self._open = self._buffer = None
        self.holding = False
        if opened is None or opened[0] != xid:
            raise XaError(f"{file + ': ' if file else ''}XA_PREPARE of {xid} ending at {end} closes "
                          f"{'no XA transaction' if opened is None else opened[0]}",
                          hint="the binlog is cut inside an XA transaction; start at a boundary")
        rng = PreparedRange(xid, opened[1], opened[2], end)
        if one_phase:
            self.one_phase_seen = (xid, self._units)
            return (None if buffer is None else (buffer, self._units)), rng
        self._ranges[xid] = rng
        if buffer is not None:
            self._held[xid] = (buffer, self._units)
        return None, rng

    def decide(self, xid: str) -> tuple[PreparedRange | None, Held | None]:
        """XA COMMIT / ROLLBACK of `xid`: its range (None if never seen) and held records
        (None if not held); either way it is pending no more."""
        return self._ranges.pop(xid, None), self._held.pop(xid, None)

    def abort(self) -> None:
        """The reader reconnects inside a prepare group: the group is read again."""
        self._open = self._buffer = None
        self.holding = False

    def ranges(self) -> tuple[PreparedRange, ...]:
        """The pending transactions, oldest PREPARE first (what a position carries)."""
        if not self._ranges:  # (the common case, at every commit)
            return ()
        return tuple(sorted(self._ranges.values(), key=lambda r: (r.file, r.start)))

    def reread_records(self, rng: PreparedRange, released: list[Any]) -> Held:
        """After a re-read of `rng` through this ledger: the records of its group and the
        units they span (`released`: what the read handed out, which only a one-phase group
        does)."""
        self._ranges.pop(rng.xid, None)
        held = self._held.pop(rng.xid, None)
        if held is not None and released:
            raise XaError(f"the binlog range of {rng} holds changes outside its XA PREPARE",
                          hint="the binlog changed under the position; re-snapshot the tables")
        seen = self.one_phase_seen
        if held is None and seen is not None and seen[0] == rng.xid:
            held = (released, seen[1])
        if held is None:
            raise XaError(f"the binlog range of {rng} holds no whole XA PREPARE of it",
                          hint="the binlog changed under the position; re-snapshot the tables")
        return held

    def rewind(self, ranges: Iterable[PreparedRange]) -> None:
        """A reconnect resumes at a boundary: pending again is what was pending there (a
        decision read since is read again; its records, no longer held, are re-read)."""
        self._ranges = {r.xid: r for r in ranges}
        self._held = {x: v for x, v in self._held.items() if x in self._ranges}
        self.abort()
