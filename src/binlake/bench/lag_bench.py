"""`binlake bench --lag`: commit -> visible in Delta at sustained write rates, and a backlog.

One throwaway MariaDB with the seeded bench tables (narrow, wide, large), and `binlake sync`
running as its own process (the command a user runs, so its driver and JVM memory are its
own):

* **lag**: the sync snapshots the tables and keeps streaming (`--trigger-interval`). The timed
  load starts only once the sync streams (one transaction seen in Delta) and is warm: the
  first rate is written for `--warmup` seconds (default 60) before its timed part, with no
  pause between them, so the timed part starts with the sync's batches already in step with
  the rate. Why: a fresh JVM's first batches take several times a warm batch (first MERGEs,
  code generation), a production sync is past them within its first minute, and a rate
  started from idle first runs one small batch while the next one's changes pile up. The
  warm-up's own lags are reported apart (the phase's `warmup`); `--warmup 10` puts the
  first batches back into the timed figure. A writer commits multi-row transactions (inserts, updates and deletes on `narrow` and `wide`,
  10-50 rows each, one round trip each) at each rate in row changes/s for `--seconds`, and
  notes for each the client's clock when COMMIT returned and the binlog end right after it
  (SHOW MASTER STATUS in the same round trip: only the writer writes). A transaction is
  visible once the first micro-batch whose end offset (the checkpoint's `offsets/<id>`) is at
  or past it has committed to every Delta table it touched: each batch commits once per table
  with Delta's txn (the sync's appId, the batch id), and a commit's time is its
  `_delta_log/N.json` file's modification time (written, then renamed into place by Delta:
  the instant readers see it). So nothing reads data files, no marker table adds a MERGE to
  every batch, and the watcher's polling speed does not enter the figure. After each rate
  the writer waits until every transaction is visible (drained) before the next rate.
* **backlog** (`--backlog N`): the sync is stopped after the snapshot, N row changes are
  written as fast as one connection can, then `binlake sync --once` catches up: batches,
  seconds, changes/s and peak RSS of its driver, JVM and Python workers.

Peak RSS is each process's VmHWM, sampled every half second from /proc (growth in the last
half second of a process is missed). After the run the Delta tables are compared with
MariaDB row by row (`sync_bench.compare_tables`, in a Spark session of this process).

Run `python -m binlake.bench.lag_bench --seconds 120 --json lag.json` (or `binlake bench
--lag`), `--backlog 200000` for the backlog.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .common import (last_json_line, load_avg, proc_stat_fields, proc_status_kb, start_server,
                     stop_server, utc_stamp, work_dir, write_json)
from .workload import SCHEMA, Workload, load

DEFAULT_RATES = (500, 1000, 2000, 5000)
WRITE_TABLES = ("narrow", "wide")
"""Tables the writer changes; `large` is only snapshotted."""
ROW_OPS = ("insert", "update", "delete")
OP_WEIGHTS = (0.4, 0.4, 0.2)
NARROW_SHARE = 0.7
BOUNDED_MIN_GROWTH_S = 1.0
BOUNDED_REL_GROWTH = 0.5
KEEP_UP = 0.9
WRITER_SHORT = 0.9
"""A phase whose writer reached less than this share of its rate says so (the writer, not
the sync, was the limit)."""

Echo = Callable[[str], None]


class LagBenchError(RuntimeError):
    """The measurement could not be completed (the sync died, changes never became visible)."""


# -- pure parts -------------------------------------------------------------------------------

def parse_rates(text: str) -> tuple[int, ...]:
    """'500,1000,2k' -> (500, 1000, 2000): row changes per second, each at least 1."""
    out = []
    for part in text.split(","):
        p = part.strip().lower()
        if not p:
            continue
        mult = 1000 if p.endswith("k") else 1
        try:
            value = int(float(p[:-1] if mult > 1 else p) * mult)
        except ValueError:
            raise ValueError(f"rate {part.strip()!r} is not a number of row changes/s") from None
        if value < 1:
            raise ValueError(f"rate {part.strip()!r} must be at least 1 row change/s")
        out.append(value)
    if not out:
        raise ValueError("give at least one rate, e.g. 500,1000,2000")
    return tuple(out)


def parse_span(text: str) -> tuple[int, int]:
    """'10-50' -> (10, 50): rows per transaction; '30' -> (30, 30)."""
    a, _, b = text.partition("-")
    try:
        lo, hi = int(a), int(b or a)
    except ValueError:
        raise ValueError(f"{text!r} is not a row count or a range like 10-50") from None
    if not 2 <= lo <= hi:
        raise ValueError(f"{text!r}: rows per transaction must be at least 2, low <= high")
    return lo, hi


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) of `values`, interpolated between the two nearest ranks
    (inclusive: never outside the observed range); None for no values."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


class Pacer:
    """A constant rate in row changes/s: the transaction after `done` changes is due at
    start + done / rate. A writer behind schedule does not sleep and catches up."""

    def __init__(self, rate: float, start: float) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate, self.start = float(rate), start

    def due(self, done: int) -> float:
        return self.start + done / self.rate

    def delay(self, done: int, now: float) -> float:
        """Seconds to wait before the next transaction (0 when due or late)."""
        return max(0.0, self.due(done) - now)


def lag_trend(commits: Sequence[float], lags: Sequence[float]) -> dict[str, Any]:
    """Whether lag stayed bounded over a phase: the median lag of the last third of the
    transactions (by commit time) against the first third. Growth above
    max(BOUNDED_MIN_GROWTH_S, BOUNDED_REL_GROWTH x the first third's median) means the sync
    fell behind the writer (a queue that grows); also the least-squares slope in s per s."""
    pairs = sorted(zip(commits, lags))
    n = len(pairs)
    if n < 3:
        return {"bounded": None, "growth_s": None, "slope": None}
    third = n // 3
    first = percentile([lag for _, lag in pairs[:third]], 50) or 0.0
    last = percentile([lag for _, lag in pairs[-third:]], 50) or 0.0
    growth = last - first
    mt = sum(t for t, _ in pairs) / n
    ml = sum(lag for _, lag in pairs) / n
    var = sum((t - mt) ** 2 for t, _ in pairs)
    slope = sum((t - mt) * (lag - ml) for t, lag in pairs) / var if var > 0 else 0.0
    limit = max(BOUNDED_MIN_GROWTH_S, BOUNDED_REL_GROWTH * first)
    return {"bounded": growth <= limit, "growth_s": round(growth, 3),
            "first_third_p50_s": round(first, 3), "last_third_p50_s": round(last, 3),
            "slope": round(slope, 4)}


def batch_model(batches: Sequence[tuple[int, float]]) -> tuple[float, float] | None:
    """(fixed seconds, marginal changes/s) of `apply_s = fixed + changes / marginal`, least
    squares over (changes, apply seconds) of batches; None without two distinct sizes or
    when bigger batches were not slower (no marginal cost seen)."""
    pts = [(float(n), float(t)) for n, t in batches]
    if len({n for n, _ in pts}) < 2:
        return None
    mn = sum(n for n, _ in pts) / len(pts)
    mt = sum(t for _, t in pts) / len(pts)
    slope = (sum((n - mn) * (t - mt) for n, t in pts) / sum((n - mn) ** 2 for n, _ in pts))
    if slope <= 0:
        return None
    return max(0.0, mt - slope * mn), 1.0 / slope


def keeps_up(trend_bounded: bool | None, drained: bool, marginal_per_s: float | None,
             written_per_s: float) -> bool:
    """The phase's verdict. Batches run back to back while changes wait, each costing
    fixed + changes / marginal seconds, so a batch holds the changes written during the one
    before: the batch time settles at fixed / (1 - rate / marginal) when rate < marginal and
    grows without bound otherwise. Bounded: every change became visible, the lag did not
    grow (`lag_trend`), and the rate is at most KEEP_UP x the batches' marginal rate (this
    decides where a phase holds too few batches for its trend to show; with no marginal cost
    seen, the trend decides)."""
    if not drained or trend_bounded is False:
        return False
    return marginal_per_s is None or written_per_s <= KEEP_UP * marginal_per_s


def highest_bounded(phases: Iterable[dict[str, Any]]) -> int | None:
    """The highest rate of an unbroken run of bounded phases from the lowest rate up (a
    phase counts when its lag stayed bounded, it drained and its writer kept the rate)."""
    best = None
    for ph in sorted(phases, key=lambda p: p["rate"]):
        if not (ph.get("bounded") and ph.get("drained") and ph.get("writer_kept_rate")):
            break
        best = ph["rate"]
    return best


Key = tuple[int, int]
"""A binlog position as (file index, offset): ordered."""


@dataclass(frozen=True)
class Commit:
    """One Delta commit of a table: version, when it became visible, and its txn (appId,
    version: the sync's batch id), None for commits without one (compaction)."""

    version: int
    at: float
    txn: tuple[str, int] | None


def batch_visibility(ends: dict[int, Key], seen: dict[int, list[float]]) -> list[tuple[Key, float]]:
    """(end offset, visible at) of each finished batch, in batch order: visible when its last
    Delta commit landed (`seen`: the batch's commit times over the tables it touched). A batch
    without commits is left out (it changed nothing); ends never go down."""
    out: list[tuple[Key, float]] = []
    for bid in sorted(ends):
        times = seen.get(bid)
        if not times:
            continue
        if out and ends[bid] <= out[-1][0]:
            continue
        out.append((ends[bid], max(times)))
    return out


def lags_of(txs: Sequence[tuple[Key, float]], visible: Sequence[tuple[Key, float]]
            ) -> list[float | None]:
    """Each (binlog end, committed at) transaction's lag: the first visible batch ending at
    or past it, minus the commit time; None when no such batch yet."""
    keys = [k for k, _ in visible]
    out: list[float | None] = []
    for key, committed in txs:
        i = bisect_left(keys, key)
        out.append(None if i == len(keys) else max(0.0, visible[i][1] - committed))
    return out


# -- the writer -------------------------------------------------------------------------------

@dataclass
class Tx:
    seq: int
    statements: list[tuple[str, int]]
    """(SQL, rows it must change)."""

    @property
    def changes(self) -> int:
        return sum(n for _, n in self.statements)

    def sql(self) -> str:
        return ";\n".join(["START TRANSACTION", *(s for s, _ in self.statements), "COMMIT",
                           "SHOW MASTER STATUS"])


class TxMaker:
    """Seeded multi-row transactions on `narrow` and `wide`: each row an insert, an update or
    a delete (weights OP_WEIGHTS) of live keys it tracks. Every update sets a value no row
    held before (unchanged rows are not logged)."""

    def __init__(self, live: dict[str, list[int]], seed: int = 7,
                 rows: tuple[int, int] = (10, 50)) -> None:
        self.rng = random.Random(seed)
        self.rows = rows
        self.live = {t: list(ids) for t, ids in live.items()}
        self.next_id = {t: max(ids, default=0) + 1 for t, ids in self.live.items()}

    def make(self, seq: int) -> Tx:
        rng = self.rng
        n = rng.randint(*self.rows)
        narrow = max(1, round(n * NARROW_SHARE))
        stmts: list[tuple[str, int]] = []
        for table, k in (("narrow", narrow), ("wide", n - narrow)):
            if k > 0:
                stmts += self._table(table, k, seq)
        return Tx(seq, stmts)

    def _table(self, table: str, k: int, seq: int) -> list[tuple[str, int]]:
        rng = self.rng
        live = self.live[table]
        ops = rng.choices(ROW_OPS, weights=OP_WEIGHTS, k=k)
        n_upd = min(ops.count("update"), len(live))
        n_del = min(ops.count("delete"), len(live) - n_upd)
        n_ins = k - n_upd - n_del
        out: list[tuple[str, int]] = []
        if n_upd + n_del:
            picks = rng.sample(range(len(live)), n_upd + n_del)
            chosen = [live[i] for i in picks]
            upd, dele = chosen[:n_upd], chosen[n_upd:]
            if upd:
                ids = ",".join(map(str, sorted(upd)))
                sets = (f"n = COALESCE(n, 0) % 1000000 + 1, s = 'lag-u{seq}'" if table == "narrow"
                        else f"c_vchar = 'lag-u{seq}', c_int = {seq}")
                out.append((f"UPDATE {table} SET {sets} WHERE id IN ({ids})", len(upd)))
            if dele:
                # swap-remove, highest index first: the order of `live` does not matter
                for i in sorted(picks[n_upd:], reverse=True):
                    live[i] = live[-1]
                    live.pop()
                out.append((f"DELETE FROM {table} WHERE id IN "
                            f"({','.join(map(str, sorted(dele)))})", len(dele)))
        if n_ins:
            first = self.next_id[table]
            new = list(range(first, first + n_ins))
            self.next_id[table] = first + n_ins
            live.extend(new)
            if table == "narrow":
                values = ",".join(f"({i},{seq % 100000},'lag-i{seq}',{i}.25,"
                                  "'2026-01-02 03:04:05.678901')" for i in new)
                out.append((f"INSERT INTO narrow (id, n, s, d, ts) VALUES {values}", n_ins))
            else:
                values = ",".join(f"({i},{seq},'lag-i{seq}','{{\"seq\": {seq}}}',"
                                  "'2026-01-02 03:04:05.678901')" for i in new)
                out.append((f"INSERT INTO wide (id, c_int, c_vchar, c_json, c_dt) VALUES {values}",
                            n_ins))
        return out


def live_ids(server: Any) -> dict[str, list[int]]:
    conn = server.connect(database=SCHEMA)
    try:
        with conn.cursor() as cur:
            out = {}
            for t in WRITE_TABLES:
                cur.execute(f"SELECT id FROM `{t}`")
                out[t] = [int(r[0]) for r in cur.fetchall()]
            return out
    finally:
        conn.close()


class Writer:
    """One connection; each transaction is one round trip (multi-statement), its commit time
    taken when COMMIT's answer is in. A statement changing other than its rows fails."""

    def __init__(self, server: Any, maker: TxMaker) -> None:
        from pymysql.constants import CLIENT

        self.maker = maker
        self.conn = server.connect(database=SCHEMA, client_flag=CLIENT.MULTI_STATEMENTS)
        self.cur = self.conn.cursor()
        self.seq = 0

    def commit_one(self) -> tuple[Key, float, int]:
        """(binlog end after it, committed at, row changes) of one new transaction."""
        from ..cdc.arrow import file_index

        self.seq += 1
        tx = self.maker.make(self.seq)
        cur = self.cur
        cur.execute(tx.sql())
        k = len(tx.statements)
        counts = []
        at = 0.0
        for i in range(k + 2):  # after START TRANSACTION: the statements, COMMIT, SHOW
            if not cur.nextset():
                raise LagBenchError(f"transaction {tx.seq}: result {i + 2} is missing")
            if i < k:
                counts.append(cur.rowcount)
            elif i == k:
                at = time.time()  # COMMIT's answer is in
        got, want = counts, [n for _, n in tx.statements]
        if got != want:
            raise LagBenchError(f"transaction {tx.seq} changed {got} rows, expected {want}")
        row = cur.fetchone()
        if not row:
            raise LagBenchError("SHOW MASTER STATUS returned nothing: is the binlog on?")
        return (file_index(row[0]), int(row[1])), at, tx.changes

    def close(self) -> None:
        self.conn.close()


POLL_EVERY = 0.25
"""Seconds between looks at the sync's finished batches while writing: Spark keeps only its
newest 100 batches' offsets, which fast batches pass within a phase."""


def write_for(writer: Writer, rate: float, seconds: float,
              poll: Callable[[], None] | None = None) -> dict[str, Any]:
    """Commit at `rate` row changes/s for `seconds`; the transactions' (binlog end, commit
    time). `poll` is called every `POLL_EVERY` s meanwhile."""
    t0 = time.time()
    pacer = Pacer(rate, t0)
    txs: list[tuple[Key, float]] = []
    sizes: list[int] = []
    done = 0
    polled = t0
    while True:
        now = time.time()
        if now - t0 >= seconds:
            break
        if poll is not None and now - polled >= POLL_EVERY:
            poll()
            polled = now
        wait = pacer.delay(done, now)
        if wait > 0:
            time.sleep(wait)
        key, at, n = writer.commit_one()
        txs.append((key, at))
        sizes.append(n)
        done += n
    wrote = (txs[-1][1] - t0) if txs else seconds
    return {"txs": txs, "sizes": sizes, "t0": t0, "changes": done, "seconds": wrote,
            "achieved_per_s": done / wrote if wrote > 0 else 0.0}


def split_lead(wrote: dict[str, Any], lead: float) -> tuple[dict[str, Any], list[tuple[Key, float]]]:
    """`write_for`'s result without the transactions of its first `lead` seconds (returned
    apart): the timed part of a phase whose writing began earlier."""
    if lead <= 0:
        return wrote, []
    cut = wrote["t0"] + lead
    keep = [i for i, (_, at) in enumerate(wrote["txs"]) if at >= cut]
    txs = [wrote["txs"][i] for i in keep]
    done = sum(wrote["sizes"][i] for i in keep)
    span = (txs[-1][1] - cut) if txs else 0.0
    return ({"txs": txs, "sizes": [wrote["sizes"][i] for i in keep], "t0": cut, "changes": done,
             "seconds": span, "achieved_per_s": done / span if span > 0 else 0.0},
            wrote["txs"][:keep[0]] if keep else list(wrote["txs"]))


def write_backlog(writer: Writer, changes: int, echo: Echo) -> dict[str, Any]:
    """Commit `changes` row changes unpaced (a backlog for a stopped sync)."""
    t0 = time.time()
    done = txs = 0
    shown = t0
    while done < changes:
        _, _, n = writer.commit_one()
        done += n
        txs += 1
        if time.time() - shown >= 15:
            shown = time.time()
            echo(f"backlog: {done:,} of {changes:,} changes written "
                 f"({done / (shown - t0):,.0f}/s)")
    secs = time.time() - t0
    return {"changes": done, "transactions": txs, "seconds": round(secs, 1),
            "changes_per_s": round(done / secs)}


# -- watching the Delta logs ------------------------------------------------------------------

_COMMIT = re.compile(r"^(\d{20})\.json$")


class DeltaLogWatcher:
    """The commits of one Delta table, read incrementally from its `_delta_log` (new commit
    files only)."""

    def __init__(self, table_dir: Path) -> None:
        self.log = table_dir / "_delta_log"
        self.commits: dict[int, Commit] = {}

    def poll(self) -> list[Commit]:
        try:
            names = os.listdir(self.log)
        except FileNotFoundError:
            return []
        new = []
        for name in names:
            m = _COMMIT.match(name)
            if not m or int(m.group(1)) in self.commits:
                continue
            c = read_commit(int(m.group(1)), self.log / name)
            self.commits[c.version] = c
            new.append(c)
        return sorted(new, key=lambda c: c.version)


def read_commit(version: int, path: Path) -> Commit:
    """A Delta commit file's time (its mtime: Delta writes it, then renames it into place)
    and txn action."""
    at = path.stat().st_mtime_ns / 1e9
    txn = None
    for line in path.read_text().splitlines():
        if '"txn"' in line:
            action = json.loads(line)
            if "txn" in action:
                txn = (str(action["txn"]["appId"]), int(action["txn"]["version"]))
    return Commit(version, at, txn)


class BatchWatcher:
    """The sync's finished micro-batches (Spark's checkpoint: `commits/<id>` once done,
    `offsets/<id>` with its end) and their Delta commits in the written tables."""

    def __init__(self, warehouse: Path) -> None:
        self.warehouse = warehouse
        self.ckpt = warehouse / "_binlake" / "checkpoint"
        self.tables = {t: DeltaLogWatcher(warehouse / SCHEMA / t) for t in WRITE_TABLES}
        self.ends: dict[int, Key] = {}
        self._app: str | None = None

    def app_id(self) -> str | None:
        """The stream's Delta appId (the snapshot's commits carry another)."""
        if self._app is None:
            try:
                self._app = json.loads((self.warehouse / "_binlake" / "sync.json").read_text())[
                    "app_id"]
            except (OSError, ValueError, KeyError):
                return None
        return self._app

    def poll(self) -> None:
        from ..cdc.arrow import file_index
        from ..spark.sync import batch_end

        try:
            done = [int(n) for n in os.listdir(self.ckpt / "commits") if n.isdigit()]
        except FileNotFoundError:
            done = []
        for bid in done:
            if bid not in self.ends:
                end = batch_end(self.ckpt, bid)
                if end is None:  # purged by Spark since the listing: it keeps the newest 100
                    continue
                self.ends[bid] = (file_index(end[0]), end[1])
        for w in self.tables.values():
            w.poll()

    def covered(self, key: Key) -> bool:
        """Whether a finished batch ends at or past `key`."""
        self.poll()
        return any(end >= key for end in self.ends.values())

    def seen(self) -> dict[int, list[float]]:
        app = self.app_id()
        out: dict[int, list[float]] = {}
        for w in self.tables.values():
            for c in w.commits.values():
                if c.txn is not None and c.txn[0] == app:
                    out.setdefault(c.txn[1], []).append(c.at)
        return out

    def visible(self) -> list[tuple[Key, float]]:
        self.poll()
        return batch_visibility(self.ends, self.seen())

    def batches_between(self, t0: float, t1: float) -> list[int]:
        """Batches whose last Delta commit landed in [t0, t1]."""
        return sorted(b for b, times in self.seen().items()
                      if b in self.ends and t0 <= max(times) <= t1)

    def wait_for(self, key: Key, timeout: float, alive: Callable[[], None]) -> bool:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.covered(key):
                return True
            alive()
            time.sleep(0.2)
        return self.covered(key)


# -- the sync process and its memory ----------------------------------------------------------

def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(proc_stat_fields(entry)[1])
        except OSError:
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@dataclass
class PeakRss:
    """Peak RSS (MB) of a process tree: the root (the Python driver), its JVM, the largest
    Python worker, and the whole tree's largest sum of RSS at one sample."""

    driver_mb: float = 0.0
    jvm_mb: float = 0.0
    python_worker_mb: float = 0.0
    tree_mb: float = 0.0

    def sample(self, root: int) -> None:
        kids = _children_map()
        tree, todo = [], [root]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo += kids.get(pid, [])
        total = 0
        for pid in tree:
            hwm = (proc_status_kb(pid, "VmHWM") or 0) / 1024
            total += proc_status_kb(pid, "VmRSS") or 0
            if pid == root:
                self.driver_mb = max(self.driver_mb, hwm)
            elif _comm(pid) == "java":
                self.jvm_mb = max(self.jvm_mb, hwm)
            elif _comm(pid).startswith("python"):
                self.python_worker_mb = max(self.python_worker_mb, hwm)
        self.tree_mb = max(self.tree_mb, total / 1024)

    def to_json(self) -> dict[str, float]:
        return {k: round(v, 1) for k, v in self.__dict__.items()}


_APPLIED = re.compile(r"batch applied batch=(\d+) rows=(\d+)\b.*?\bapply_s=([\d.]+)")


class SyncProcess:
    """`binlake sync` as a child process (output in files), its memory sampled meanwhile."""

    def __init__(self, url: str, warehouse: Path, logs: Path, *, once: bool, master: str,
                 trigger: float, extra: Sequence[str] = ()) -> None:
        self.cmd = [sys.executable, "-m", "binlake.cli", "sync", url, "--tables", f"{SCHEMA}.*",
                    "--warehouse", str(warehouse), "--master", master,
                    "--trigger-interval", str(trigger), *(["--once"] if once else []), *extra]
        logs.parent.mkdir(parents=True, exist_ok=True)
        self.out_path, self.err_path = logs.with_suffix(".out"), logs.with_suffix(".log")
        self.rss = PeakRss()
        self._stop = threading.Event()
        self.t0 = time.time()
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.is_set() and self.proc.poll() is None:
            self.rss.sample(self.proc.pid)
            self._stop.wait(0.5)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise LagBenchError(f"binlake sync exited with status {self.proc.returncode}: "
                                f"{self.tail()}")

    def tail(self, lines: int = 8) -> str:
        try:
            text = self.err_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise LagBenchError(f"binlake sync did not finish within {timeout:.0f} s: "
                                f"{self.tail()}") from None
        finally:
            self._stop.set()

    def stop(self, timeout: float = 120) -> int:
        """SIGINT (the sync stops its query; a batch cut short is replayed exactly once by
        the next run), then wait."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.wait(timeout)

    def batch_stats(self) -> dict[int, tuple[int, float]]:
        """batch id -> (changes, apply seconds) from the sync's `batch applied` log lines."""
        out = {}
        for m in _APPLIED.finditer(self.err_path.read_text(errors="replace")):
            out[int(m.group(1))] = (int(m.group(2)), float(m.group(3)))
        return out

    def report(self) -> dict[str, Any]:
        """The JSON line `binlake sync` prints at its end."""
        line = last_json_line(self.out_path.read_text())
        if line is not None:
            return line
        raise LagBenchError(f"binlake sync printed no report: {self.tail()}")


# -- the runs ---------------------------------------------------------------------------------

@dataclass
class LagConfig:
    rates: tuple[int, ...] = DEFAULT_RATES
    seconds: float = 120.0
    warmup: float = 60.0
    scale: int = 20_000
    seed: int = 6
    tx_rows: tuple[int, int] = (10, 50)
    trigger: float = 0.5
    master: str = "local[2]"
    backlog: int = 0
    drain_timeout: float = 300.0
    sync_args: tuple[str, ...] = ()
    compare: bool = True
    workdir: Path | None = None
    keep: bool = False


def _binlog_bytes(server: Any) -> int:
    return sum(int(r[1]) for r in server.sql("SHOW BINARY LOGS", database=None))


def _setup(server: Any, cfg: LagConfig, echo: Echo) -> dict[str, Any]:
    echo(f"loading the seeded tables ({cfg.scale:,} row changes)")
    loaded = load(server, Workload(cfg.scale, cfg.seed))
    return {"scale": cfg.scale, "expected": loaded.expected.to_json(),
            "load_s": round(loaded.seconds, 1)}


def _compare(server: Any, warehouse: Path, master: str) -> dict[str, Any]:
    from ..spark.session import build_session
    from .common import compare_tables

    spark = build_session("binlake-lag-bench-compare", master=master)
    try:
        return compare_tables(spark, server, warehouse)
    finally:
        spark.stop()


def _phase(writer: Writer, batches: BatchWatcher, sync: SyncProcess, rate: int,
           seconds: float, drain_timeout: float, echo: Echo, lead: float = 0.0) -> dict[str, Any]:
    """One rate: written for `lead + seconds`, timed over the last `seconds` only (the lead
    is the warm-up: the timed part starts with the sync already in step with the rate)."""
    load0 = load_avg(2)
    wrote, lead_txs = split_lead(write_for(writer, rate, lead + seconds, batches.poll), lead)
    txs = wrote["txs"]
    t_first = txs[0][1] if txs else time.time()
    drained = bool(txs) and batches.wait_for(txs[-1][0], drain_timeout, sync.check_alive)
    lags = lags_of(txs, batches.visible())
    seen = [(t, lag) for (_, t), lag in zip(txs, lags) if lag is not None]
    values = [lag for _, lag in seen]
    trend = lag_trend([t for t, _ in seen], values)
    end_vis = (txs[-1][1] + values[-1]) if drained else time.time()
    ids = batches.batches_between(t_first, end_vis + 0.001)
    applied = sync.batch_stats()
    points = [applied[b] for b in ids if b in applied]
    rows = sum(n for n, _ in points)
    busy = sum(t for _, t in points)
    model = batch_model(points)
    rate_w = wrote["achieved_per_s"]
    ph = {
        "rate": rate, "seconds": round(wrote["seconds"], 1), "transactions": len(txs),
        "changes": wrote["changes"], "achieved_per_s": round(wrote["achieved_per_s"]),
        "writer_kept_rate": wrote["achieved_per_s"] >= WRITER_SHORT * rate,
        "drained": drained, "visible": len(values),
        "p50_s": _r(percentile(values, 50)), "p90_s": _r(percentile(values, 90)),
        "p99_s": _r(percentile(values, 99)), "max_s": _r(max(values) if values else None),
        "end_lag_s": _r(values[-1] if drained else None),
        # written changes over first commit -> last visible (a lower bound while lag is high)
        "throughput_per_s": round(wrote["changes"] / max(1e-9, end_vis - t_first)),
        "batches": len(ids),
        "batch_apply_s": _r(busy / len(ids) if ids else None),
        # the phase's changes per second of batch time (the sync log's apply_s)
        "apply_per_s": round(rows / busy) if busy > 0 else None,
        "batch_fixed_s": _r(model[0]) if model else None,
        "batch_marginal_per_s": round(model[1]) if model else None,
        # the batch time this rate settles at (None: it does not settle)
        "steady_batch_s": (_r(model[0] / (1 - rate_w / model[1]))
                           if model and rate_w < model[1] else None),
        "load_avg": {"start": load0, "end": load_avg(2)},
    }
    if lead > 0:
        lead_lags = [x for x in lags_of(lead_txs, batches.visible()) if x is not None]
        ph["warmup"] = {"seconds": lead, "transactions": len(lead_txs),
                        "p50_s": _r(percentile(lead_lags, 50)),
                        "p99_s": _r(percentile(lead_lags, 99)),
                        "max_s": _r(max(lead_lags) if lead_lags else None)}
    ph["trend_bounded"] = trend.pop("bounded")
    ph.update(trend)
    ph["bounded"] = keeps_up(ph["trend_bounded"], drained, ph["batch_marginal_per_s"], rate_w)
    echo(f"rate {rate:,}/s: {format_phase(ph)}")
    return ph


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def run_lag(cfg: LagConfig, echo: Echo = print) -> dict[str, Any]:
    work = work_dir(cfg.workdir, "binlake-lagbench-")
    server = start_server(work)
    doc: dict[str, Any] = {"config": _config_json(cfg), "mode": "backlog" if cfg.backlog else "lag"}
    sync: SyncProcess | None = None
    try:
        doc["workload"] = _setup(server, cfg, echo)
        wh = work / "wh"
        if cfg.backlog:
            doc["backlog"] = _backlog(server, cfg, wh, work, echo)
        else:
            echo("starting binlake sync (snapshot, then streaming)")
            sync = SyncProcess(server.url, wh, work / "sync", once=False, master=cfg.master,
                               trigger=cfg.trigger, extra=cfg.sync_args)
            batches = BatchWatcher(wh)
            writer = Writer(server, TxMaker(live_ids(server), cfg.seed, cfg.tx_rows))
            try:
                # one transaction through the stream: the snapshot is done and the stream runs
                key, _, _ = writer.commit_one()
                t0 = time.time()
                if not batches.wait_for(key, cfg.drain_timeout + 300, sync.check_alive):
                    raise LagBenchError(f"the first change never became visible: {sync.tail()}")
                doc["start_s"] = round(time.time() - sync.t0, 1)
                echo(f"sync streaming after {doc['start_s']} s (first change visible after "
                     f"{time.time() - t0:.1f} s)")
                phases = []
                for i, rate in enumerate(cfg.rates):
                    # the first rate's warm-up runs straight into its timed part (no drain)
                    lead = cfg.warmup if i == 0 else 0.0
                    echo(f"writing {rate:,} row changes/s for {cfg.seconds:g} s"
                         + (f" after a warm-up of {lead:g} s at that rate" if lead else ""))
                    ph = _phase(writer, batches, sync, rate, cfg.seconds, cfg.drain_timeout, echo,
                                lead=lead)
                    phases.append(ph)
                    if not ph["drained"]:
                        echo(f"rate {rate:,}/s did not drain within {cfg.drain_timeout:g} s; "
                             "higher rates skipped")
                        break
                doc["phases"] = phases
                doc["highest_bounded_rate"] = highest_bounded(phases)
            finally:
                writer.close()
            status = sync.stop()
            doc["sync"] = {"exit_status": status, "report": sync.report(),
                           "peak_rss_mb": sync.rss.to_json()}
        if cfg.compare:
            echo("comparing the Delta tables with MariaDB")
            doc["check"] = _compare(server, wh, cfg.master)
            doc["equal"] = all(v["equal"] for v in doc["check"].values())
        return doc
    finally:
        if sync is not None and sync.proc.poll() is None:
            sync.proc.kill()
        stop_server(server, work, cfg.keep)


def _backlog(server: Any, cfg: LagConfig, wh: Path, work: Path, echo: Echo) -> dict[str, Any]:
    echo("snapshot: binlake sync --once")
    snap = SyncProcess(server.url, wh, work / "snapshot", once=True, master=cfg.master,
                       trigger=cfg.trigger, extra=cfg.sync_args)
    if snap.wait(3600) != 0:
        raise LagBenchError(f"the snapshot failed: {snap.tail()}")
    out: dict[str, Any] = {"snapshot_s": round(time.time() - snap.t0, 1),
                           "snapshot_peak_rss_mb": snap.rss.to_json()}
    before = _binlog_bytes(server)
    writer = Writer(server, TxMaker(live_ids(server), cfg.seed, cfg.tx_rows))
    try:
        echo(f"backlog: writing {cfg.backlog:,} row changes with the sync stopped")
        out["write"] = write_backlog(writer, cfg.backlog, echo)
    finally:
        writer.close()
    out["binlog_bytes"] = _binlog_bytes(server) - before
    echo(f"backlog: {out['write']['changes']:,} changes, {out['binlog_bytes'] / 1e6:,.1f} MB "
         f"binlog in {out['write']['seconds']} s; catching up: binlake sync --once")
    load0 = load_avg(2)
    catch = SyncProcess(server.url, wh, work / "catchup", once=True, master=cfg.master,
                        trigger=cfg.trigger, extra=cfg.sync_args)
    status = catch.wait(6 * 3600)
    secs = time.time() - catch.t0
    if status != 0:
        raise LagBenchError(f"the catch-up failed (status {status}): {catch.tail()}")
    rep = catch.report()
    per_batch = sorted(catch.batch_stats().items())
    out["batch_changes"] = [rows for _, (rows, _) in per_batch]
    out["batch_apply_s"] = [round(secs, 1) for _, (_, secs) in per_batch]
    n = out["write"]["changes"]
    out.update({"catch_up_s": round(secs, 1), "batches": rep.get("batches"),
                "records": rep.get("rows"), "changes_per_s": round(n / secs),
                "peak_rss_mb": catch.rss.to_json(),
                "load_avg": {"start": load0, "end": load_avg(2)}})
    echo(f"backlog: {format_backlog(out)}")
    return out


def _config_json(cfg: LagConfig) -> dict[str, Any]:
    d = {k: (str(v) if isinstance(v, Path) else v) for k, v in cfg.__dict__.items()}
    d["date"] = utc_stamp()
    d["cpus"] = os.cpu_count()
    return d


# -- output -----------------------------------------------------------------------------------

def format_phase(ph: dict[str, Any]) -> str:
    ok = ("bounded" if ph["bounded"] else "NOT drained" if not ph["drained"]
          else "GROWING" if ph["growth_s"] is not None and ph.get("trend_bounded") is False
          else "NOT keeping up")
    short = "" if ph["writer_kept_rate"] else " (writer short of the rate)"
    return (f"{ph['achieved_per_s']:,} changes/s written{short}, {ph['transactions']:,} tx; "
            f"lag p50 {ph['p50_s']} s, p99 {ph['p99_s']} s, max {ph['max_s']} s; "
            f"{ph['batches']} batches of {ph['batch_apply_s']} s (fixed "
            f"{ph['batch_fixed_s']} s + changes at {ph['batch_marginal_per_s']}/s); "
            f"growth {ph['growth_s']} s -> {ok}; load {ph['load_avg']['end'][0]}")


def format_backlog(b: dict[str, Any]) -> str:
    rss = b["peak_rss_mb"]
    return (f"{b['write']['changes']:,} changes ({b['binlog_bytes'] / 1e6:,.1f} MB binlog) caught "
            f"up in {b['catch_up_s']} s ({b['changes_per_s']:,}/s), {b['batches']} batch(es) "
            f"of at most {max(b['batch_changes'], default=0):,} changes; "
            f"peak RSS driver {rss['driver_mb']} MB, JVM {rss['jvm_mb']} MB, "
            f"Python worker {rss['python_worker_mb']} MB, tree {rss['tree_mb']} MB")


def format_summary(doc: dict[str, Any]) -> str:
    lines = []
    if doc["mode"] == "lag":
        lines.append("commit -> visible in Delta (binlake sync, "
                     f"{doc['config']['trigger']:g} s trigger):")
        lines += [f"  {ph['rate']:>6,}/s: {format_phase(ph)}" for ph in doc["phases"]]
        hb = doc["highest_bounded_rate"]
        lines.append(f"highest rate with bounded lag: {f'{hb:,}/s' if hb else 'none'}")
        rss = doc["sync"]["peak_rss_mb"]
        lines.append(f"sync peak RSS: driver {rss['driver_mb']} MB, JVM {rss['jvm_mb']} MB, "
                     f"Python worker {rss['python_worker_mb']} MB, tree {rss['tree_mb']} MB")
    else:
        lines.append(f"backlog: {format_backlog(doc['backlog'])}")
    if "equal" in doc:
        lines.append(f"Delta == MariaDB after the run: {doc['equal']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m binlake.bench.lag_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)),
                    help="row changes/s, comma-separated (default %(default)s)")
    ap.add_argument("--seconds", type=float, default=120.0, help="per rate (default 120)")
    ap.add_argument("--warmup", type=float, default=60.0,
                    help="seconds at the first rate, after the sync streams, before the timed "
                         "rates: its first batches in a fresh JVM are slow (default 60; 0: none)")
    ap.add_argument("--scale", type=int, default=20_000,
                    help="row changes of the seeded workload snapshotted first (default 20000)")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--tx-rows", default="10-50", help="row changes per transaction (10-50)")
    ap.add_argument("--trigger", type=float, default=0.5,
                    help="binlake sync --trigger-interval, seconds (default 0.5)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--backlog", type=int, default=0, metavar="N",
                    help="instead: write N changes with the sync stopped, then sync --once")
    ap.add_argument("--drain-timeout", type=float, default=300.0,
                    help="seconds to wait for a rate's changes to become visible (default 300)")
    ap.add_argument("--sync-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for binlake sync (repeatable), e.g. "
                         "--sync-arg=--max-bytes-per-trigger=0")
    ap.add_argument("--no-compare", action="store_true",
                    help="skip comparing the Delta tables with MariaDB at the end")
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    try:
        rates = parse_rates(args.rates)
        tx_rows = parse_span(args.tx_rows)
    except ValueError as exc:
        ap.error(str(exc))
    if args.seconds <= 0 or args.scale < 1 or args.backlog < 0 or args.trigger <= 0:
        ap.error("--seconds, --scale and --trigger must be positive, --backlog at least 0")
    cfg = LagConfig(rates=rates, seconds=args.seconds, warmup=args.warmup, scale=args.scale,
                    seed=args.seed, tx_rows=tx_rows, trigger=args.trigger, master=args.master,
                    backlog=args.backlog, drain_timeout=args.drain_timeout,
                    sync_args=tuple(args.sync_arg), compare=not args.no_compare,
                    workdir=Path(args.workdir) if args.workdir else None, keep=args.keep)
    from ..cli.logs import setup

    setup()
    try:
        doc = run_lag(cfg, echo=lambda m: print(m, file=sys.stderr, flush=True))
    except LagBenchError as exc:
        print(f"lag benchmark failed: {exc}", file=sys.stderr)
        return 2
    print(format_summary(doc))
    if args.json_path:
        write_json(args.json_path, doc)
    return 0 if doc.get("equal", True) else 1


if __name__ == "__main__":
    sys.exit(main())
