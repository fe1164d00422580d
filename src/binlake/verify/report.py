"""What `binlake verify` found: per table, per differing row."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RowDifference:
    """One row that differs: its key, how, the differing columns and both sides' values
    (canonical text, see binlake.verify.canonical; None is SQL NULL)."""

    key: dict[str, str | None]
    kind: str
    """"changed" (both sides have the key), "missing" (not in Delta), "extra" (not in the
    source)."""
    columns: list[str] = field(default_factory=list)
    source: dict[str, str | None] | None = None
    lake: dict[str, str | None] | None = None


@dataclass
class TableReport:
    table: str
    rows: int = 0
    """Rows of the source table (at its chunks' reads)."""
    lake_rows: int = 0
    chunks: int = 0
    differing_chunks: int = 0
    differences: list[RowDifference] = field(default_factory=list)
    more_differences: int = 0
    """Differing rows beyond the ones listed (--max-rows)."""
    changed_while_verifying: int = 0
    """Rows the sync changed after their chunk was read: not compared in this run."""
    seconds: float = 0.0
    """The table's own time: its source reads, narrowing and repair (the Delta checksums of
    all tables are one Spark job, running during the reads: in the report's seconds)."""
    problem: str | None = None
    """A table-level difference (columns missing in Delta, no Delta table)."""
    note: str | None = None
    repaired: int = 0
    """Rows re-applied from the source by --repair."""

    @property
    def equal(self) -> bool:
        return self.problem is None and not self.differences and not self.more_differences

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["equal"] = self.equal
        return out


@dataclass
class VerifyReport:
    tables: list[TableReport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def equal(self) -> bool:
        return all(t.equal for t in self.tables)

    def to_json(self) -> dict[str, Any]:
        return {"equal": self.equal, "seconds": round(self.seconds, 3),
                "tables": [t.to_json() for t in self.tables]}
