"""Select transactions by GTID while reading events (for `decode --gtid`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..binlog.events import Event, GtidEvent, MariaGtidEvent


@dataclass
class GtidFilter:
    """Accept the events of transactions whose GTID is selected; others are filtered out
    on the user's request (the count of filtered events is kept for --stats)."""

    contains: Callable[[str], bool]
    current: str | None = None

    @classmethod
    def parse(cls, spec: str) -> "GtidFilter":
        from .sets import MariaGtidState, MySQLGtidSet

        spec = spec.strip()
        if ":" in spec:
            gset = MySQLGtidSet.parse(spec)
            return cls(lambda g: gset.contains(g))
        # MariaDB: a list of exact GTIDs (domain-server-seq); validated by the state parser.
        MariaGtidState.parse(spec)
        wanted = {g.strip() for g in spec.split(",") if g.strip()}
        return cls(lambda g: g in wanted)

    def accept(self, ev: Event) -> bool:
        if isinstance(ev, (GtidEvent, MariaGtidEvent)):
            self.current = ev.gtid
        return self.current is not None and self.contains(self.current)
