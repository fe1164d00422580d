"""Progress of long work: tqdm bars on a terminal, a log line per meter every few seconds
otherwise (a user never watches a silent job, and a log file never fills with bar redraws).

A `Progress` polls its meters from a thread of its own; a meter's `poll` returns how much is
done (and may change its total), so the work itself needs no hooks.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable

LOG_EVERY = 15.0
"""Seconds between log lines without a terminal."""
TICK = 0.5
"""Seconds between bar updates on a terminal."""


@dataclass
class Meter:
    """One count: `done` of `total` (None: unknown) `unit`s."""

    name: str
    total: float | None = None
    unit: str = "rows"
    poll: Callable[["Meter"], float] | None = None
    """Returns `done`; may set `total`."""
    done: float = 0
    t0: float = field(default_factory=time.monotonic)
    bar: Any = None

    def rate(self) -> float:
        elapsed = time.monotonic() - self.t0
        return self.done / elapsed if elapsed > 0 else 0.0

    def eta(self) -> float | None:
        rate = self.rate()
        if self.total is None or rate <= 0:
            return None
        return max(0.0, (self.total - self.done) / rate)

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"meter": self.name, "done": int(self.done), "unit": self.unit,
                               "rate_per_s": round(self.rate(), 1),
                               "elapsed_s": round(time.monotonic() - self.t0, 1)}
        if self.total is not None:
            out["total"] = int(self.total)
            eta = self.eta()
            if eta is not None:
                out["eta_s"] = round(eta, 1)
        return out


class Progress:
    """Meters shown while a `with` block runs: bars when `stream` is a terminal (or `tty`),
    else `log` lines every `every` seconds (and one per meter at the end)."""

    def __init__(self, what: str, log: logging.Logger, *, tty: bool | None = None,
                 stream: IO[str] | None = None, every: float = LOG_EVERY,
                 tick: float = TICK) -> None:
        self.what, self.log = what, log
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty, self.every, self.tick = tty, every, tick
        self.meters: list[Meter] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress-{what}", daemon=True)
        self._last_log = time.monotonic()

    def meter(self, name: str, total: float | None = None, unit: str = "rows",
              poll: Callable[[Meter], float] | None = None) -> Meter:
        m = Meter(name, total, unit, poll)
        with self._lock:
            self.meters.append(m)
        return m

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.update(final=True)
        for m in self.meters:
            if m.bar is not None:
                m.bar.close()

    def _run(self) -> None:
        while not self._stop.wait(self.tick if self.tty else min(self.tick, self.every)):
            try:
                self.update()
            except Exception:  # noqa: BLE001 - a progress display is never worth a failure
                self.log.debug("progress update failed", exc_info=True)

    def update(self, final: bool = False) -> None:
        """Poll every meter; redraw the bars, or log when a line is due."""
        with self._lock:
            meters = list(self.meters)
        for m in meters:
            if m.poll is not None:
                try:
                    m.done = m.poll(m)
                except Exception:  # noqa: BLE001 - keep the last value
                    self.log.debug("progress poll failed", exc_info=True)
        if self.tty:
            for m in meters:
                self._draw(m)
            return
        now = time.monotonic()
        if final or now - self._last_log >= self.every:
            self._last_log = now
            for m in meters:
                self.log.info(f"{self.what} {'done' if final else 'progress'}",
                              extra={"step": self.what, **m.fields()})

    def _draw(self, m: Meter) -> None:
        from tqdm import tqdm

        if m.bar is None:
            m.bar = tqdm(total=m.total, desc=m.name, unit=m.unit, file=self.stream,
                         unit_scale=m.unit == "B", dynamic_ncols=True, leave=True)
        if m.total is not None and m.bar.total != m.total:
            m.bar.total = m.total
        delta = m.done - m.bar.n
        if delta > 0:
            m.bar.update(delta)  # tqdm's rate and ETA come from these updates
        else:
            m.bar.refresh()
