"""`binlake bench --sync`: the pipeline (`binlake sync`) against the Spark floors it stands on.

One throwaway MariaDB, the seeded bench workload (narrow, wide, large), one local Spark
session, and in the same run:

* snapshot: `binlake sync --once` on the loaded tables (snapshot plus an empty catch-up),
  against `spark.read.jdbc` (MariaDB Connector/J, 4 partitions per table) -> Delta, and
  against the write floor no reader can beat: the same rows already in the driver as Arrow,
  `createDataFrame` -> Delta. Warm: all three in the bench's session (Delta warmed by a
  one-row write first; binlake's first run there pays Spark's other first uses, its second
  run into a new warehouse does not). Cold: each in a fresh process (a new JVM), timed from
  launch to its tables written: `binlake sync` itself, and the two floors;
* catch-up: a second round of changes on the existing rows (every row updated, some deleted,
  some inserted, in multi-row transactions), then `binlake sync --once`, against the two
  floors of any Spark apply: a plain Delta append, and one bare Delta MERGE (upsert of every
  row) of the rows the tables hold afterwards into a copy of the tables before the round;
* peak RSS of the Python driver and of the JVM;
* after each phase, every Delta table compared with its MariaDB table row by row.

Run `python -m binlake.bench.sync_bench --scale 50000 --json out.json` (or
`binlake bench --sync`). Connector/J comes from `jdbc_jar()` (scripts/spark-jars.sh fetches
it); without it the jdbc floor is skipped and says so.

`--startup` times the fixed costs instead: fresh `binlake sync --once` processes on a small
table (the first with its snapshot, then a handful of pending changes, then a batch with one
ALTER), each split into its phases from the job's own log lines; then the same ALTER case in
a long-running `binlake sync` (the production case): started, streaming (an insert, then an
update and an insert, applied), then an ALTER and an insert committed and timed to visible
in Delta.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .common import (columns, compare_tables, driver_peak_rss_mb, jar_conf, jdbc_jar,
                     jdbc_source, jvm_peak_rss_mb, jvm_pid, load_avg, proc_cpu_s, rss_mb, start_server,
                     stop_server, utc_stamp, work_dir, write_json)
from .workload import SCHEMA, TABLES, Workload, load


def batch_recorder(spark: Any, into: list[dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
    """A `run_sync` progress callback: each applied batch's changes, seconds and read, with
    the driver's and the JVM's resident memory right after it (RSS now, and the driver's peak
    so far)."""
    jvm = jvm_pid(spark)

    def record(info: dict[str, Any]) -> None:
        into.append({"batch": info.get("batch"), "changes": info.get("rows"),
                     "apply_s": info.get("apply_s"), "read_by": info.get("read_by"),
                     "driver_read_s": info.get("driver_read_s"),
                     "driver_rss_mb": rss_mb(), "driver_peak_mb": driver_peak_rss_mb(),
                     "jvm_rss_mb": rss_mb(jvm) if jvm else None,
                     "load_avg": load_avg()[0]})

    return record


def second_round(server: Any, per_tx: int = 400) -> dict[str, int]:
    """Every row updated, every 20th deleted, one new row per 10 old ones; returns row
    changes per table (as the server counted them)."""
    changes: dict[str, int] = {}
    sets = {"narrow": "s = CONCAT('r2-', id)", "wide": "c_vchar = CONCAT('r2-', id)",
            "large": "body = CONCAT('r2 ', body)"}
    conn = server.connect(database=SCHEMA, autocommit=False)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            for table in TABLES:
                cols = [c for c in columns(server, table) if c != "id"]
                cur.execute(f"SELECT MIN(id), MAX(id) FROM `{table}`")
                lo, hi = cur.fetchone()
                n = 0
                if lo is None:
                    changes[table] = 0
                    continue
                step = per_tx if table != "large" else 20
                offset = 10 ** 9
                for a in range(lo, hi + 1, step):
                    b = a + step - 1
                    conn.begin()
                    n += cur.execute(f"UPDATE `{table}` SET {sets[table]} "
                                     f"WHERE id BETWEEN {a} AND {b}")
                    n += cur.execute(f"DELETE FROM `{table}` WHERE id BETWEEN {a} AND {b} "
                                     "AND id % 20 = 7")
                    n += cur.execute(
                        f"INSERT INTO `{table}` (id, {', '.join(f'`{c}`' for c in cols)}) "
                        f"SELECT id + {offset}, {', '.join(f'`{c}`' for c in cols)} "
                        f"FROM `{table}` WHERE id BETWEEN {a} AND {b} AND id % 10 = 3")
                    conn.commit()
                changes[table] = n
    finally:
        conn.close()
    return changes


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def _bounds(server: Any) -> dict[str, tuple[int, int]]:
    out = {}
    for table in TABLES:
        lo, hi = server.sql(f"SELECT MIN(id), MAX(id) FROM `{table}`", database=SCHEMA)[0]
        out[table] = (int(lo or 0), int(hi or 0))
    return out


def jdbc_floor(spark: Any, server: Any, out: Path,
               bounds: dict[str, tuple[int, int]] | None = None) -> float:
    """spark.read.jdbc (4 partitions on id) -> Delta of every bench table; seconds.
    `server` needs `port`, `user` and `password` (and `sql` when `bounds` is not given)."""
    url, props = jdbc_source(server)
    bounds = bounds or _bounds(server)
    t0 = time.perf_counter()
    for table in TABLES:
        lo, hi = bounds[table]
        df = spark.read.jdbc(url, table, column="id", lowerBound=lo, upperBound=hi + 1,
                             numPartitions=4, properties=props)
        df.write.format("delta").mode("overwrite").save(str(out / table))
    return time.perf_counter() - t0


def source_arrow(spark: Any, server: Any, warehouse: Path, out: Path) -> Path:
    """The source columns of the snapshot's Delta tables as Arrow IPC files in `out` (the
    rows a write floor starts from, typed as binlake types them)."""
    import pyarrow as pa

    out.mkdir(parents=True, exist_ok=True)
    for table in TABLES:
        df = spark.read.format("delta").load(str(warehouse / SCHEMA / table))
        arrow = df.select(*columns(server, table)).toArrow()
        with pa.OSFile(str(out / f"{table}.arrow"), "wb") as f, \
                pa.ipc.new_file(f, arrow.schema) as w:
            w.write_table(arrow)
    return out


def write_floor(spark: Any, arrow_dir: Path, out: Path) -> float:
    """The rows already in the driver as Arrow -> `createDataFrame` -> Delta, every bench
    table one after the other; seconds (reading the Arrow files is not timed)."""
    import pyarrow as pa

    tables = {t: pa.ipc.open_file(str(arrow_dir / f"{t}.arrow")).read_all() for t in TABLES}
    t0 = time.perf_counter()
    for table, arrow in tables.items():
        spark.createDataFrame(arrow).write.format("delta").mode("overwrite").save(str(out / table))
    return time.perf_counter() - t0


class _Server:
    """What `jdbc_floor` needs of a server, in a child process."""

    def __init__(self, port: int, user: str, password: str) -> None:
        self.port, self.user, self.password = port, user, password


def _floor_child(args: argparse.Namespace) -> int:
    """`--floor jdbc|write` in a fresh process: a new session with the bench's settings and
    one floor, printing its seconds as JSON (the parent times the process itself)."""
    from ..spark.session import build_session

    spec = json.loads(args.floor_spec)
    t0 = time.perf_counter()
    spark = build_session("binlake-sync-bench-floor", master=spec["master"], conf=spec["conf"])
    session_s = time.perf_counter() - t0
    out = Path(spec["out"])
    if args.floor == "jdbc":
        srv = _Server(spec["port"], spec["user"], spec["password"])
        work_s = jdbc_floor(spark, srv, out, {k: tuple(v) for k, v in spec["bounds"].items()})
    else:
        work_s = write_floor(spark, Path(spec["arrow"]), out)
    print(json.dumps({"session_s": round(session_s, 2), "work_s": round(work_s, 2),
                      "done_ts": time.time()}))
    spark.stop()
    return 0


def _env() -> dict[str, str]:
    """The child's environment: this interpreter's binlake first on the path."""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


def cold_floor(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One floor in a fresh process: seconds from launch to its tables written (`done_s`,
    as `cli_sync`'s `snapshot_s`), to its exit (`wall_s`), and its parts."""
    t_launch = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "binlake.bench.sync_bench", "--floor", kind,
                           "--floor-spec", json.dumps(spec)], capture_output=True, text=True,
                          env=_env())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"the {kind} floor failed: {proc.stderr.strip()[-2000:]}")
    parts = json.loads(proc.stdout.strip().splitlines()[-1])
    done = round(parts.pop("done_ts") - t_launch, 2)
    return {"wall_s": round(wall, 2), "done_s": done, **parts}


def _log_events(text: str) -> list[dict[str, Any]]:
    """The JSON log lines (`--log-json`) of a `binlake sync` run."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def cli_sync(url: str, tables: str, warehouse: Path, master: str,
             conf: dict[str, str] | None = None) -> dict[str, Any]:
    """A fresh `binlake sync URL --once` process: wall seconds and its phases from its log
    (`sync_phases`); `wall_s` is launch to exit."""
    cmd = [sys.executable, "-m", "binlake.cli", "sync", url, "--tables", tables, "--once",
           "--warehouse", str(warehouse), "--master", master, "--log-json"]
    for k, v in (conf or {}).items():
        cmd += ["--conf", f"{k}={v}"]
    t_launch = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"binlake sync failed: {proc.stderr.strip()[-2000:]}")
    return {"wall_s": round(wall, 2), **sync_phases(proc.stderr, t_launch)}


def sync_phases(log_text: str, t_launch: float) -> dict[str, Any]:
    """A `binlake sync --log-json` run's phases, in seconds from `t_launch` (epoch): the
    session ready (and its start's own seconds), the snapshot applied, each batch's start
    and apply seconds."""
    out: dict[str, Any] = {"batches": []}
    for ev in _log_events(log_text):
        at = round(float(ev["ts"]) - t_launch, 2)
        if ev.get("msg") == "spark session ready":
            out["session_ready_s"] = at
            out["session_start_s"] = ev.get("start_s")
        elif ev.get("msg") == "snapshot applied":
            out["snapshot_s"] = at
        elif ev.get("msg") == "batch applied":
            apply_s = float(ev.get("apply_s", 0))
            out["batches"].append({"start_s": round(at - apply_s, 2), "apply_s": apply_s,
                                   "rows": ev.get("rows")})
    return out


class CpuMeter:
    """CPU seconds used from its creation on by the bench's Python process (the driver, with
    delta-rs's threads), its JVM and the primary (mariadbd), and their sum over the cores:
    no run using that much CPU can take less wall time on this machine."""

    def __init__(self, server: Any, spark: Any) -> None:
        self.jvm = jvm_pid(spark)
        self.primary = server.pid
        self.start = self._now()

    def _now(self) -> dict[str, float]:
        def cpu(pid: int | None) -> float:
            try:
                return proc_cpu_s(pid) if pid is not None else 0.0
            except OSError:
                return 0.0
        return {"driver": time.process_time(), "jvm": cpu(self.jvm), "primary": cpu(self.primary)}

    def used(self) -> dict[str, float]:
        now = self._now()
        out = {k: round(now[k] - self.start[k], 2) for k in now}
        out["floor_s"] = round(sum(out.values()) / (os.cpu_count() or 1), 2)
        return out


def merge_floors(spark: Any, warehouse: Path, before: Path, work: Path) -> dict[str, float]:
    """Plain append and one bare MERGE (upsert of every row) of the tables' rows now."""
    append_s = merge_s = 0.0
    for table in TABLES:
        src = spark.read.format("delta").load(str(warehouse / SCHEMA / table))
        t0 = time.perf_counter()
        src.write.format("delta").mode("append").save(str(work / "append" / table))
        append_s += time.perf_counter() - t0
        view = f"bench_src_{table}"
        src.createOrReplaceTempView(view)
        target = str(before / table).replace("`", "``")
        t0 = time.perf_counter()
        spark.sql(f"MERGE INTO delta.`{target}` t USING {view} s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        merge_s += time.perf_counter() - t0
        spark.catalog.dropTempView(view)
    return {"append_s": round(append_s, 2), "merge_s": round(merge_s, 2)}


def run(scale: int = 50_000, seed: int = 6, workdir: Path | None = None,
        echo: Callable[[str], None] = print, keep: bool = False,
        master: str = "local[2]", event_log: Path | None = None,
        cold: bool = True, write: bool = True,
        save: Callable[[dict[str, Any]], None] | None = None,
        max_bytes_per_trigger: int | None = None) -> dict[str, Any]:
    """The benchmark; `save` gets the document after each phase (a long run that fails
    late keeps what it measured). `write=False` skips the Arrow write floor (and the warm
    and cold runs that compare with it): it collects and re-sends whole tables through the
    driver's JVM heap, which at 1M rows does not fit the default 1 GiB."""
    from ..spark.session import build_session
    from ..spark.sync import SyncOptions, run_sync

    work = work_dir(workdir, "binlake-syncbench-")
    server = start_server(work)
    doc: dict[str, Any] = {"config": {"scale": scale, "seed": seed, "master": master,
                                      "max_bytes_per_trigger": max_bytes_per_trigger,
                                      "date": utc_stamp(), "load_avg": load_avg()}}
    saved = save or (lambda d: None)
    try:
        echo(f"loading the workload ({scale:,} row changes)")
        loaded = load(server, Workload(scale, seed))
        doc["workload"] = {"expected": loaded.expected.to_json(), "load_s": round(loaded.seconds, 1)}
        conf: dict[str, str] = {}
        jar = jdbc_jar()
        if jar:
            conf = jar_conf(jar)
        if event_log:
            event_log.mkdir(parents=True, exist_ok=True)
            conf.update({"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(event_log)})
        t0 = time.perf_counter()
        spark = build_session("binlake-sync-bench", master=master, conf=conf)
        doc["session_start_s"] = round(time.perf_counter() - t0, 1)
        # Delta's first use in a JVM costs seconds once: paid before anything is timed
        spark.range(1).write.format("delta").save(str(work / "warm"))
        wh = work / "wh"
        opts = SyncOptions(url=server.url, tables=f"{SCHEMA}.*", warehouse=wh, once=True,
                           master=master, max_bytes_per_trigger=max_bytes_per_trigger)
        echo("snapshot: binlake sync --once")
        cpu = CpuMeter(server, spark)
        snap_s, rep = _timed(lambda: run_sync(opts, spark))
        snap = {"rows": rep.snapshot_rows, "seconds": round(snap_s, 2),
                "rows_per_s": round(rep.snapshot_rows / snap_s),
                "snapshot_s": getattr(rep, "snapshot_s", None), "cpu_s": cpu.used()}
        echo(f"snapshot: {snap}")
        bounds = _bounds(server)
        if jar:
            echo("snapshot floor: spark.read.jdbc -> Delta")
            cpu = CpuMeter(server, spark)
            jdbc_s = jdbc_floor(spark, server, work / "jdbc", bounds)
            snap["jdbc_s"] = round(jdbc_s, 2)
            snap["jdbc_cpu_s"] = cpu.used()
            snap["x_jdbc"] = round(jdbc_s / snap_s, 2)  # >1: binlake faster
            # Once more: the first run pays the JIT of Spark's write path, which an earlier
            # Spark write (a snapshot through Spark) would have paid for it.
            cpu = CpuMeter(server, spark)
            again_s = jdbc_floor(spark, server, work / "jdbc-again", bounds)
            snap["jdbc_again_s"] = round(again_s, 2)
            snap["jdbc_again_cpu_s"] = cpu.used()
            snap["x_jdbc_again"] = round(again_s / snap_s, 2)
            echo(f"snapshot floor: jdbc {snap['jdbc_s']} s, x_jdbc {snap['x_jdbc']}; "
                 f"again {snap['jdbc_again_s']} s, x {snap['x_jdbc_again']}")
            saved({**doc, "snapshot": snap})
        else:
            snap["jdbc_s"] = None
            echo("snapshot floor skipped: no MariaDB Connector/J (run scripts/spark-jars.sh)")
        if write:
            arrow_dir = source_arrow(spark, server, wh, work / "arrow")
            echo("snapshot floor: Arrow in the driver -> createDataFrame -> Delta")
            write_s = write_floor(spark, arrow_dir, work / "write")
            snap["write_s"] = round(write_s, 2)
            snap["x_write"] = round(snap_s / write_s, 2)  # binlake's seconds per floor second
        else:
            snap["write_s"] = None
            echo("snapshot write floor skipped (--no-write-floor)")
        if cold:
            echo("snapshot, warm: binlake sync --once into a new warehouse, same session")
            warm_opts = replace(opts, warehouse=work / "wh-warm")
            warm_s, warm_rep = _timed(lambda: run_sync(warm_opts, spark))
            snap["warm"] = {"seconds": round(warm_s, 2),
                            "snapshot_s": getattr(warm_rep, "snapshot_s", None),
                            **({"x_jdbc": round(jdbc_s / warm_s, 2)} if jar else {}),
                            **({"x_write": round(warm_s / write_s, 2)} if write else {})}
            echo(f"snapshot, warm: {snap['warm']}")
            echo("snapshot, cold: binlake sync --once and the floors, each a fresh process")
            cold_doc: dict[str, Any] = {"binlake": cli_sync(server.url, f"{SCHEMA}.*",
                                                            work / "wh-cold", master, conf)}
            spec = {"master": master, "conf": conf, "port": server.port, "user": server.user,
                    "password": server.password, "bounds": bounds}
            if jar:
                cold_doc["jdbc"] = cold_floor("jdbc", {**spec, "out": str(work / "jdbc-cold")})
            if write:
                cold_doc["write"] = cold_floor("write", {**spec, "out": str(work / "write-cold"),
                                                         "arrow": str(arrow_dir)})
            b = cold_doc["binlake"]
            b_s = b.get("snapshot_s", b["wall_s"])  # launch -> snapshot applied
            if jar:
                cold_doc["x_jdbc"] = round(cold_doc["jdbc"]["done_s"] / b_s, 2)
            if write:
                cold_doc["x_write"] = round(b_s / cold_doc["write"]["done_s"], 2)
            snap["cold"] = cold_doc
            echo(f"snapshot, cold: {cold_doc}")
        snap["check"] = compare_tables(spark, server, wh)
        snap["load_avg"] = load_avg()
        snap["peak_rss_mb"] = {"driver_python": driver_peak_rss_mb(),
                               "jvm": jvm_peak_rss_mb(spark)}
        doc["snapshot"] = snap
        echo(f"snapshot: {snap}")
        saved(doc)

        before = work / "before"
        shutil.copytree(wh / SCHEMA, before)
        echo("second round of changes")
        round_s, changed = _timed(lambda: second_round(server))
        doc["second_round"] = {"changes": changed, "seconds": round(round_s, 1)}
        saved(doc)
        echo("catch-up: binlake sync --once")
        per_batch: list[dict[str, Any]] = []
        record = batch_recorder(spark, per_batch)

        def progress(info: dict[str, Any]) -> None:
            record(info)
            echo(f"catch-up batch: {per_batch[-1]}")

        load0 = load_avg()
        catch_s, rep = _timed(lambda: run_sync(opts, spark, on_progress=progress))
        load1 = load_avg()
        doc["catch_up"] = {"seconds": round(catch_s, 2), "per_batch": per_batch}
        saved(doc)
        echo("catch-up floors: plain append, bare MERGE")
        floors = merge_floors(spark, wh, before, work)
        n = sum(changed.values())
        times = sorted(b["apply_s"] for b in per_batch if b.get("apply_s") is not None)
        catch = {"changes": n, "records": rep.rows, "batches": rep.batches,
                 "seconds": round(catch_s, 2), "changes_per_s": round(n / catch_s), **floors,
                 "merge_changes_per_s": round(n / floors["merge_s"]) if floors["merge_s"] else None,
                 "x_merge": round(catch_s / floors["merge_s"], 2),
                 "x_append": round(catch_s / floors["append_s"], 2),
                 "batch_apply_s": {"min": times[0], "median": times[len(times) // 2],
                                   "max": times[-1]} if times else None,
                 "per_batch": per_batch, "load_avg": {"start": load0, "end": load1}}
        catch["check"] = compare_tables(spark, server, wh)
        doc["catch_up"] = catch
        echo(f"catch-up: {catch}")
        doc["peak_rss_mb"] = {"driver_python": driver_peak_rss_mb(), "jvm": jvm_peak_rss_mb(spark)}
        doc["equal"] = all(v["equal"] for ph in ("snapshot", "catch_up")
                           for v in doc[ph]["check"].values())
        return doc
    finally:
        stop_server(server, work, keep)


STARTUP_SCHEMA = "binlake_start"


STARTUP_COLUMNS = ("id", "v", "n", "extra", "extra2")


def _startup_rows(warehouse: Path) -> list[tuple[Any, ...]]:
    """The startup table's rows in Delta (read with delta-rs: no JVM in this process)."""
    from deltalake import DeltaTable

    t = DeltaTable(str(warehouse / STARTUP_SCHEMA / "t")).to_pyarrow_table()
    cols = [c for c in STARTUP_COLUMNS if c in t.column_names]
    return sorted(zip(*(t.column(c).to_pylist() for c in cols)))


def _has_row(warehouse: Path, key: int, column: str | None = None) -> bool:
    """Whether the startup table in Delta holds `key` (and has `column`)."""
    from deltalake import DeltaTable

    try:
        t = DeltaTable(str(warehouse / STARTUP_SCHEMA / "t")).to_pyarrow_table(columns=["id"])
        if column is not None and column not in DeltaTable(
                str(warehouse / STARTUP_SCHEMA / "t")).schema().to_arrow().names:
            return False
    except Exception:  # noqa: BLE001 - mid-commit or not there yet: ask again
        return False
    return key in t.column("id").to_pylist()


def warm_alter(server: Any, tables: str, warehouse: Path, master: str, key: int,
               logs: Path, timeout: float = 600.0) -> dict[str, Any]:
    """The ALTER case in a long-running `binlake sync` (not --once, trigger 0.5 s): once it
    streams (an insert, then an update and an insert, each waited for in Delta and in the
    sync's log) and is idle, commit `ALTER TABLE
    t ADD COLUMN extra2 INT` and one insert, and time commit -> the row visible in Delta
    (polled every 0.1 s) and the batches that carried them (their apply seconds)."""
    import signal

    s = STARTUP_SCHEMA
    cmd = [sys.executable, "-m", "binlake.cli", "sync", server.url, "--tables", tables,
           "--warehouse", str(warehouse), "--master", master, "--log-json",
           "--trigger-interval", "0.5"]
    t_launch = time.time()
    with open(logs, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, env=_env())

    def alive(t0: float, what: str) -> None:
        if proc.poll() is not None:
            raise RuntimeError(f"binlake sync exited: {logs.read_text()[-2000:]}")
        if time.time() - t0 > timeout:
            raise RuntimeError(f"{what} not seen after {timeout:.0f} s")
        time.sleep(0.1)

    def visible(k: int, column: str | None = None) -> float:
        t0 = time.time()
        while not _has_row(warehouse, k, column):
            alive(t0, f"row {k} in Delta")
        return round(time.time() - t0, 2)

    def batches(changes: int) -> list[dict[str, Any]]:
        """The batches logged once they hold `changes` in all (a batch's log line follows its
        last commit, auto compaction included: the sync is idle after it)."""
        t0 = time.time()
        while True:
            got = sync_phases(logs.read_text(), t_launch)["batches"]
            if sum(int(b["rows"] or 0) for b in got) >= changes:
                return list(got)
            alive(t0, f"{changes} changes applied")

    try:
        out: dict[str, Any] = {}
        server.sql(f"INSERT INTO {s}.t (id, v, n) VALUES ({key}, 'warm 1', 1)", database=None)
        out["first_visible_s"] = visible(key)
        batches(1)
        out["streaming_at_s"] = round(time.time() - t_launch, 2)
        server.sql(f"UPDATE {s}.t SET v = 'warm 2' WHERE id = {key}",
                   f"INSERT INTO {s}.t (id, v, n) VALUES ({key + 1}, 'warm 2', 2)", database=None)
        out["second_visible_s"] = visible(key + 1)
        before = batches(3)
        time.sleep(2.0)  # idle: no batch runs when the ALTER is committed
        t_commit = time.time()
        server.sql(f"ALTER TABLE {s}.t ADD COLUMN extra2 INT",
                   f"INSERT INTO {s}.t (id, v, n, extra2) VALUES ({key + 2}, 'warm alter', 3, 7)",
                   database=None)
        out["commit_s"] = round(time.time() - t_commit, 2)
        out["alter_visible_s"] = round(visible(key + 2, "extra2") + out["commit_s"], 2)
        after = batches(4)
        out["alter_batches"] = after[len(before):]
        out["batches_before"] = before
        out["session_ready_s"] = sync_phases(logs.read_text(), t_launch).get("session_ready_s")
        return out
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()


def run_startup(rows: int = 1000, workdir: Path | None = None,
                echo: Callable[[str], None] = print, keep: bool = False,
                master: str = "local[2]", warm: bool = True) -> dict[str, Any]:
    """Fixed costs of `binlake sync`, each a fresh `binlake sync --once` process on one small
    table: the first run (snapshot), a handful of pending changes, a batch with one ALTER;
    then (`warm`) one ALTER and an insert in a long-running sync (`warm_alter`)."""
    work = work_dir(workdir, "binlake-startbench-")
    server = start_server(work, options=None)
    doc: dict[str, Any] = {"config": {"mode": "startup", "rows": rows, "master": master,
                                      "date": utc_stamp()}}
    s = STARTUP_SCHEMA
    try:
        server.sql(f"CREATE DATABASE {s}",
                   f"CREATE TABLE {s}.t (id INT PRIMARY KEY, v VARCHAR(40), n INT)", database=None)
        values = ", ".join(f"({i}, 'row {i}', {i % 97})" for i in range(1, rows + 1))
        server.sql(f"INSERT INTO {s}.t VALUES {values}", database=None)
        wh = work / "wh"
        runs: dict[str, Any] = {}
        echo("startup: first binlake sync --once (snapshot)")
        runs["first"] = cli_sync(server.url, f"{s}.*", wh, master)
        echo(f"startup: {runs['first']}")
        server.sql(f"INSERT INTO {s}.t VALUES ({rows + 1}, 'new', 1), ({rows + 2}, 'new', 2)",
                   f"UPDATE {s}.t SET v = 'changed' WHERE id IN (1, 2)",
                   f"DELETE FROM {s}.t WHERE id = 3", database=None)
        echo("startup: binlake sync --once with 5 pending changes")
        runs["pending"] = cli_sync(server.url, f"{s}.*", wh, master)
        echo(f"startup: {runs['pending']}")
        server.sql(f"ALTER TABLE {s}.t ADD COLUMN extra INT",
                   f"INSERT INTO {s}.t VALUES ({rows + 3}, 'after alter', 3, 42)", database=None)
        echo("startup: binlake sync --once with one ALTER and one insert")
        runs["alter"] = cli_sync(server.url, f"{s}.*", wh, master)
        echo(f"startup: {runs['alter']}")
        if warm:
            echo("startup: a long-running binlake sync, streaming, then one ALTER and one insert")
            runs["warm_alter"] = warm_alter(server, f"{s}.*", wh, master, rows + 10,
                                            work / "warm-sync.log")
            echo(f"startup: {runs['warm_alter']}")
        cols = ", ".join(c for c in STARTUP_COLUMNS if warm or c != "extra2")
        want = sorted(server.sql(f"SELECT {cols} FROM {s}.t", database=None))
        got = _startup_rows(wh)
        doc.update(runs=runs, equal=[tuple(r) for r in want] == got)
        return doc
    finally:
        stop_server(server, work, keep)


def format_startup(doc: dict[str, Any]) -> str:
    lines = []
    for name, r in doc["runs"].items():
        if name == "warm_alter":
            batches = ", ".join(f"{b['rows']} rows applied in {b['apply_s']} s"
                                for b in r["alter_batches"]) or "no batch"
            lines.append(f"{name}: long-running sync streaming at {r['streaming_at_s']} s; "
                         f"ALTER + insert committed -> visible in Delta {r['alter_visible_s']} s; "
                         f"batches: {batches}")
            continue
        batches = ", ".join(f"batch at {b['start_s']} s applied in {b['apply_s']} s"
                            for b in r["batches"]) or "no batch"
        snap = f", snapshot applied at {r['snapshot_s']} s" if "snapshot_s" in r else ""
        lines.append(f"{name}: {r['wall_s']} s wall; session ready at "
                     f"{r.get('session_ready_s')} s (start {r.get('session_start_s')} s)"
                     f"{snap}; {batches}")
    lines.append(f"Delta == MariaDB at the end: {doc['equal']}")
    return "\n".join(lines)


def format_summary(doc: dict[str, Any]) -> str:
    s, c = doc["snapshot"], doc["catch_up"]
    jd = (f"spark.read.jdbc->Delta {s['jdbc_s']} s ({s['x_jdbc']}x: >1 means binlake faster"
          + (f"; run again {s['jdbc_again_s']} s, {s['x_jdbc_again']}x"
             if s.get("jdbc_again_s") else "") + ")"
          if s.get("jdbc_s") else "jdbc floor skipped")
    extra = [f"snapshot write floor (Arrow in the driver -> Delta): {s['write_s']} s "
             f"(binlake {s['x_write']}x its time)" if s.get("write_s") is not None
             else "snapshot write floor skipped"]
    for key, name in (("cpu_s", "binlake"), ("jdbc_cpu_s", "jdbc"),
                      ("jdbc_again_cpu_s", "jdbc again")):
        if s.get(key):
            u = s[key]
            extra.append(f"snapshot CPU, {name}: driver {u['driver']} s, JVM {u['jvm']} s, "
                         f"primary {u['primary']} s -> no faster than {u['floor_s']} s here")
    if "warm" in s:
        w = s["warm"]
        extra.append(f"snapshot, warm (second run, same session): {w['seconds']} s; "
                     f"x_jdbc {w.get('x_jdbc')}, {w.get('x_write')}x the write floor")
    if "cold" in s:
        cold = s["cold"]
        b = cold["binlake"]
        jdbc = cold.get("jdbc", {})
        extra.append(f"snapshot, cold (fresh processes, launch -> tables written): binlake "
                     f"{b.get('snapshot_s')} s (exit {b['wall_s']} s), jdbc "
                     f"{jdbc.get('done_s')} s, write floor "
                     f"{cold.get('write', {}).get('done_s')} s; x_jdbc {cold.get('x_jdbc')}, "
                     f"{cold.get('x_write')}x the write floor")
    return "\n".join([
        f"snapshot: {s['rows']:,} rows in {s['seconds']} s ({s['rows_per_s']:,} rows/s); {jd}",
        *extra,
        (f"catch-up: {c['changes']:,} changes in {c['seconds']} s ({c['changes_per_s']:,}/s, "
         f"{c['batches']} batch(es), apply per batch {c.get('batch_apply_s')}); bare MERGE "
         f"{c['merge_s']} s -> {c['x_merge']}x the MERGE; plain append {c['append_s']} s -> "
         f"{c['x_append']}x"),
        (f"peak RSS: driver {doc['peak_rss_mb']['driver_python']} MB, "
         f"JVM {doc['peak_rss_mb']['jvm']} MB; Delta == MariaDB after each phase: {doc['equal']}"),
    ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m binlake.bench.sync_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--event-log", help="write Spark's event log into this folder")
    ap.add_argument("--verbose", action="store_true", help="also log each table's apply and snapshot times")
    ap.add_argument("--max-bytes-per-trigger", type=int, default=None, metavar="BYTES",
                    help="binlake sync's admission limit per batch (default: sync's own)")
    ap.add_argument("--no-write-floor", action="store_true",
                    help="skip the Arrow write floor (the warm and cold runs then compare "
                         "with jdbc alone); it needs the largest table to fit the driver's "
                         "JVM heap")
    ap.add_argument("--no-cold", action="store_true",
                    help="skip the warm second snapshot and the fresh-process (cold) runs")
    ap.add_argument("--startup", action="store_true",
                    help="time the fixed costs of fresh `binlake sync --once` runs instead")
    ap.add_argument("--no-warm", action="store_true",
                    help="--startup: skip the ALTER in a long-running sync")
    ap.add_argument("--floor", choices=["jdbc", "write"], help=argparse.SUPPRESS)
    ap.add_argument("--floor-spec", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.floor:
        return _floor_child(args)
    import logging

    from ..cli.logs import setup

    setup()
    if args.verbose:
        for name in ("binlake.apply", "binlake.snapshot"):
            logging.getLogger(name).setLevel(logging.DEBUG)
    workdir = Path(args.workdir) if args.workdir else None
    echo = lambda m: print(m, file=sys.stderr)  # noqa: E731
    if args.startup:
        doc = run_startup(workdir=workdir, echo=echo, keep=args.keep, warm=not args.no_warm)
    else:
        def save(d: dict[str, Any]) -> None:
            if args.json_path:
                write_json(args.json_path, d)

        doc = run(args.scale, args.seed, workdir, echo=echo, keep=args.keep,
                  event_log=Path(args.event_log) if args.event_log else None,
                  cold=not args.no_cold, write=not args.no_write_floor, save=save,
                  max_bytes_per_trigger=args.max_bytes_per_trigger)
    if args.json_path:  # first: a summary that fails to format loses nothing
        write_json(args.json_path, doc)
    print(format_startup(doc) if args.startup else format_summary(doc))
    return 0 if doc["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
