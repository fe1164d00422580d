"""The record-run driver: one binlog file's change records, the common rows events made
records in C where the decoder's scanner can.

A reader that wants only the change records of a file (`binlake decode`) hands a decoder
and a tracker to `RecordRuns`. The driver owns the decoder's records mode (a RunMerge):
the kept rows events of each C run, and the TABLE_MAPs between them, come out as lists of
records made in C as `ChangeTracker.records` makes them; every other event goes through
the tracker here. Without the C extension (or BINLAKE_PURE_PYTHON=1, or switches.records off)
every event goes through the tracker: the same records. Why: a large row is an event of
its own, and a Python step per event weighs on a one-table decode.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ..binlog.decoder import BinlogDecoder, RunMerge
from .._speedups.native import switches
from ..binlog.files import opens_group, read_events, read_runs
from .changes import ChangeRecord, ChangeTracker, XaLeftOut

__all__ = ["RecordRuns"]


class RecordRuns:
    """Change records of files read through one decoder and one tracker.

    For a reader that needs the records only: no start or stop position, GTID filter or
    schema history, which must see every event (those read events and ask
    `tracker.records` themselves). The driver owns the decoder's `left_out`: pass_over,
    its left-out tables' rows events may be passed over unread where no XA transaction is
    open (`changes.XaLeftOut`)."""

    def __init__(self, decoder: BinlogDecoder, tracker: ChangeTracker, *,
                 pass_over: bool = False) -> None:
        self.decoder = decoder
        self.tracker = tracker
        self.pass_over = pass_over
        if decoder.table_filter is not None:  # (else nothing is left out)
            decoder.left_out = XaLeftOut(tracker, pass_over=pass_over)
        xa = tracker.xa
        self._merge = RunMerge(lambda: (tracker.gtid, not xa.holding),
                               records=("records", tracker.table_filter))
        self._handed = 0
        self.reached: int | None = None
        """The offset of the event group `read` stopped at (its `until`), or None."""

    @property
    def events(self) -> int:
        """The events read so far, those made records in C included."""
        return self._handed + self._merge.events

    def read(self, path: str | Path, *, start: int | None = None,
             until: int | None = None) -> Iterator[list[ChangeRecord]]:
        """The file's change records, a list at a time (never an empty one), from `start`
        (an event group's start) up to the first event group starting at or after `until`
        (its offset then in `reached`; None: the file's end)."""
        dec, tracker = self.decoder, self.tracker
        items: Iterator[Any] = (read_runs(path, self._merge, decoder=dec, start=start)
                                if switches.records else read_events(path, decoder=dec, start=start))
        records_of = tracker.records
        self.reached = None
        handed = self._handed
        ev: Any
        records: Any
        try:
            for ev in items:
                if type(ev) is list:  # records made in C
                    self._handed = handed
                    yield ev
                    ev = None
                    continue
                if until is not None and ev.offset >= until and opens_group(ev):
                    self.reached = ev.offset
                    return
                handed += 1
                records = records_of(ev)
                if records:
                    self._handed = handed
                    yield records
                # a 16 MiB row is not kept while the next event is decoded
                records = ev = None
        finally:
            self._handed = handed
