"""Replication positions: where a consumer is, exactly, so it can resume without gaps or
duplicates.

A position is a transaction boundary (file + offset where the next transaction starts, and
the GTID set/state of every transaction before it) plus how many row changes of the
*current* transaction were already handed on. Resuming reconnects at the boundary and skips
that many rows: the primary replays a transaction identically, so the skip is exact even when
the connection died in the middle of it.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..errors import ConfigError


@dataclass(frozen=True, slots=True)
class Position:
    file: str | None = None
    pos: int = 4
    gtid_set: str | None = None
    """MySQL: every transaction before the boundary (executed GTID set text)."""
    gtid_state: str | None = None
    """MariaDB: last GTID per domain before the boundary ('0-1-42,1-1-7')."""
    rows_done: int = 0
    """Row changes of the transaction at the boundary already delivered."""
    tx_gtid: str | None = None
    """GTID of that partially delivered transaction (checked on resume)."""

    @property
    def mode(self) -> str:
        if self.gtid_set is not None:
            return "mysql-gtid"
        if self.gtid_state is not None:
            return "mariadb-gtid"
        return "file"

    def at_boundary(self, file: str, pos: int, gtid_set: str | None = None,
                    gtid_state: str | None = None) -> "Position":
        return Position(file, pos, gtid_set if gtid_set is not None else self.gtid_set,
                        gtid_state if gtid_state is not None else self.gtid_state, 0, None)

    def with_rows(self, rows_done: int, tx_gtid: str | None) -> "Position":
        return replace(self, rows_done=rows_done, tx_gtid=tx_gtid)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Position":
        try:
            return cls(**data)
        except TypeError as exc:
            raise ConfigError(f"invalid position {json.dumps(data)}: {exc}") from None

    @classmethod
    def parse_start(cls, text: str) -> "Position":
        """'mariadb-bin.000003:1234' or 'mariadb-bin.000003' (offset 4)."""
        name, _, pos = text.rpartition(":") if ":" in text else (text, "", "4")
        if not name or not pos.isdigit():
            raise ConfigError(f"invalid start position {text!r}", hint="use FILE:POS, e.g. binlog.000042:4")
        return cls(file=name, pos=int(pos))

    def __str__(self) -> str:
        parts = [f"{self.file}:{self.pos}" if self.file else "start"]
        if self.gtid_set is not None:
            parts.append(f"gtid_set={self.gtid_set or '∅'}")
        if self.gtid_state is not None:
            parts.append(f"gtid_state={self.gtid_state or '∅'}")
        if self.rows_done:
            parts.append(f"+{self.rows_done} rows of {self.tx_gtid or 'the next transaction'}")
        return " ".join(parts)
