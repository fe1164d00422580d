"""`binlake bench`: load the seeded workload, time every contestant on the same binlog, report.

The harness refuses to report numbers it cannot vouch for: each run's row count must equal the
workload's (per table for the per-table runs), mariadb-binlog's count is checked in an untimed
pass, and the raw transfer must deliver every byte of every workload file.
"""
from __future__ import annotations

import os
import platform
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import click

from .. import __version__
from ..devtools.devserver import DevServer, ExternalServer, find_binary
from . import report
from .common import write_json
from .runners import (
    ALL_RUNNERS, DEFAULT_TOOLS, PER_TABLE_TOOLS, BenchContext, BenchError, Measurement,
    RawTransfer, Runner, count_mariadb_binlog_rows, run_process,
)
from .workload import DEFAULT_MIX, SCHEMA, TABLES, LoadResult, Workload, load

Echo = Callable[[str], None]


@dataclass
class BenchConfig:
    """What to run; defaults give a run of a few minutes on a laptop."""

    scale: int = 100_000
    repeat: int = 3
    url: str | None = None
    seed: int = 6
    tools: tuple[str, ...] = DEFAULT_TOOLS
    per_table: bool = True
    workdir: Path | None = None
    keep: bool = False
    timeout: float = 3600.0
    profile_dir: Path | None = None
    annotate: bool = False
    max_binlog_size: str = "256M"
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))


def _binlog_range(first: str, last: str) -> list[str]:
    """mariadb-bin.000002 .. mariadb-bin.000004 -> the names in between, in order."""
    stem, a = first.rsplit(".", 1)
    stem_b, b = last.rsplit(".", 1)
    if stem != stem_b:
        raise BenchError(f"binlog names {first} and {last} do not share a base name")
    return [f"{stem}.{i:0{len(a)}d}" for i in range(int(a), int(b) + 1)]


def _local_files(server: Any, names: list[str], ctx_partial: BenchContext, echo: Echo) -> list[Path]:
    """The workload's binlog files on this machine; fetched raw (untimed) if the server's are not."""
    try:
        bdir = Path(server.binlog_dir)
        paths = [bdir / n for n in names]
        if all(p.is_file() and os.access(p, os.R_OK) for p in paths):
            return paths
    except Exception:  # noqa: BLE001 - a remote server's path is simply not ours to read
        pass
    echo("binlog files are not readable here; copying them with mariadb-binlog --raw (untimed)")
    copy_dir = ctx_partial.workdir / "binlog-copy"
    runner = RawTransfer()
    ctx_partial.files = []
    runner.prepare(ctx_partial)
    stats = run_process(runner.command(ctx_partial), timeout=ctx_partial.timeout,
                        env=runner.env(ctx_partial), capture=False)
    if stats.returncode != 0:
        raise BenchError(f"could not copy the binlog files: {stats.stderr_tail}")
    shutil.rmtree(copy_dir, ignore_errors=True)
    (ctx_partial.workdir / "raw-transfer").rename(copy_dir)
    return [copy_dir / n for n in names]


def _tool_version(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else None


def _environment(server: Any) -> dict[str, Any]:
    try:
        from importlib.metadata import version
        pmr = version("mysql-replication")
    except Exception:  # noqa: BLE001
        pmr = None
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        server_version = server.sql("SELECT VERSION()", database=None)[0][0]
        settings = dict(server.sql(
            "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
            "WHERE VARIABLE_NAME IN ('BINLOG_ROW_IMAGE','BINLOG_ROW_METADATA','BINLOG_CHECKSUM',"
            "'BINLOG_ANNOTATE_ROW_EVENTS','MAX_BINLOG_SIZE','LOG_BIN_COMPRESS')", database=None))
    except Exception:  # noqa: BLE001
        server_version, settings = None, {}
    mdb = find_binary("mariadb-binlog", "mysqlbinlog")
    return {"binlake": __version__, "python": sys.version.split()[0],
            "platform": platform.platform(), "cpu": cpu, "cpus": os.cpu_count(),
            "mysql_replication": pmr, "server": server_version, "server_settings": settings,
            "mariadb_binlog": _tool_version([mdb, "--version"]) if mdb else None}


def _check(m: Measurement, runner: Runner, expected: dict[str, Any]) -> None:
    """A run that saw a different number of rows than the workload made voids the benchmark."""
    if m.rows is None:
        return
    want = expected["tables"][runner.table]["total"] if runner.table else expected["total"]
    if m.rows != want:
        raise BenchError(f"{m.tool} reported {m.rows} rows, the workload made {want}")
    by_table = m.extra.get("tables")
    if isinstance(by_table, dict) and not runner.table:
        for t in TABLES:
            got = by_table.get(f"{SCHEMA}.{t}", {})
            want_ops = {op: n for op, n in expected["tables"][t].items() if op != "total" and n}
            if got != want_ops:
                raise BenchError(f"{m.tool}: {SCHEMA}.{t} rows by op {got}, expected {want_ops}")


def _check_vv_counts(got: dict[str, dict[str, int]], expected: dict[str, Any]) -> None:
    for t in TABLES:
        want = {op: n for op, n in expected["tables"][t].items() if op != "total" and n}
        have = got.get(f"{SCHEMA}.{t}", {})
        if have != want:
            raise BenchError(f"mariadb-binlog -vv: {SCHEMA}.{t} rows by op {have}, expected {want}")


# -- profiling ---------------------------------------------------------------------------------

def _cprofile_top(path: Path, top: int) -> list[dict[str, Any]]:
    st = pstats.Stats(str(path))
    rows = []
    for (file, line, func), (cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": func, "where": f"{_short(file)}:{line}", "calls": nc,
                     "tottime_s": round(tt, 3), "cumtime_s": round(ct, 3)})
    rows.sort(key=lambda r: r["tottime_s"], reverse=True)
    return rows[:top]


def _short(file: str) -> str:
    i = file.find("/binlake/")
    return file[i + 1:] if i >= 0 else file.rsplit("/", 2)[-1] if "/" in file else file


def _pyspy_top(collapsed: Path, top: int) -> dict[str, list[dict[str, Any]]]:
    """Self time from py-spy's collapsed stacks ("a;b;c count"), per function and per line."""
    by_line: Counter[str] = Counter()
    by_func: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        leaf = stack.rsplit(";", 1)[-1]
        leaf = re.sub(r"\s*\((/[^)]*?/)?([^/)]*/[^/)]*)\)", r" (\2)", leaf)
        by_line[leaf] += int(n)
        by_func[re.sub(r":\d+\)$", ")", leaf)] += int(n)
        total += int(n)
    if not total:
        return {"functions": [], "lines": []}
    return {kind: [{"frame": f, "samples": n, "share": round(n / total, 4)}
                   for f, n in counter.most_common(top)]
            for kind, counter in (("functions", by_func), ("lines", by_line))}


def profile_binlake(ctx: BenchContext, out_dir: Path, echo: Echo, top: int = 25) -> dict[str, Any]:
    """cProfile (deterministic, inflates call-heavy code) and py-spy (sampling) of decode/stream."""
    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    targets = {
        "decode": ["decode", "--output", "null", "--stats", *[str(p) for p in ctx.files]],
        "stream": ["stream", f"mysql://{ctx.user}@{ctx.host}:{ctx.port}", "--start",
                   f"{ctx.first_file}:4", "--until-end", "--output", "null", "--stats"],
    }
    env = {**os.environ, "BINLAKE_PASSWORD": ctx.password}
    pyspy = shutil.which("py-spy")
    for name, args in targets.items():
        prof = out_dir / f"binlake-{name}.prof"
        stats = run_process([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "binlake.cli",
                             *args], timeout=ctx.timeout, env=env)
        if stats.returncode != 0:
            raise BenchError(f"profiling binlake {name} failed: {stats.stderr_tail}")
        entry: dict[str, Any] = {"cprofile_file": str(prof), "cprofile_wall_s": round(stats.wall_s, 3),
                                 "cprofile_top_tottime": _cprofile_top(prof, top)}
        if pyspy:
            collapsed = out_dir / f"binlake-{name}.pyspy.txt"
            ps = run_process([pyspy, "record", "--format", "raw", "--rate", "250", "--nonblocking",
                              "-o", str(collapsed), "--", sys.executable, "-m", "binlake.cli", *args],
                             timeout=ctx.timeout, env=env)
            if ps.returncode == 0 and collapsed.exists():
                entry["pyspy_file"] = str(collapsed)
                entry["pyspy_top_self"] = _pyspy_top(collapsed, top)
            else:
                entry["pyspy_error"] = ps.stderr_tail[-500:]
        result[name] = entry
        echo(f"profiled binlake {name}: {prof}")
    return result


def format_profile(profile: dict[str, Any], top: int = 15) -> str:
    lines = []
    for name, entry in profile.items():
        lines.append(f"binlake {name}: cProfile top by own time (wall under cProfile "
                     f"{entry['cprofile_wall_s']} s)")
        for r in entry["cprofile_top_tottime"][:top]:
            lines.append(f"  {r['tottime_s']:>8.3f} s {r['calls']:>10} calls  {r['function']}  {r['where']}")
        if "pyspy_top_self" in entry:
            lines.append(f"binlake {name}: py-spy self-time share by function")
            for r in entry["pyspy_top_self"]["functions"][:top]:
                lines.append(f"  {100 * r['share']:>6.1f}%  {r['frame']}")
    return "\n".join(lines)


# -- the benchmark -----------------------------------------------------------------------------

def _start_server(cfg: BenchConfig, workdir: Path) -> tuple[Any, bool]:
    if cfg.url:
        return ExternalServer(cfg.url).start(), False
    opts = {"max_binlog_size": cfg.max_binlog_size,
            "binlog_annotate_row_events": "ON" if cfg.annotate else "OFF",
            "innodb_buffer_pool_size": "512M", "innodb_flush_log_at_trx_commit": "0"}
    return DevServer(workdir / "server", extra_options=opts).start(), True


_PRECOMPILED = ("binlake", "pymysqlreplication", "pymysql", "sqlglot", "click", "tqdm",
                "cryptography", "pyarrow")


def _precompile(echo: Echo) -> None:
    """Write the bytecode of every contestant's Python packages once: with
    PYTHONDONTWRITEBYTECODE set (common in containers) each timed run would otherwise
    compile its imports again and time that instead of decoding.

    A cached file is rewritten whenever the importer would refuse it, which compileall
    alone does not see: it compares the source's modification second, the importer also
    its size, so a file changed within the second its bytecode was written (a git
    checkout) would be compiled again by every timed run."""
    import compileall
    import importlib.util

    stale = 0
    for name in _PRECOMPILED:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=2, workers=0)
            stale += _recompile_refused(Path(folder))
    echo("bytecode of the contestants' packages written (imports are not timed as compiles"
         + (f"; {stale} stale file(s) rewritten)" if stale else ")"))


def _recompile_refused(folder: Path) -> int:
    """Compile again each source under `folder` whose cached bytecode the importer would
    refuse (its header's modification time or size differs from the source's); returns
    how many."""
    import importlib.util
    import py_compile

    count = 0
    for src in folder.rglob("*.py"):
        try:
            st = src.stat()
            with open(importlib.util.cache_from_source(str(src)), "rb") as fh:
                head = fh.read(16)
        except (OSError, ValueError):
            continue  # no cached file (compileall could not write one): nothing to compare
        flags = int.from_bytes(head[4:8], "little")
        if flags != 0:
            continue  # hash-based bytecode: checked by content, never by time
        if (len(head) == 16 and int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF):
            continue
        try:
            py_compile.compile(str(src), doraise=True)
            count += 1
        except (OSError, py_compile.PyCompileError):
            pass  # left to the importer, as before
    return count


def run_benchmark(cfg: BenchConfig, echo: Echo = click.echo, server: Any = None) -> dict[str, Any]:
    """Run the whole benchmark and return the JSON document (see report.to_json).

    ``server`` (a DevServer/ExternalServer) overrides ``cfg.url``; the caller then owns it.
    """
    unknown = set(cfg.tools) - set(ALL_RUNNERS)
    if unknown:
        raise BenchError(f"unknown tool(s) {sorted(unknown)}; known: {sorted(ALL_RUNNERS)}")
    own_workdir = cfg.workdir is None
    workdir = Path(cfg.workdir or tempfile.mkdtemp(prefix="binlake-bench-")).absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    started = False
    try:
        if server is None:
            server, started = _start_server(cfg, workdir)
            echo(f"server: {'started under ' + str(workdir) if started else cfg.url.split('@')[-1]}")
        workload = Workload(cfg.scale, cfg.seed, cfg.mix)
        done = [0, 0]

        def progress(n: int) -> None:
            done[0] += n
            if done[0] * 10 // cfg.scale > done[1]:
                done[1] = done[0] * 10 // cfg.scale
                echo(f"  loaded {done[0]:,} / {cfg.scale:,} row changes")

        echo(f"loading {cfg.scale:,} row changes (seed {cfg.seed}) into {SCHEMA}")
        loaded: LoadResult = load(server, workload, progress)
        expected = loaded.expected.to_json()
        names = _binlog_range(loaded.first_file, loaded.last_file)
        ctx = BenchContext(host=getattr(server, "host", "127.0.0.1"), port=int(server.port),
                           user=server.user, password=server.password,
                           first_file=loaded.first_file, files=[], binlog_bytes=0,
                           workdir=workdir, server_pid=getattr(server, "pid", None),
                           timeout=cfg.timeout)
        ctx.files = _local_files(server, names, ctx, echo)
        ctx.binlog_bytes = sum(p.stat().st_size for p in ctx.files)
        echo(f"loaded in {loaded.seconds:.1f} s: {loaded.transactions} transactions, "
             f"{loaded.statements} statements, {len(ctx.files)} binlog file(s), "
             f"{ctx.binlog_bytes / 1e6:.1f} MB")

        checks: dict[str, Any] = {"expected": expected}
        if "mariadb-binlog-vv" in cfg.tools:
            vv = count_mariadb_binlog_rows(ctx)  # also warms the page cache for every file
            _check_vv_counts(vv, expected)
            checks["mariadb_binlog_vv_rows"] = vv

        _precompile(echo)
        runners: list[Runner] = [ALL_RUNNERS[t]() for t in cfg.tools]
        if cfg.per_table:
            runners += [ALL_RUNNERS[t](table) for table in TABLES for t in PER_TABLE_TOOLS
                        if t in cfg.tools]
        skipped = {rn.label: note for rn in runners if (note := rn.missing())}
        for note in skipped.values():
            echo(note)
        runners = [rn for rn in runners if rn.label not in skipped]
        measurements: list[Measurement] = []
        for r in range(cfg.repeat):
            for runner in runners:  # interleaved: A B C ..., A B C ...
                m = runner.run(ctx, r)
                _check(m, runner, expected)
                measurements.append(m)
                echo(f"  [{r + 1}/{cfg.repeat}] {m.tool:<30} {m.wall_s:8.2f} s wall "
                     f"{m.cpu_s:8.2f} s CPU {m.max_rss_kb / 1024:7.0f} MiB"
                     + (f"  rows {m.rows}" if m.rows is not None else ""))
        checks["row_counts"] = "every run matched the workload"

        expected_rows = {"": expected["total"], **{t: expected["tables"][t]["total"] for t in TABLES}}
        summary = report.summarize(measurements, expected_rows=expected_rows,
                                   binlog_bytes=ctx.binlog_bytes)
        profile = profile_binlake(ctx, cfg.profile_dir, echo) if cfg.profile_dir else None
        config = {"scale": cfg.scale, "repeat": cfg.repeat, "seed": cfg.seed,
                  "tools": list(cfg.tools), "per_table": cfg.per_table,
                  "page_cache": "the binlog files read through before every run (untimed)",
                  "url": (cfg.url.split("@")[-1] if cfg.url else None),
                  "annotate_rows": cfg.annotate if started else None,
                  "max_binlog_size": cfg.max_binlog_size if started else None,
                  "commands": {rn.label: _masked(rn.command(ctx), ctx.password) for rn in runners},
                  "skipped": skipped}
        workload_doc = {"seed": cfg.seed, "scale": cfg.scale, "mix": cfg.mix, "counts": expected,
                        "load_seconds": round(loaded.seconds, 2),
                        "transactions": loaded.transactions, "statements": loaded.statements,
                        "binlog_files": {p.name: p.stat().st_size for p in ctx.files},
                        "binlog_bytes": ctx.binlog_bytes}
        return report.to_json(config=config, workload=workload_doc,
                              environment=_environment(server), checks=checks,
                              measurements=measurements, summary=summary, profile=profile)
    finally:
        if started:
            server.stop()
        if own_workdir and not cfg.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _masked(cmd: list[str], password: str) -> str:
    text = " ".join(cmd)
    return text.replace(password, "***") if password else text


@click.command("bench")
@click.option("--scale", type=int, default=100_000, show_default=True,
              help="Total row changes in the workload (the issue's full run: 1000000).")
@click.option("--repeat", type=int, default=3, show_default=True,
              help="Timed runs per tool, interleaved; the table shows medians.")
@click.option("--url", default=None,
              help="Use this quiet server (mysql://user:pw@host:port) instead of a throwaway "
                   "local MariaDB; it must have the binlog on and FULL row metadata.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write every measurement, check and setting here.")
@click.option("--seed", type=int, default=6, show_default=True)
@click.option("--tools", default=",".join(DEFAULT_TOOLS), show_default=True,
              help=f"Comma-separated contestants out of: {', '.join(ALL_RUNNERS)}.")
@click.option("--per-table/--no-per-table", default=True, show_default=True,
              help="Also time binlake and python-mysql-replication on each table alone.")
@click.option("--workdir", type=click.Path(file_okay=False), default=None,
              help="Where the server and copies live (default: a temp dir, removed after).")
@click.option("--keep", is_flag=True, help="Keep the temp workdir (server, binlogs).")
@click.option("--timeout", type=float, default=3600, show_default=True,
              help="Seconds one run may take before it is killed and the benchmark fails.")
@click.option("--profile", "profile_dir", type=click.Path(file_okay=False), default=None,
              help="Also profile binlake decode and stream (cProfile, py-spy if installed) "
                   "into this directory and print the hotspots.")
@click.option("--annotate", is_flag=True,
              help="Local server only: keep binlog_annotate_row_events ON (statement text in "
                   "the binlog); off by default so MB/s measures row data.")
@click.option("--e2e-seconds", type=float, default=0, show_default=True,
              help="Also measure commit -> visible in Delta (binlake sync, local Spark) while "
                   "writing this long; 0 skips it.")
@click.option("--e2e-rate", type=float, default=200, show_default=True,
              help="Commits per second during the end-to-end measurement.")
@click.option("--sync", "sync_mode", is_flag=True,
              help="Benchmark the pipeline instead (binlake sync: snapshot and catch-up against "
                   "spark.read.jdbc, a plain Delta append and a bare MERGE; see "
                   "binlake.bench.sync_bench); uses --scale, --seed, --json, --workdir, --keep.")
@click.option("--verify", "verify_mode", is_flag=True,
              help="Benchmark binlake verify instead, against a full spark.read.jdbc SELECT "
                   "joined with the Delta tables (see binlake.bench.verify_bench); uses "
                   "--scale, --seed, --repeat, --json, --workdir, --keep.")
@click.option("--lag", "lag_mode", is_flag=True,
              help="Benchmark commit -> visible in Delta instead: binlake sync streaming while "
                   "a writer commits at --rates row changes/s for --seconds each (see "
                   "binlake.bench.lag_bench); uses --seed, --json, --workdir, --keep, and "
                   "--scale for the tables snapshotted first (default there 20000).")
@click.option("--rates", default="500,1000,2000,5000", show_default=True,
              help="With --lag: row changes/s, comma-separated.")
@click.option("--seconds", type=float, default=120, show_default=True,
              help="With --lag: seconds per rate.")
@click.option("--backlog", type=int, default=0, metavar="N",
              help="With --lag: instead write N row changes with the sync stopped, then time "
                   "binlake sync --once catching up (batches, peak RSS).")
@click.pass_context
def bench(ctx: click.Context, scale: int, repeat: int, url: str | None, json_path: str | None,
          seed: int, tools: str, per_table: bool, workdir: str | None, keep: bool,
          timeout: float, profile_dir: str | None, annotate: bool, e2e_seconds: float,
          e2e_rate: float, sync_mode: bool, verify_mode: bool, lag_mode: bool, rates: str,
          seconds: float, backlog: int) -> None:
    """Benchmark binlake against python-mysql-replication and mariadb-binlog on one workload.

    \b
    Examples:
      binlake bench                                  # 100k row changes, 3 interleaved repeats
      binlake bench --scale 1000000 --json bench.json
      binlake bench --scale 20000 --repeat 1 --no-per-table --profile prof/
      binlake bench --e2e-seconds 60                 # plus commit -> Delta lag, p50/p99
      binlake bench --sync --scale 50000             # the pipeline: binlake sync vs Spark floors
      binlake bench --verify --scale 100000 --repeat 2   # binlake verify vs a full compare
      binlake bench --lag --rates 500,2000 --seconds 60  # commit -> Delta lag at sustained rates
      binlake bench --lag --backlog 200000           # a backlog caught up: batches, peak RSS
    """
    if repeat < 1 or scale < 1:
        raise click.BadParameter("--scale and --repeat must be at least 1")
    if sync_mode:
        from .sync_bench import main as sync_main

        argv = ["--scale", str(scale), "--seed", str(seed)]
        argv += ["--json", json_path] if json_path else []
        argv += ["--workdir", workdir] if workdir else []
        argv += ["--keep"] if keep else []
        raise SystemExit(sync_main(argv))
    if lag_mode:
        from click.core import ParameterSource

        from .lag_bench import main as lag_main

        argv = ["--seed", str(seed), "--rates", rates, "--seconds", str(seconds),
                "--backlog", str(backlog)]
        if ctx.get_parameter_source("scale") is not ParameterSource.DEFAULT:
            argv += ["--scale", str(scale)]
        argv += ["--json", json_path] if json_path else []
        argv += ["--workdir", workdir] if workdir else []
        argv += ["--keep"] if keep else []
        raise SystemExit(lag_main(argv))
    if verify_mode:
        from .verify_bench import main as verify_main

        argv = ["--scale", str(scale), "--seed", str(seed), "--repeat", str(repeat)]
        argv += ["--json", json_path] if json_path else []
        argv += ["--workdir", workdir] if workdir else []
        argv += ["--keep"] if keep else []
        raise SystemExit(verify_main(argv))
    cfg = BenchConfig(scale=scale, repeat=repeat, url=url, seed=seed,
                      tools=tuple(t.strip() for t in tools.split(",") if t.strip()),
                      per_table=per_table, workdir=Path(workdir) if workdir else None, keep=keep,
                      timeout=timeout, profile_dir=Path(profile_dir) if profile_dir else None,
                      annotate=annotate)
    t0 = time.perf_counter()
    try:
        doc = run_benchmark(cfg, echo=lambda s: click.echo(s, err=True))
    except BenchError as exc:
        raise click.ClickException(str(exc)) from None
    doc["config"]["total_seconds"] = round(time.perf_counter() - t0, 1)
    wl = doc["workload"]
    click.echo(f"\nworkload: {wl['scale']:,} row changes, seed {wl['seed']}, "
               f"{wl['binlog_bytes'] / 1e6:.1f} MB binlog in {len(wl['binlog_files'])} file(s); "
               f"{doc['environment']['server']}; {doc['environment']['cpus']} CPUs")
    click.echo(report.format_table(doc["summary"]))
    click.echo("medians of the interleaved repeats; rows/s, MB/s (10^6 bytes) and the x columns "
               "use wall time; x pmr / x mdb-vv = speed relative to python-mysql-replication / "
               "mariadb-binlog -vv (CPU-time ratios are in the JSON); srv CPU = mariadbd CPU s "
               "during the run")
    if doc["profile"]:
        click.echo("\n" + format_profile(doc["profile"]))
    if e2e_seconds > 0:
        from .e2e import E2EError, measure_e2e_lag

        try:
            e2e = measure_e2e_lag(e2e_rate, e2e_seconds, echo=lambda s: click.echo(s, err=True))
        except E2EError as exc:
            raise click.ClickException(f"end to end: {exc}") from None
        doc["e2e"] = e2e
        click.echo(f"\nend to end (commit -> visible in Delta, binlake sync, {e2e['trigger_s']:g} s "
                   f"trigger): {e2e['rows']:,} commits at {e2e['rate']:g}/s: p50 {e2e['p50_s']} s, "
                   f"p90 {e2e['p90_s']} s, p99 {e2e['p99_s']} s, max {e2e['max_s']} s")
    if json_path:
        write_json(json_path, doc)
        click.echo(f"wrote {json_path}")
