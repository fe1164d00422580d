"""Replication positions: where a consumer is, exactly, so it can resume without gaps or
duplicates.

A position is a transaction boundary (file + offset where the next transaction starts, and
the GTID set/state of every transaction before it) plus how many row changes of the
*current* transaction were already handed on. Resuming reconnects at the boundary and skips
that many rows: the primary replays a transaction identically, so the skip is exact even when
the connection died in the middle of it.

`TransactionBoundaries` decides which events end a transaction; a boundary is only ever put
after such an event, because the primary can only start a dump (and a decoder can only find
its TABLE_MAPs) at the start of a transaction.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields as dataclass_fields
from typing import Any, Callable

from ..binlog.events import (
    STMT_END_F, Event, GtidEvent, MariaGtidEvent, QueryEvent, RowsEvent, XaPrepareEvent, XidEvent,
)
from ..binlog.makers import slot_maker
from ..binlog.table_map import TableMapEvent
from ..errors import BinlakeError, ConfigError
from ..cdc.xa import PreparedRange

MAX_DUMP_POS = 0xFFFFFFFF
"""COM_BINLOG_DUMP carries a 4-byte offset."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where a stream stands: an event group's boundary (file and offset, with the GTID state
    there) and how many records of the transaction at it were already passed on."""

    file: str | None = None
    pos: int = 4
    gtid_set: str | None = None
    """MySQL: every transaction before the boundary (executed GTID set text)."""
    gtid_state: str | None = None
    """MariaDB: last GTID per domain before the boundary ('0-1-42,1-1-7')."""
    rows_done: int = 0
    """Records of the transaction at the boundary already passed on (row images and statement
    records, delivered or left out by a table filter)."""
    tx_gtid: str | None = None
    """GTID of that partially delivered transaction (checked on resume)."""
    xa_prepared: tuple[PreparedRange, ...] = ()
    """XA transactions prepared before the boundary and not yet decided there: their records
    go out at the XA COMMIT after it, re-read from these ranges (see binlake.cdc.xa)."""

    @property
    def mode(self) -> str:
        if self.gtid_set is not None:
            return "mysql-gtid"
        if self.gtid_state is not None:
            return "mariadb-gtid"
        return "file"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "pos": self.pos, "gtid_set": self.gtid_set,
                               "gtid_state": self.gtid_state, "rows_done": self.rows_done,
                               "tx_gtid": self.tx_gtid}
        out = {k: v for k, v in out.items() if v is not None}
        if self.xa_prepared:
            out["xa_prepared"] = [r.to_json() for r in self.xa_prepared]
        return out

    @classmethod
    def from_json(cls, data: Any) -> "Position":
        """Checkpoint text back to a Position; anything malformed is an error, never a guess."""
        if not isinstance(data, dict):
            raise ConfigError(f"invalid position {json.dumps(data)}: not an object")
        fields = dict(data)
        xa = fields.pop("xa_prepared", [])
        try:
            if not isinstance(xa, list):
                raise ValueError("xa_prepared must be a list")
            fields["xa_prepared"] = tuple(PreparedRange.from_json(r) for r in xa)
            p = cls(**fields)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"invalid position {json.dumps(data)}: {exc}") from None
        problems = []
        for name in ("file", "gtid_set", "gtid_state", "tx_gtid"):
            v = getattr(p, name)
            if v is not None and not isinstance(v, str):
                problems.append(f"{name} must be a string")
        for name in ("pos", "rows_done"):
            v = getattr(p, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                problems.append(f"{name} must be a non-negative integer")
        if isinstance(p.pos, int) and not isinstance(p.pos, bool) and not 4 <= p.pos <= MAX_DUMP_POS:
            problems.append("pos must be between 4 and 4294967295")
        if p.gtid_set is not None and p.gtid_state is not None:
            problems.append("gtid_set (MySQL) and gtid_state (MariaDB) exclude each other")
        if p.file is None and p.gtid_set is None and p.gtid_state is None:
            problems.append("it names neither a file nor a GTID position")
        if problems:
            raise ConfigError(f"invalid position {json.dumps(data)}: {'; '.join(problems)}")
        return p

    @classmethod
    def parse_start(cls, text: str) -> "Position":
        """'mariadb-bin.000003:1234' or 'mariadb-bin.000003' (offset 4)."""
        name, sep, pos = text.rpartition(":")
        if not sep:
            name, pos = text, "4"
        hint = "use FILE:POS, e.g. mariadb-bin.000042:4 (SHOW BINARY LOGS lists the files)"
        if not name.strip() or name != name.strip() or not pos.isascii() or not pos.isdigit():
            raise ConfigError(f"invalid start position {text!r}", hint=hint)
        if not 4 <= int(pos) <= MAX_DUMP_POS:
            raise ConfigError(f"invalid start position {text!r}: the offset must be between 4 "
                              f"(the first event of a binlog) and {MAX_DUMP_POS}", hint=hint)
        return cls(file=name, pos=int(pos))

    def __str__(self) -> str:
        parts = [f"{self.file}:{self.pos}" if self.file else "start"]
        if self.gtid_set is not None:
            parts.append(f"gtid_set={self.gtid_set or '∅'}")
        if self.gtid_state is not None:
            parts.append(f"gtid_state={self.gtid_state or '∅'}")
        if self.rows_done:
            parts.append(f"+{self.rows_done} rows of {self.tx_gtid or 'the next transaction'}")
        if self.xa_prepared:
            parts.append(f"xa_prepared={len(self.xa_prepared)}")
        return " ".join(parts)


if tuple(f.name for f in dataclass_fields(Position)) != (  # pragma: no cover
        "file", "pos", "gtid_set", "gtid_state", "rows_done", "tx_gtid", "xa_prepared"):
    raise ImportError("Position's fields changed: update make_position's callers")
make_position: Callable[[str | None, int, str | None, str | None, int, str | None,
                         tuple[PreparedRange, ...]], Position] = slot_maker(Position)
"""Position(file, pos, gtid_set, gtid_state, rows_done, tx_gtid, xa_prepared), every field
given in order, filled in C without the frozen dataclass's __init__: a stream makes two
per transaction (its boundary and the position handed to on_commit), so on one-row
transactions that __init__ weighs."""


class BoundaryError(BinlakeError):
    """The event stream does not have the transaction shape every binlog has."""


def _statement(q: str) -> str:
    return " ".join(q.strip().rstrip(";").split()[:2]).upper()


class TransactionBoundaries:
    """Which events open and close transactions, for MySQL and MariaDB binlogs alike.

    - MariaDB: a GTID event opens an event group. With FL_STANDALONE the group is the one
      statement that follows (DDL, XA COMMIT); otherwise it ends at XID, at a COMMIT or
      ROLLBACK query (non-transactional engines), or at XA_PREPARE. Queries in between
      (SAVEPOINT, statement-logged DML, XA END) do not end it: MariaDB writes no BEGIN.
    - MySQL: a GTID event (anonymous too) is followed by BEGIN / XA START, which make the
      transaction end at XID, COMMIT, ROLLBACK or XA_PREPARE, or by one statement that is a
      transaction of its own (DDL, XA COMMIT); 8.0.21+ CREATE ... SELECT opens like BEGIN.
    - Without GTID events (old servers): the same, BEGIN opening the explicit form; MySQL 5.1
      logged non-transactional row changes with neither, ending at the rows event flagged
      STMT_END.
    """

    def __init__(self) -> None:
        self.in_tx = False
        self.explicit = False
        self.implicit_rows = False
        self.gtid: str | None = None
        self.ended_gtid: str | None = None
        """GTID of the transaction the last closing event ended."""

    def observe(self, ev: Event) -> bool:
        """Follow one event; True when it closes a transaction (its end is a boundary)."""
        t = type(ev)
        if t is TableMapEvent:  # (one per table per transaction: neither opens nor closes)
            return False
        if t is XidEvent and self.in_tx:  # (the common close, first)
            return self._close()
        if isinstance(ev, (MariaGtidEvent, GtidEvent)):
            self.open_gtid(ev, ev.gtid)
            return False
        if isinstance(ev, (XidEvent, XaPrepareEvent)):
            if not self.in_tx:
                raise BoundaryError(f"{ev.file}:{ev.offset}: {type(ev).__name__} outside a transaction",
                                    hint="start at a transaction boundary")
            return self._close()
        if isinstance(ev, QueryEvent):
            stmt = _statement(ev.query)
            # MySQL 8.0.21+ logs CREATE TABLE ... SELECT as 'CREATE TABLE ... START TRANSACTION'
            # followed by its rows and an XID.
            ctas = stmt.startswith("CREATE") and ev.query.rstrip().rstrip(";").upper().endswith(
                "START TRANSACTION")
            if stmt == "BEGIN" or stmt.startswith("XA START") or stmt == "START TRANSACTION" or ctas:
                self.in_tx = True
                self.explicit = True
                self.implicit_rows = False
                return False
            if self.in_tx and self.explicit:
                if stmt in ("COMMIT", "ROLLBACK"):
                    return self._close()
                return False  # SAVEPOINT, XA END, statement-logged DML inside the group
            return self._close()  # a statement that is a transaction of its own (DDL)
        if isinstance(ev, RowsEvent):
            if not self.in_tx:
                self.in_tx = True
                self.implicit_rows = True
            if self.implicit_rows and ev.flags & STMT_END_F:
                return self._close()
        return False

    def open_gtid(self, ev: GtidEvent | MariaGtidEvent, gtid: str | None) -> None:
        """observe() of a GTID event, given its `gtid` text (formatted once by a replica)."""
        self._open(ev, gtid, explicit=isinstance(ev, MariaGtidEvent)
                   and not ev.flags & MariaGtidEvent.FL_STANDALONE)

    def _open(self, ev: Event, gtid: str | None, *, explicit: bool) -> None:
        if self.in_tx:
            raise BoundaryError(f"{ev.file}:{ev.offset}: transaction {gtid} starts before "
                                f"{self.gtid or 'the previous one'} ended",
                                hint="the binlog is cut inside a transaction; check the primary")
        self.in_tx = True
        self.explicit = explicit
        self.implicit_rows = False
        self.gtid = gtid

    def _close(self) -> bool:
        self.ended_gtid = self.gtid
        self.in_tx = False
        self.explicit = False
        self.implicit_rows = False
        self.gtid = None
        return True

    def reset(self) -> None:
        """A new dump starts at a boundary: no transaction is open."""
        self._close()
        self.ended_gtid = None
