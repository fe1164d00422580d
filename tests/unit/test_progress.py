"""Progress of long work: a tqdm bar with rate and ETA on a terminal, log lines otherwise."""
from __future__ import annotations

import io
import logging
import time

import pytest

from binlake.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_done_total_rate_and_eta() -> None:
    out = _Terminal()
    done = {"n": 0}
    shown = Progress("snapshot", logging.getLogger("test.progress"), stream=out, tick=0.02)
    assert shown.tty
    with shown:
        shown.meter("db.t", 1000, "rows", poll=lambda m: done["n"])
        for n in (100, 400, 700):
            done["n"] = n
            time.sleep(0.08)
    text = out.getvalue()
    assert "db.t" in text and "/1000" in text and "rows/s" in text
    assert "1000/1000" not in text  # it shows what was polled, not the total
    assert "700/1000" in text
    assert "<" in text  # tqdm's elapsed<remaining: the ETA


def test_without_a_terminal_it_logs_lines(caplog: pytest.LogCaptureFixture) -> None:
    out = io.StringIO()  # not a terminal
    done = {"n": 0}
    shown = Progress("catch-up", logging.getLogger("test.progress"), stream=out, every=0.05,
                     tick=0.02)
    assert not shown.tty
    with caplog.at_level(logging.INFO, logger="test.progress"):
        with shown:
            m = shown.meter("binlog", unit="B", poll=lambda m: done["n"])
            m.total = 5000
            for n in (1000, 2000, 3000):
                done["n"] = n
                time.sleep(0.12)
    assert out.getvalue() == ""  # no bar drawn
    lines = [r for r in caplog.records if r.getMessage() == "catch-up progress"]
    assert lines, caplog.text
    last = caplog.records[-1]
    assert last.getMessage() == "catch-up done"
    assert (last.done, last.total, last.unit) == (3000, 5000, "B")  # type: ignore[attr-defined]
    assert last.rate_per_s > 0 and "eta_s" in vars(last)  # type: ignore[attr-defined]


def test_a_failing_poll_keeps_the_last_value(caplog: pytest.LogCaptureFixture) -> None:
    calls = {"n": 0}

    def poll(m: object) -> float:
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("server gone")
        return 5

    shown = Progress("snapshot", logging.getLogger("test.progress"), stream=io.StringIO(),
                     every=0.01, tick=0.01)
    with shown:
        m = shown.meter("t", 10, poll=poll)
        time.sleep(0.05)
    assert m.done == 5 and calls["n"] > 1
