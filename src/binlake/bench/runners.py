"""One runner per contestant, each run in its own child process.

Why a child process per run: wall time, CPU seconds and peak RSS must belong to the tool
alone, not to the harness (which holds the workload generator and a MySQL client).  The
harness reaps each child with ``os.wait4``, which hands back that child's own rusage
(including anything it waited for), like ``/usr/bin/time -v``.  Each runner also says how
many rows its tool reported, so the harness can refuse a run whose count differs from the
workload's.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..devtools.devserver import find_binary
from .common import last_json_line, proc_cpu_s, proc_status_kb
from .workload import SCHEMA, TABLES

REPO_ROOT = Path(__file__).resolve().parents[3]
BENCH_SCRIPTS = REPO_ROOT / "benchmarks"


class BenchError(RuntimeError):
    """A run failed or reported the wrong number of rows: the measurement is void."""


@dataclass
class BenchContext:
    """Everything a runner needs: where the server is and which binlog bytes make the workload."""

    host: str
    port: int
    user: str
    password: str
    first_file: str
    files: list[Path]
    """The workload's binlog files, in order, readable on this machine."""
    binlog_bytes: int
    workdir: Path
    server_pid: int | None = None
    timeout: float = 3600.0

    @property
    def url(self) -> str:
        return (f"mysql://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
                f"@{self.host}:{self.port}")


@dataclass
class ProcStats:
    """One child process: exit status, wall clock, CPU and peak RSS (from its rusage)."""

    returncode: int
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    stdout: str
    stderr_tail: str
    server_cpu_s: float | None = None
    rss_method: str = ""

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s


@dataclass
class Measurement:
    """One timed run of one runner."""

    tool: str
    table: str | None
    repeat: int
    wall_s: float
    cpu_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    rows: int | None
    """Rows the tool itself reported (None: the tool cannot report, checked in another pass)."""
    self_seconds: float | None
    server_cpu_s: float | None
    rss_method: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _server_cpu(pid: int | None) -> float | None:
    """utime + stime of a local server process, in seconds (None when not ours to read)."""
    if pid is None:
        return None
    try:
        return proc_cpu_s(pid)
    except OSError:
        return None


GNU_TIME = "/usr/bin/time"


def run_process(cmd: list[str], *, timeout: float, env: dict[str, str] | None = None,
                capture: bool = True, server_pid: int | None = None,
                stdout_path: Path | None = None) -> ProcStats:
    """Run ``cmd`` to completion and return its own resource usage.

    Peak RSS needs care: a child's ru_maxrss starts at its parent's RSS at fork (Linux keeps
    the pre-exec high-water mark), so the harness's own ~50 MB would show up in every tool.
    GNU time, a small C program, forks the tool from its own tiny image and reports the tool's
    true peak; without it the harness polls the tool's VmHWM (its own mm, exact except for
    growth in the last 20 ms).  CPU comes from wait4.  stdout goes to a temp file when
    captured (never a pipe the harness must drain while timing), to `stdout_path` (a tool's
    output, as a user would redirect it; not read back) or to /dev/null.  The
    watchdog kills the whole process group, and only while the leader is still unreaped.
    """
    use_time = os.access(GNU_TIME, os.X_OK)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(prefix="rss-", suffix=".txt") as rss_file:
        argv = [GNU_TIME, "-f", "%M", "-o", rss_file.name, *cmd] if use_time else cmd
        cpu0 = _server_cpu(server_pid)
        t0 = time.perf_counter()
        sink = open(stdout_path, "wb") if stdout_path is not None else None
        try:
            proc = subprocess.Popen(
                argv, stdout=sink if sink is not None else out if capture else subprocess.DEVNULL,
                stderr=err, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        finally:
            if sink is not None:
                sink.close()  # (the child has its own copy)
        lock = threading.Lock()
        exited = threading.Event()
        timed_out = [False]
        hwm = [0]

        def watchdog() -> None:
            deadline = time.monotonic() + timeout
            while not exited.wait(0.02):
                if not use_time:
                    hwm[0] = max(hwm[0], proc_status_kb(proc.pid, "VmHWM") or 0)
                if time.monotonic() >= deadline:
                    with lock:
                        if not exited.is_set():
                            timed_out[0] = True
                            os.killpg(proc.pid, signal.SIGKILL)
                    return

        thread = threading.Thread(target=watchdog, daemon=True)
        thread.start()
        # Wait without reaping, so the watchdog cannot signal a recycled pid; then reap.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        with lock:
            exited.set()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        thread.join()
        cpu1 = _server_cpu(server_pid)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace") if capture and sink is None else ""
        stderr = err.read().decode(errors="replace")
        max_rss = hwm[0]
        if use_time:
            try:
                max_rss = int(Path(rss_file.name).read_text().split()[-1])
            except (OSError, ValueError, IndexError):
                max_rss = 0
    if timed_out[0]:
        raise BenchError(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
    return ProcStats(proc.returncode, wall, ru.ru_utime, ru.ru_stime, max_rss, stdout,
                     "\n".join(stderr.splitlines()[-20:]),
                     None if cpu0 is None or cpu1 is None else cpu1 - cpu0,
                     "gnu-time" if use_time else "vmhwm-poll")


def _last_json_line(text: str) -> dict[str, Any]:
    line = last_json_line(text)
    if line is not None:
        return line
    raise BenchError(f"no JSON stats line in the tool's output: {text[-500:]!r}")


class Runner(ABC):
    """A contestant: builds its command line and reads the row count out of its output."""

    name: str = ""
    capture: bool = True
    needs_server: bool = False

    def __init__(self, table: str | None = None) -> None:
        self.table = table

    @property
    def label(self) -> str:
        return f"{self.name}[{self.table}]" if self.table else self.name

    @property
    def qualified_table(self) -> str | None:
        return f"{SCHEMA}.{self.table}" if self.table else None

    @abstractmethod
    def command(self, ctx: BenchContext) -> list[str]:
        """The argv to time (no shell)."""

    def env(self, ctx: BenchContext) -> dict[str, str] | None:
        return None

    def prepare(self, ctx: BenchContext) -> None:
        """Untimed set-up before each run (e.g. an empty output directory)."""

    def stdout_path(self, ctx: BenchContext) -> Path | None:
        """A file the tool's stdout goes to (its output, timed as written), or None."""
        return None

    def missing(self) -> str | None:
        """Why this contestant cannot run here (one line), or None when it can."""
        return None

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        """(rows reported, the tool's own seconds, extra facts) from a finished run."""
        line = _last_json_line(stats.stdout)
        return int(line["rows"]), line.get("seconds"), {k: v for k, v in line.items()
                                                         if k not in ("rows", "seconds")}

    def run(self, ctx: BenchContext, repeat: int) -> Measurement:
        self.prepare(ctx)
        warm_page_cache(ctx.files)
        cmd = self.command(ctx)
        stats = run_process(cmd, timeout=ctx.timeout, env=self.env(ctx), capture=self.capture,
                            server_pid=ctx.server_pid if self.needs_server else None,
                            stdout_path=self.stdout_path(ctx))
        if stats.returncode != 0:
            raise BenchError(f"{self.label} exited with {stats.returncode}:\n{stats.stderr_tail}")
        rows, self_s, extra = self.parse(ctx, stats)
        return Measurement(self.label, self.table, repeat, stats.wall_s, stats.cpu_s,
                           stats.user_s, stats.sys_s, stats.max_rss_kb, rows, self_s,
                           stats.server_cpu_s, stats.rss_method, extra)


def warm_page_cache(paths: list[Path], chunk: int = 8 << 20) -> int:
    """Read the binlog files through once (untimed) before a run; returns the bytes read.

    Why: every run should start with the files in the page cache, whatever ran before it.
    Some hosts page out file pages that went unread for a few seconds (this benchmark's
    VM runs DAMON reclaim), so a tool timed after a long run of another would otherwise
    pay for disk reads the tool before it did not. Streaming tools read the same files
    through the server when it is local."""
    buf = bytearray(chunk)
    total = 0
    for path in paths:
        with open(path, "rb", buffering=0) as fh:
            while n := fh.readinto(buf):
                total += n
    return total


def _python() -> list[str]:
    return [sys.executable, "-X", "utf8"]


def _bench_script(name: str) -> str:
    """The path of a script in benchmarks/ (a contestant that is not a `binlake` command)."""
    script = BENCH_SCRIPTS / name
    if not script.is_file():
        raise BenchError(f"{script} is missing: run the benchmark from a source checkout")
    return str(script)


def _url_without_password(ctx: BenchContext) -> str:
    """The server's URL for binlake's replica; the password goes in BINLAKE_PASSWORD
    (_password_env), kept out of argv and the JSON."""
    return f"mysql://{quote(ctx.user, safe='')}@{ctx.host}:{ctx.port}"


def _password_env(ctx: BenchContext) -> dict[str, str]:
    return {**os.environ, "BINLAKE_PASSWORD": ctx.password}


class BinlakeDecode(Runner):
    """binlake decode FILES --output null --stats (checksums verified, the default)."""

    name = "binlake-decode"

    def command(self, ctx: BenchContext) -> list[str]:
        cmd = [*_python(), "-m", "binlake.cli", "decode", "--output", "null", "--stats"]
        if self.table:
            cmd += ["--tables", self.qualified_table or ""]
        return cmd + [str(p) for p in ctx.files]


class BinlakeDecodeJobs(BinlakeDecode):
    """binlake decode --jobs 0: the files decoded a file per CPU at a time, output in order.

    Its CPU seconds are all workers'; its peak RSS is the largest process's (each worker
    holds about that much)."""

    name = "binlake-decode-jobs"

    def command(self, ctx: BenchContext) -> list[str]:
        return [*super().command(ctx), "--jobs", "0"]


class BinlakeStream(Runner):
    """binlake stream URL --start FIRST:4 --until-end --output null --stats."""

    name = "binlake-stream"
    needs_server = True

    def command(self, ctx: BenchContext) -> list[str]:
        cmd = [*_python(), "-m", "binlake.cli", "stream", _url_without_password(ctx),
               "--start", f"{ctx.first_file}:4", "--until-end", "--output", "null", "--stats"]
        if self.table:
            cmd += ["--tables", self.qualified_table or ""]
        return cmd

    def env(self, ctx: BenchContext) -> dict[str, str]:
        return _password_env(ctx)


def _lines_out(ctx: BenchContext, label: str) -> Path:
    return ctx.workdir / f"{label}.jsonl"


def _jsonl_checked(path: Path, stats_line: dict[str, Any], label: str
                   ) -> tuple[int | None, float | None, dict[str, Any]]:
    """(rows, seconds, extra) of a run that wrote JSON lines to `path`: a line per row
    change, each a JSON object, or the run is void; the file is removed after (untimed)."""
    lines = size = 0
    last = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = (last + chunk)[-2:]
    path.unlink()
    rows = int(stats_line["rows"])
    if lines != rows or (size and last != b"}\n"):
        raise BenchError(f"{label} wrote {lines} lines ({size} bytes) for {rows} rows")
    return rows, stats_line.get("seconds"), {"output_bytes": size}


class BinlakeDecodeJsonl(BinlakeDecode):
    """binlake decode FILES --output jsonl --stats > FILE: the JSON lines users read, written
    into a file in the workdir (checked, a line per row, and removed after each run)."""

    name = "binlake-decode-jsonl"

    def command(self, ctx: BenchContext) -> list[str]:
        cmd = super().command(ctx)
        cmd[cmd.index("null")] = "jsonl"
        return cmd

    def stdout_path(self, ctx: BenchContext) -> Path | None:
        return _lines_out(ctx, self.label)

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        # (the stats line goes to stderr when the records go to stdout)
        return _jsonl_checked(_lines_out(ctx, self.label), _last_json_line(stats.stderr_tail),
                              self.label)


class BinlakeDecodeText(BinlakeDecode):
    """binlake decode FILES --output text --stats > FILE: the text records (a head line per
    row change, then its images) into a file, checked a head per row and removed. Opt-in."""

    name = "binlake-decode-text"
    HEADS = (b"\n### INSERT ", b"\n### UPDATE ", b"\n### DELETE ")

    def command(self, ctx: BenchContext) -> list[str]:
        cmd = super().command(ctx)
        cmd[cmd.index("null")] = "text"
        return cmd

    def stdout_path(self, ctx: BenchContext) -> Path | None:
        return ctx.workdir / f"{self.label}.txt"

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        path = ctx.workdir / f"{self.label}.txt"
        heads = size = 0
        tail = b"\n"  # (the file's first line counts as if after a newline)
        with open(path, "rb") as fh:
            while chunk := fh.read(8 << 20):
                data = tail + chunk
                heads += sum(data.count(h) for h in self.HEADS)
                size += len(chunk)
                tail = data[-12:]  # a head split across two reads is counted once
                heads -= sum(tail.count(h) for h in self.HEADS)
        heads += sum(tail.count(h) for h in self.HEADS)
        path.unlink()
        line = _last_json_line(stats.stderr_tail)
        rows = int(line["rows"])
        if heads != rows:
            raise BenchError(f"{self.label} wrote {heads} record heads ({size} bytes) for {rows} rows")
        return rows, line.get("seconds"), {"output_bytes": size}


class BinlakeStreamJsonl(BinlakeStream):
    """binlake stream URL --start FIRST:4 --until-end --output jsonl --out FILE --stats: the
    JSON lines of a live stream into a file (checked and removed after each run)."""

    name = "binlake-stream-jsonl"

    def command(self, ctx: BenchContext) -> list[str]:
        cmd = super().command(ctx)
        cmd[cmd.index("null")] = "jsonl"
        return cmd + ["--out", str(_lines_out(ctx, self.label))]

    def prepare(self, ctx: BenchContext) -> None:
        _lines_out(ctx, self.label).unlink(missing_ok=True)

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        return _jsonl_checked(_lines_out(ctx, self.label), _last_json_line(stats.stdout),
                              self.label)


class PmrStream(Runner):
    """python-mysql-replication, every value of every row touched (benchmarks/pmr_stream.py)."""

    name = "pmr-stream"
    needs_server = True

    def command(self, ctx: BenchContext) -> list[str]:
        cmd = [*_python(), _bench_script("pmr_stream.py"), ctx.url, ctx.first_file]
        if self.table:
            cmd += ["--tables", self.qualified_table or ""]
        return cmd


class MariadbBinlogVV(Runner):
    """mariadb-binlog --base64-output=decode-rows -vv --verify-binlog-checksum FILES > /dev/null.

    Its output goes to /dev/null while timed, so it cannot report rows then; the harness checks
    its row count in a separate untimed pass (:func:`count_mariadb_binlog_rows`).
    """

    name = "mariadb-binlog-vv"
    capture = False

    def command(self, ctx: BenchContext) -> list[str]:
        return [_mariadb_binlog(), "--base64-output=decode-rows", "-vv",
                "--verify-binlog-checksum", *[str(p) for p in ctx.files]]

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        return None, None, {}


class MariadbBinlogVVFile(MariadbBinlogVV):
    """mariadb-binlog -vv as above, its text written into a file in the workdir (removed
    after each run, untimed): the like-for-like peer of binlake-decode-jsonl. Opt-in."""

    name = "mariadb-binlog-vv-file"

    def stdout_path(self, ctx: BenchContext) -> Path | None:
        return _lines_out(ctx, self.label)

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        path = _lines_out(ctx, self.label)
        size = path.stat().st_size
        path.unlink()
        return None, None, {"output_bytes": size}


PEERS_BUILD = "benchmarks/peers/build.sh"


def peers_dir() -> Path:
    """Where benchmarks/peers/build.sh puts the peer programs ($BINLAKE_PEERS overrides)."""
    return Path(os.environ.get("BINLAKE_PEERS") or Path.home() / ".cache" / "binlake" / "peers")


class PeerJsonl(Runner):
    """A peer library's row changes as JSON lines into a file, by our own small program over
    it (benchmarks/peers/), which prints a stats line with its rows per table and op. Opt-in,
    and skipped with a note until benchmarks/peers/build.sh has built the program."""

    program = ""

    def program_path(self) -> Path:
        return peers_dir() / self.program

    def missing(self) -> str | None:
        path = self.program_path()
        if os.access(path, os.X_OK):
            return None
        return f"{self.name}: skipped, {path} is not built (run {PEERS_BUILD})"

    def prepare(self, ctx: BenchContext) -> None:
        _lines_out(ctx, self.label).unlink(missing_ok=True)

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        line = _last_json_line(stats.stdout)
        rows, seconds, extra = _jsonl_checked(_lines_out(ctx, self.label), line, self.label)
        return rows, seconds, {**extra, "tables": line.get("tables")}


class GoMysqlFileJsonl(PeerJsonl):
    """go-mysql's replication.BinlogParser.ParseFile over FILES (CRC32 checked), each row
    change written as a JSON line into a file (benchmarks/peers/gomysql)."""

    name = "go-mysql-file-jsonl"
    program = "gomysql-jsonl"

    def command(self, ctx: BenchContext) -> list[str]:
        return [str(self.program_path()), "-out", str(_lines_out(ctx, self.label)),
                *[str(p) for p in ctx.files]]


class BcjFileJsonl(PeerJsonl):
    """mysql-binlog-connector-java's BinaryLogFileReader over FILES (it skips checksums
    without checking them), each row change written as a JSON line into a file
    (benchmarks/peers/bcj)."""

    name = "bcj-file-jsonl"
    program = "bcj-jsonl"

    def command(self, ctx: BenchContext) -> list[str]:
        return [str(self.program_path()), "file", str(_lines_out(ctx, self.label)),
                *[str(p) for p in ctx.files]]


class BcjStreamJsonl(PeerJsonl):
    """mysql-binlog-connector-java's BinaryLogClient replicating from the bench's server from
    FIRST:4 to the end of the workload's last file, each row change written as a JSON line
    into a file (benchmarks/peers/bcj)."""

    name = "bcj-stream-jsonl"
    program = "bcj-jsonl"
    needs_server = True

    def command(self, ctx: BenchContext) -> list[str]:
        last = ctx.files[-1]
        return [str(self.program_path()), "stream", str(_lines_out(ctx, self.label)), ctx.host,
                str(ctx.port), ctx.user, ctx.first_file, last.name, str(last.stat().st_size)]

    def env(self, ctx: BenchContext) -> dict[str, str]:
        return {**os.environ, "MYSQL_PWD": ctx.password}  # kept out of argv and JSON


class RawTransfer(Runner):
    """mariadb-binlog --read-from-remote-server --raw ... FIRST --to-last-log: transfer only."""

    name = "raw-transfer"
    capture = False
    needs_server = True

    def _dir(self, ctx: BenchContext) -> Path:
        return ctx.workdir / "raw-transfer"

    def prepare(self, ctx: BenchContext) -> None:
        shutil.rmtree(self._dir(ctx), ignore_errors=True)
        self._dir(ctx).mkdir(parents=True)

    def command(self, ctx: BenchContext) -> list[str]:
        return [_mariadb_binlog(), "--read-from-remote-server", "--raw", "--host", ctx.host,
                "--port", str(ctx.port), "--user", ctx.user,
                f"--result-file={self._dir(ctx)}/", ctx.first_file, "--to-last-log"]

    def env(self, ctx: BenchContext) -> dict[str, str]:
        return {**os.environ, "MYSQL_PWD": ctx.password}  # kept out of argv and JSON

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        got = 0
        for src in ctx.files:
            copy = self._dir(ctx) / src.name
            size = copy.stat().st_size if copy.exists() else -1
            if size != src.stat().st_size:
                raise BenchError(f"raw transfer of {src.name}: {size} bytes, the file has "
                                 f"{src.stat().st_size}")
            got += size
        shutil.rmtree(self._dir(ctx), ignore_errors=True)
        return None, None, {"bytes_checked": got}


class TransferFloor(Runner):
    """The least a live stream can take here: binlake's replica dialogue and receive path,
    every packet dropped unread (benchmarks/transfer_floor.py). Opt-in; its wall clock and
    the primary's CPU meanwhile are what the dump thread costs on this machine."""

    name = "transfer-floor"
    needs_server = True

    def command(self, ctx: BenchContext) -> list[str]:
        return [*_python(), _bench_script("transfer_floor.py"), _url_without_password(ctx),
                ctx.first_file]

    def env(self, ctx: BenchContext) -> dict[str, str]:
        return _password_env(ctx)

    def parse(self, ctx: BenchContext, stats: ProcStats) -> tuple[int | None, float | None, dict[str, Any]]:
        line = _last_json_line(stats.stdout)
        last = ctx.files[-1]
        file, _, pos = str(line.get("end")).rpartition(":")
        # the whole workload came: the dump ended at the end of its last file, or in a later one
        if not (file > last.name or (file == last.name and int(pos) == last.stat().st_size)):
            raise BenchError(f"transfer floor ended at {line.get('end')}, before the end of "
                             f"{last.name} ({last.stat().st_size} bytes)")
        return None, line.get("seconds"), {"bytes": int(line["bytes"]), "packets": int(line["packets"]),
                                            "end": line["end"]}


class BinlakeArrow(Runner):
    """Hook for the Arrow path (binlake.cdc.arrow): decode FILES into CDC record batches.

    Opt-in (``--tools binlake-arrow``) until the Spark side settles its API; the script lives
    in benchmarks/arrow_decode.py.
    """

    name = "binlake-arrow"
    options: tuple[str, ...] = ()

    def command(self, ctx: BenchContext) -> list[str]:
        cmd = [*_python(), _bench_script("arrow_decode.py"), *self.options]
        if self.table:
            cmd += ["--tables", self.qualified_table or ""]
        return cmd + [str(p) for p in ctx.files]


class BinlakeArrowJobs(BinlakeArrow):
    """The Arrow path a process per CPU, each taking a file or a 128 MiB part of one at a
    time, as the Spark files source's tasks run on a local[*] session
    (benchmarks/arrow_decode.py --jobs 0)."""

    name = "binlake-arrow-jobs"
    options = ("--jobs", "0")


def _mariadb_binlog() -> str:
    found = find_binary("mariadb-binlog", "mysqlbinlog")
    if found is None:
        raise BenchError("mariadb-binlog not found (apt-get install mariadb-client)")
    return found


ALL_RUNNERS: dict[str, type[Runner]] = {
    r.name: r for r in (BinlakeDecode, BinlakeDecodeJsonl, BinlakeDecodeText, BinlakeDecodeJobs,
                        BinlakeStream,
                        BinlakeStreamJsonl, PmrStream, MariadbBinlogVV, MariadbBinlogVVFile,
                        RawTransfer, TransferFloor, BinlakeArrow, BinlakeArrowJobs,
                        GoMysqlFileJsonl, BcjFileJsonl, BcjStreamJsonl)
}
DEFAULT_TOOLS = ("binlake-decode", "binlake-decode-jsonl", "binlake-decode-jobs",
                 "binlake-stream", "binlake-stream-jsonl", "pmr-stream", "mariadb-binlog-vv",
                 "raw-transfer")
PER_TABLE_TOOLS = ("binlake-decode", "binlake-decode-jobs", "binlake-stream", "pmr-stream",
                   "binlake-arrow", "binlake-arrow-jobs")


def count_mariadb_binlog_rows(ctx: BenchContext) -> dict[str, dict[str, int]]:
    """Rows per table and op in ``mariadb-binlog -vv`` output (the untimed check of its count)."""
    cmd = [_mariadb_binlog(), "--base64-output=decode-rows", "-vv", "--verify-binlog-checksum",
           *[str(p) for p in ctx.files]]
    heads = {b"### INSERT INTO ": "insert", b"### UPDATE ": "update", b"### DELETE FROM ": "delete"}
    counts: Counter[tuple[str, str]] = Counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.startswith(b"### ") or line[4:5] not in (b"I", b"U", b"D"):
                continue
            for head, op in heads.items():
                if line.startswith(head):
                    name = line[len(head):].strip().decode(errors="replace").replace("`", "")
                    counts[(name, op)] += 1
                    break
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise BenchError(f"mariadb-binlog -vv exited with {proc.returncode}: {err[-2000:]}")
    out: dict[str, dict[str, int]] = {}
    for (name, op), n in counts.items():
        out.setdefault(name, {})[op] = n
    return out


def per_table_totals(by_table: dict[str, dict[str, int]]) -> dict[str, int]:
    """{'narrow': n, ...} for the workload's tables from {'db.narrow': {op: n}}."""
    return {t: sum(by_table.get(f"{SCHEMA}.{t}", {}).values()) for t in TABLES}
