"""How far the sync has applied the binlog, read from its Spark checkpoint (no Spark needed).

A micro-batch is applied to every Delta table before Spark writes `commits/<id>`; the batch's
end offset (the binlog position it applied up to) is the last line of `offsets/<id>`. So the
newest committed batch's end is a position the Delta tables have fully applied.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

_INDEX = re.compile(r"\.(\d+)$")


def file_index(name: str) -> int:
    """'mariadb-bin.000042' -> 42 (the order of binlog files; the seq's file_index)."""
    m = _INDEX.search(name or "")
    return int(m.group(1)) if m else 0


def position_key(file: str, pos: int) -> tuple[int, int]:
    return (file_index(file), int(pos))


def checkpoint_dir(warehouse: str | Path) -> Path:
    return Path(warehouse) / "_binlake" / "checkpoint"


def applied(warehouse: str | Path) -> tuple[tuple[int, int] | None, float | None]:
    """(file index, offset) the sync has applied up to, and when it last moved (mtime of the
    newest offset or commit file); (None, None) without a stream checkpoint."""
    ckpt = checkpoint_dir(warehouse)
    try:
        commits = [int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit()]
    except FileNotFoundError:
        return None, None
    if not commits:
        return None, None
    newest = max(commits)
    try:
        line = (ckpt / "offsets" / str(newest)).read_text().splitlines()[-1]
        off = json.loads(line)
        at = position_key(str(off["file"]), int(off["pos"]))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None, None
    moved = max((p.stat().st_mtime for d in ("offsets", "commits")
                 for p in (ckpt / d).iterdir() if p.name.isdigit()), default=None)
    return at, moved


def batch_running(warehouse: str | Path) -> bool:
    """Whether a micro-batch is planned but not committed (its offsets, no commit yet)."""
    ckpt = checkpoint_dir(warehouse)
    try:
        offsets = [int(p.name) for p in (ckpt / "offsets").iterdir() if p.name.isdigit()]
        commits = [int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit()]
    except FileNotFoundError:
        return False
    return max(offsets, default=-1) > max(commits, default=-1)


def wait_applied(warehouse: str | Path, target: tuple[int, int], timeout: float,
                 idle: float = 20.0) -> tuple[int, int] | None:
    """Wait until the sync has applied past `target`; give up after `timeout` seconds, or at
    once when the sync looks stopped (no batch running and its checkpoint has not moved for
    `idle` seconds).
    Returns the applied position last seen."""
    deadline = time.monotonic() + timeout
    while True:
        at, moved = applied(warehouse)
        if at is None or at >= target:
            return at
        stopped = moved is None or (time.time() - moved > idle and not batch_running(warehouse))
        if stopped or time.monotonic() >= deadline:
            return at
        time.sleep(0.5)
