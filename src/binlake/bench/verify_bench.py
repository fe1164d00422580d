"""`binlake bench --verify`: `binlake verify` against the comparison a user would write.

One throwaway MariaDB, the seeded bench workload (narrow, wide, large), `binlake sync --once`
into Delta, one local Spark session, one untimed pass of each measurement (the JVM's first
jobs of each kind pay for code generation; `--no-warmup` times them too), and in the same
run, each repeat in turn (the order reversed every other repeat):

* source: the floor of verify's source side, the primary's chunk checksum SQL alone (no
  Spark): the chunk plan (boundaries from the Delta tables' keys, as verify plans on a
  local master) and every chunk's checksum read, as verify reads them, on its default two
  connections;
* delta: the floor of verify's Delta side as it runs on a local master: the driver reading
  every table with Arrow and computing every chunk's checksum (the chunks planned once,
  untimed);
* delta_spark: the same checksums by one Spark job (`--engine spark`, a cluster's way);
* scan: the floor of any comparison that reads the Delta tables: one Spark job reading
  every column of every row (`hash(*columns)` summed), which the full compare pays too;
* full: every row pulled into Spark with `spark.read.jdbc` (MariaDB Connector/J, 4
  partitions per table on `id`; a SELECT of every column, BIT and YEAR as numbers, FLOAT as
  DOUBLE, TIME and DECIMAL(65) as text, which JDBC cannot carry), full-outer-joined with the
  Delta table on `id`, and the rows whose columns differ (null-safe, after casting the JDBC
  column to the Delta column's type) counted: 0 when the tables are equal;
* verify: `binlake.verify.verify` of the three tables end to end.

For each: wall seconds, the CPU seconds of the JVM and of this (driver) process, and the
primary's load: mariadbd's CPU seconds (utime + stime from /proc/<pid>/stat) and the deltas
of Rows_read, Rows_sent, Innodb_data_read (bytes read from disk),
Innodb_buffer_pool_read_requests (pages read in memory) and Bytes_sent. `x_full` = full
seconds / verify seconds (above 1: verify faster; the goal is 3). The ceilings say what the
design can reach in this run: `x_ceiling_overlap` = full / max(source, delta) (both sides
fully overlapped, as verify runs them), `x_ceiling_cores` = full / max(source, delta, the
CPU seconds of both sides over the cores), `x_ceiling_serial` = full / (source + delta);
`verify_over_floor_s` = verify - max(source, delta) is verify's own cost beyond its floors.

Run `python -m binlake.bench.verify_bench --scale 100000 --json out.json` (or
`binlake bench --verify`). Connector/J comes from `jdbc_jar()` (scripts/spark-jars.sh
fetches it); without it the run stops and says so. `--workdir W --keep` keeps the loaded
server and the synced warehouse; `--reuse` then starts that server again instead of loading
and syncing (the same scale and seed).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..replica.url import ServerURL
from .common import (jar_conf, jdbc_jar, jdbc_source, load_avg, proc_cpu_s, start_server,
                     stop_server, utc_stamp, work_dir, write_json)
from .workload import SCHEMA, TABLES, Workload, load

STATUS = ("Rows_read", "Rows_sent", "Innodb_data_read", "Innodb_buffer_pool_read_requests",
          "Bytes_sent", "Com_select", "Innodb_rows_read")
"""MariaDB's counters (MariaDB 10.11 has Rows_read; MySQL and newer MariaDB Innodb_rows_read)."""

CORES = os.cpu_count() or 1


def primary_load(server: Any) -> dict[str, float]:
    """mariadbd's CPU seconds so far and the server's read counters (SHOW GLOBAL STATUS)."""
    out: dict[str, float] = {"cpu_s": proc_cpu_s(int(server.pid_file.read_text().split()[0]))}
    names = ", ".join(f"'{n}'" for n in STATUS)
    for name, value in server.sql(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})",
                                  database=None):
        out[str(name)] = float(value)
    return out


def load_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    d = {k: after[k] - before.get(k, 0.0) for k in after}
    out = {"cpu_s": round(d["cpu_s"], 2), "rows_read": int(d["Rows_read"]),
           "rows_sent": int(d["Rows_sent"]),
           "data_read_mb": round(d["Innodb_data_read"] / 1e6, 1),
           "buffer_pool_reads": int(d["Innodb_buffer_pool_read_requests"]),
           "sent_mb": round(d["Bytes_sent"] / 1e6, 1), "selects": int(d["Com_select"])}
    if "Innodb_rows_read" in d:
        out["innodb_rows_read"] = int(d["Innodb_rows_read"])
    return out


class Meter:
    """CPU and load around one measurement: the primary's (mariadbd and its counters), the
    JVM's and this driver process's CPU seconds."""

    def __init__(self, server: Any, spark: Any) -> None:
        self.server = server
        self.jvm = int(spark._jvm.java.lang.ProcessHandle.current().pid())

    def _now(self) -> tuple[dict[str, float], float, float]:
        t = os.times()
        return primary_load(self.server), proc_cpu_s(self.jvm), t.user + t.system

    def measure(self, fn: Callable[[], Any]) -> tuple[dict[str, Any], Any]:
        p0, j0, d0 = self._now()
        t0 = time.perf_counter()
        result = fn()
        secs = time.perf_counter() - t0
        p1, j1, d1 = self._now()
        return {"seconds": round(secs, 2), "jvm_cpu_s": round(j1 - j0, 2),
                "driver_cpu_s": round(d1 - d0, 2), "primary": load_delta(p0, p1)}, result


def select_list(server: Any, table: str, schema: str = SCHEMA) -> str:
    """The table's columns as a user would SELECT them for Spark: the types Connector/J and
    Spark cannot carry as they are read as numbers (BIT, YEAR; FLOAT as DOUBLE, not
    printed with 6 digits) or text (TIME, DECIMAL wider
    than Spark's 38 digits)."""
    cols = server.sql("SELECT column_name, data_type, numeric_precision FROM "
                      f"information_schema.columns WHERE table_schema = '{schema}' AND "
                      f"table_name = '{table}' ORDER BY ordinal_position", database=None)
    out = []
    for name, dtype, precision in cols:
        c = f"`{name}`"
        if dtype in ("bit", "year"):
            c = f"{c} + 0 AS {c}"
        elif dtype == "float":  # the text protocol prints FLOAT with 6 digits
            c = f"{c} + 0e0 AS {c}"
        elif dtype == "time" or (dtype == "decimal" and int(precision) > 38):
            c = f"CAST({c} AS CHAR) AS {c}"
        out.append(c)
    return ", ".join(out)


def full_compare(spark: Any, server: Any, warehouse: Path) -> dict[str, int]:
    """What a user writes without verify: each table read whole over JDBC, joined with its
    Delta table on the key, the differing rows counted. Returns differing rows per table."""
    from pyspark.sql import functions as F

    url, props = jdbc_source(server, sessionInitStatement="SET time_zone = '+00:00'")
    out: dict[str, int] = {}
    # CHAR and ENUM as read, not padded to their length
    spark.conf.set("spark.sql.legacy.charVarcharAsString", "true")
    try:
        for table in TABLES:
            lo, hi = server.sql(f"SELECT MIN(id), MAX(id) FROM `{table}`", database=SCHEMA)[0]
            query = f"(SELECT {select_list(server, table)} FROM `{table}`) t"
            src = spark.read.jdbc(url, query, column="id", lowerBound=int(lo or 0),
                                  upperBound=int(hi or 0) + 1, numPartitions=4,
                                  properties=props)
            lake = spark.read.format("delta").load(str(warehouse / SCHEMA / table))
            cols = [c for c in src.columns if c != "id"]
            types = {f.name: f.dataType for f in lake.schema}
            s = src.select("id", *[F.col(c).cast(types[c]).alias(f"s_{c}") for c in cols],
                           F.lit(1).alias("_is"))
            d = lake.select("id", *[F.col(c).alias(f"d_{c}") for c in cols],
                            F.lit(1).alias("_in"))
            differs = F.col("_is").isNull() | F.col("_in").isNull()
            for c in cols:
                differs = differs | ~F.col(f"s_{c}").eqNullSafe(F.col(f"d_{c}"))
            out[table] = s.join(d, "id", "full_outer").where(differs).count()
    finally:
        spark.conf.unset("spark.sql.legacy.charVarcharAsString")
    return out


def source_floor(url: str, chunk_size: int, warehouse: Path) -> dict[str, Any]:
    """verify's source side alone: plan the chunks, then read every chunk's checksum on
    verify's default connections, as verify does on a local master (boundaries from the
    Delta tables' keys). Seconds of each step."""
    from ..verify.run import DEFAULT_CONNECTIONS, lake_bounds, plan_tables, source_sums
    from ..verify.source import Source

    src = Source(ServerURL.parse(url))
    try:
        t0 = time.perf_counter()
        plans = plan_tables(src, src.select_tables(f"{SCHEMA}.*"), chunk_size,
                            DEFAULT_CONNECTIONS, lake_bounds(str(warehouse), chunk_size))
        t1 = time.perf_counter()
        sums = source_sums(src, plans, connections=DEFAULT_CONNECTIONS)
        rows = sum(c.rows for got, _ in sums for c in got.values())
        t2 = time.perf_counter()
    finally:
        src.close()
    return {"plan_s": round(t1 - t0, 3), "checksums_s": round(t2 - t1, 2), "rows": rows,
            "chunks": sum(len(p.chunks) for p in plans)}


def plans_of(url: str, chunk_size: int, warehouse: Path) -> list[Any]:
    """The chunk plans verify would make now (for the Delta side's floor)."""
    from ..verify.run import lake_bounds, plan_tables
    from ..verify.source import Source

    src = Source(ServerURL.parse(url))
    try:
        return plan_tables(src, src.select_tables(f"{SCHEMA}.*"), chunk_size, 1,
                           lake_bounds(str(warehouse), chunk_size))
    finally:
        src.close()


def delta_floor(spark: Any, warehouse: Path, plans: list[Any]) -> dict[str, Any]:
    """verify's Delta side alone, as it runs on a local master: the driver reads every
    table with Arrow and computes every chunk's checksum (`verify.lake`)."""
    from ..verify.lake import DriverLake, lake_table_path

    sums = [DriverLake(lake_table_path(str(warehouse), p), p).checksums() for p in plans]
    return {"rows": sum(n for s in sums for n, _ in s.values())}


def delta_spark_floor(spark: Any, warehouse: Path, plans: list[Any]) -> dict[str, Any]:
    """verify's Delta side with `--engine spark`: one Spark job computing every chunk's
    checksum."""
    from ..spark.verify import checksums, lake_table

    sums = checksums([lake_table(spark, str(warehouse), p) for p in plans])
    return {"rows": sum(n for s in sums for n, _ in s.values())}


def delta_scan(spark: Any, warehouse: Path) -> dict[str, Any]:
    """Reading every source column of every Delta row, in one job: what any comparison that
    reads the Delta tables pays (the full compare as well as verify's Delta side)."""
    from functools import reduce

    from pyspark.sql import functions as F

    frames = []
    for i, table in enumerate(TABLES):
        df = spark.read.format("delta").load(str(warehouse / SCHEMA / table))
        cols = [F.col(c) for c in df.columns if not c.startswith("_binlake_")]
        frames.append(df.select(F.lit(i).alias("_t"), F.hash(*cols).cast("bigint").alias("_h")))
    rows = (reduce(lambda x, y: x.unionAll(y), frames).groupBy("_t")
            .agg(F.count(F.lit(1)).alias("n"), F.sum("_h")).collect())
    return {"rows": sum(int(r["n"]) for r in rows)}


MEASURES = ("source", "delta", "delta_spark", "scan", "full", "verify")


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else round((xs[n // 2 - 1] + xs[n // 2]) / 2, 2)


def ceilings(entry: dict[str, Any], cores: int = CORES) -> dict[str, float]:
    """What the design can reach in one repeat: the full compare's seconds over verify's
    floors (see the module notes), and verify's seconds beyond them."""
    full, src, dlt = (entry[k]["seconds"] for k in ("full", "source", "delta"))
    cpu = (entry["source"]["primary"]["cpu_s"] + entry["source"]["driver_cpu_s"]
           + entry["delta"]["jvm_cpu_s"] + entry["delta"]["driver_cpu_s"])
    floor = max(src, dlt)
    return {"x_ceiling_overlap": round(full / floor, 2) if floor else 0.0,
            "x_ceiling_cores": round(full / max(floor, cpu / cores), 2) if floor else 0.0,
            "x_ceiling_serial": round(full / (src + dlt), 2) if src + dlt else 0.0,
            "floor_cpu_s": round(cpu, 2),
            "verify_over_floor_s": round(entry["verify"]["seconds"] - floor, 2)}


def _prepare(work: Path, scale: int, seed: int, reuse: bool) -> bool:
    """Whether `work` already holds this workload loaded and synced (with --reuse)."""
    mark = work / "workload.json"
    want = {"scale": scale, "seed": seed}
    if reuse and mark.exists() and (work / "wh").is_dir():
        if json.loads(mark.read_text()) == want:
            return True
        raise SystemExit(f"--reuse: {work} holds {mark.read_text().strip()}, not {want}")
    if reuse:
        raise SystemExit(f"--reuse: {work} holds no loaded and synced workload "
                         f"(run once with --workdir {work} --keep)")
    return False


def run(scale: int = 100_000, seed: int = 6, repeat: int = 2, chunk_size: int = 10_000,
        workdir: Path | None = None, echo: Callable[[str], None] = print, keep: bool = False,
        master: str = "local[2]", warmup: bool = True, reuse: bool = False,
        measures: tuple[str, ...] = MEASURES) -> dict[str, Any]:
    from ..spark.session import build_session
    from ..spark.sync import SyncOptions, run_sync
    from ..verify import verify

    jar = jdbc_jar()
    if jar is None:
        raise SystemExit("no MariaDB Connector/J in the jar cache: run scripts/spark-jars.sh")
    work = work_dir(workdir, "binlake-verifybench-")
    ready = _prepare(work, scale, seed, reuse)
    server = start_server(work)
    doc: dict[str, Any] = {"config": {
        "scale": scale, "seed": seed, "master": master, "cores": CORES,
        "chunk_size": chunk_size, "repeat": repeat, "warmup": warmup, "reused": ready,
        "measures": list(measures), "date": utc_stamp(), "load_avg": load_avg(None)}}
    wh = work / "wh"
    try:
        spark = build_session("binlake-verify-bench", master=master, conf=jar_conf(jar))
        if not ready:
            echo(f"loading the workload ({scale:,} row changes)")
            loaded = load(server, Workload(scale, seed))
            doc["load_s"] = round(loaded.seconds, 1)
            spark.range(1).write.format("delta").mode("overwrite").save(str(work / "warm"))
            echo("binlake sync --once")
            t0 = time.perf_counter()
            run_sync(SyncOptions(url=server.url, tables=f"{SCHEMA}.*", warehouse=wh, once=True,
                                 master=master), spark)
            doc["sync_s"] = round(time.perf_counter() - t0, 1)
            (work / "workload.json").write_text(json.dumps({"scale": scale, "seed": seed}))
        doc["workload"] = {"rows": {
            t: int(server.sql(f"SELECT COUNT(*) FROM `{t}`", database=SCHEMA)[0][0])
            for t in TABLES}}
        plans = plans_of(server.url, chunk_size, wh)
        steps: dict[str, Callable[[], Any]] = {
            "source": lambda: source_floor(server.url, chunk_size, wh),
            "delta": lambda: delta_floor(spark, wh, plans),
            "delta_spark": lambda: delta_spark_floor(spark, wh, plans),
            "scan": lambda: delta_scan(spark, wh),
            "full": lambda: {"differing_rows": full_compare(spark, server, wh)},
            "verify": lambda: _verify_result(verify(server.url, f"{SCHEMA}.*", wh,
                                                    chunk_size=chunk_size, spark=spark,
                                                    wait=0))}
        meter = Meter(server, spark)
        if warmup:  # the JVM's first jobs of each kind pay for code generation: not timed
            echo("warm-up: each measurement once, not timed")
            doc["warmup_s"] = {n: meter.measure(steps[n])[0]["seconds"] for n in measures}
        runs = []
        for i in range(repeat):
            entry: dict[str, Any] = {"load_avg": load_avg()[0]}
            for name in measures if i % 2 == 0 else tuple(reversed(measures)):
                echo(f"repeat {i + 1}: {name}")
                got, result = meter.measure(steps[name])
                entry[name] = {**got, **result}
                echo(f"  {entry[name]}")
            if "full" in entry and "verify" in entry:
                entry["x_full"] = round(entry["full"]["seconds"] / entry["verify"]["seconds"], 2)
            if all(k in entry for k in ("full", "source", "delta", "verify")):
                entry.update(ceilings(entry))
            runs.append(entry)
        doc["runs"] = runs
        doc["medians"] = {k: _median([r[k] for r in runs]) for k in (
            "x_full", "x_ceiling_overlap", "x_ceiling_cores", "x_ceiling_serial",
            "verify_over_floor_s") if runs and all(k in r for r in runs)}
        doc["medians"].update({f"{n}_s": _median([r[n]["seconds"] for r in runs])
                               for n in measures if runs})
        doc["x_full_median"] = doc["medians"].get("x_full")
        doc["equal"] = all(r["verify"]["equal"] for r in runs if "verify" in r) and all(
            n == 0 for r in runs if "full" in r for n in r["full"]["differing_rows"].values())
        doc["load_avg_end"] = load_avg(None)
        return doc
    finally:
        stop_server(server, work, keep)


def _verify_result(rep: Any) -> dict[str, Any]:
    return {"equal": rep.equal, "chunks": sum(t.chunks for t in rep.tables),
            "tables_s": {t.table: round(t.seconds, 2) for t in rep.tables}}


def format_summary(doc: dict[str, Any]) -> str:
    rows = doc["workload"]["rows"]
    lines = [f"scale {doc['config']['scale']:,}: rows {rows}"
             + (f", sync --once {doc['sync_s']} s" if "sync_s" in doc else " (reused)")
             + f"; load average {doc['config']['load_avg'][0]:.1f} -> "
               f"{doc['load_avg_end'][0]:.1f}; {doc['config']['cores']} cores"]
    for i, r in enumerate(doc["runs"], 1):
        parts = []
        for n in MEASURES:
            if n in r:
                m = r[n]
                parts.append(f"{n} {m['seconds']} s (JVM {m['jvm_cpu_s']}, primary "
                             f"{m['primary']['cpu_s']} CPU s, {m['primary']['rows_read']:,} "
                             f"rows read, {m['primary']['sent_mb']} MB sent)")
        lines.append(f"repeat {i} (load {r['load_avg']}): " + "; ".join(parts))
        if "x_ceiling_overlap" in r:
            lines.append(f"  x_full {r['x_full']}; ceilings: overlap {r['x_ceiling_overlap']}, "
                         f"{doc['config']['cores']} cores {r['x_ceiling_cores']} (floors "
                         f"{r['floor_cpu_s']} CPU s), serial {r['x_ceiling_serial']}; verify "
                         f"{r['verify_over_floor_s']} s over max(source, delta)")
    med = doc["medians"]
    if "x_full" in med:
        lines.append(f"median: verify {med['x_full']}x faster than the full compare (goal 3x)"
                     + (f"; ceiling {med['x_ceiling_overlap']}x overlapped, "
                        f"{med['x_ceiling_cores']}x on these cores"
                        if "x_ceiling_overlap" in med else "")
                     + f"; verify equal and the full compare found 0 differing rows: "
                       f"{doc['equal']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m binlake.bench.verify_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--chunk-size", type=int, default=10_000)
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="start the server kept in --workdir again instead of loading and "
                         "syncing (implies --keep)")
    ap.add_argument("--only", default=",".join(MEASURES),
                    help=f"measurements to run, comma-separated (default: all of "
                         f"{','.join(MEASURES)})")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="time the JVM's first (code-generating) runs too")
    args = ap.parse_args(argv)
    measures = tuple(m.strip() for m in args.only.split(",") if m.strip())
    bad = [m for m in measures if m not in MEASURES]
    if bad or not measures:
        ap.error(f"--only: unknown {', '.join(bad) or 'nothing'}; choose from "
                 f"{','.join(MEASURES)}")
    if args.reuse and not args.workdir:
        ap.error("--reuse needs --workdir (a directory kept by an earlier --keep run)")
    from ..cli.logs import setup

    setup()
    doc = run(args.scale, args.seed, args.repeat, args.chunk_size,
              Path(args.workdir) if args.workdir else None,
              echo=lambda m: print(m, file=sys.stderr), keep=args.keep or args.reuse,
              warmup=args.warmup, reuse=args.reuse, measures=measures)
    print(format_summary(doc))
    if args.json_path:
        write_json(args.json_path, doc)
    return 0 if doc["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
