"""`binlake bench --verify`: `binlake verify` against the comparison a user would write.

One throwaway MariaDB, the seeded bench workload (narrow, wide, large), `binlake sync --once`
into Delta, one local Spark session, one untimed pass of both (the JVM's first jobs of each
kind pay for code generation; `--no-warmup` times them too), and in the same run, each
repeat in turn (the order alternating between repeats):

* verify: `binlake.verify.verify` of the three tables (chunked checksums: the server hashes
  each chunk in SQL, Spark hashes the Delta table; only checksums cross the wire);
* full compare: every row pulled into Spark with `spark.read.jdbc` (MariaDB Connector/J, 4
  partitions per table on `id`; a SELECT of every column, BIT and YEAR as numbers, FLOAT as DOUBLE, TIME and
  DECIMAL(65) as text, which JDBC cannot carry), full-outer-joined with the Delta table on
  `id`, and the rows whose columns differ (null-safe, after casting the JDBC column to the
  Delta column's type) counted: 0 when the tables are equal.

For each: wall seconds, and the primary's load: mariadbd's CPU seconds (utime + stime from
/proc/<pid>/stat) and the deltas of Rows_read, Rows_sent, Innodb_data_read (bytes
read from disk), Innodb_buffer_pool_read_requests (pages read in memory) and Bytes_sent. `x_full` = full compare seconds / verify
seconds (above 1: verify faster; the goal is 3).

Run `python -m binlake.bench.verify_bench --scale 100000 --json out.json` (or
`binlake bench --verify`). Connector/J comes from `jdbc_jar()` (scripts/spark-jars.sh
fetches it); without it the run stops and says so.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .sync_bench import jdbc_jar
from .workload import SCHEMA, TABLES, Workload, load

STATUS = ("Rows_read", "Rows_sent", "Innodb_data_read", "Innodb_buffer_pool_read_requests",
          "Bytes_sent", "Com_select")
"""MariaDB's counters (it has Rows_read where MySQL has Innodb_rows_read)."""


def primary_load(server: Any) -> dict[str, float]:
    """mariadbd's CPU seconds so far and the server's read counters (SHOW GLOBAL STATUS)."""
    pid = int(server.pid_file.read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {"cpu_s": (int(fields[11]) + int(fields[12])) / ticks}
    names = ", ".join(f"'{n}'" for n in STATUS)
    for name, value in server.sql(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})",
                                  database=None):
        out[str(name)] = float(value)
    return out


def load_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    d = {k: after[k] - before[k] for k in after}
    return {"cpu_s": round(d["cpu_s"], 2), "rows_read": int(d["Rows_read"]),
            "rows_sent": int(d["Rows_sent"]),
            "data_read_mb": round(d["Innodb_data_read"] / 1e6, 1),
            "buffer_pool_reads": int(d["Innodb_buffer_pool_read_requests"]),
            "sent_mb": round(d["Bytes_sent"] / 1e6, 1), "selects": int(d["Com_select"])}


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

    url = f"jdbc:mysql://127.0.0.1:{server.port}/{SCHEMA}?permitMysqlScheme"
    props = {"user": server.user, "password": server.password,
             "driver": "org.mariadb.jdbc.Driver", "fetchsize": "10000",
             "sessionInitStatement": "SET time_zone = '+00:00'"}
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


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def run(scale: int = 100_000, seed: int = 6, repeat: int = 2, chunk_size: int = 10_000,
        workdir: Path | None = None, echo: Callable[[str], None] = print, keep: bool = False,
        master: str = "local[2]", warmup: bool = True) -> dict[str, Any]:
    from ..devtools.devserver import DevServer
    from ..spark.session import build_session
    from ..spark.sync import SyncOptions, run_sync
    from ..verify import verify

    jar = jdbc_jar()
    if jar is None:
        raise SystemExit("no MariaDB Connector/J in the jar cache: run scripts/spark-jars.sh")
    work = Path(workdir or tempfile.mkdtemp(prefix="binlake-verifybench-"))
    work.mkdir(parents=True, exist_ok=True)
    server = DevServer(work / "server", extra_options={
        "innodb_buffer_pool_size": "256M", "innodb_flush_log_at_trx_commit": "0"}).start()
    doc: dict[str, Any] = {"config": {"scale": scale, "seed": seed, "master": master,
                                      "chunk_size": chunk_size, "repeat": repeat, "warmup": warmup,
                                      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}}
    try:
        echo(f"loading the workload ({scale:,} row changes)")
        loaded = load(server, Workload(scale, seed))
        doc["workload"] = {"load_s": round(loaded.seconds, 1), "rows": {
            t: int(server.sql(f"SELECT COUNT(*) FROM `{t}`", database=SCHEMA)[0][0])
            for t in TABLES}}
        spark = build_session("binlake-verify-bench", master=master, conf={
            "spark.driver.extraClassPath": str(jar), "spark.executor.extraClassPath": str(jar)})
        spark.range(1).write.format("delta").save(str(work / "warm"))
        wh = work / "wh"
        echo("binlake sync --once")
        sync_s, _ = _timed(lambda: run_sync(SyncOptions(
            url=server.url, tables=f"{SCHEMA}.*", warehouse=wh, once=True, master=master), spark))
        doc["sync_s"] = round(sync_s, 1)
        if warmup:  # the JVM's first jobs of each kind pay for code generation: not timed
            echo("warm-up: verify and full compare once, not timed")
            doc["warmup_s"] = {
                "verify": round(_timed(lambda: verify(server.url, f"{SCHEMA}.*", wh,
                                                      chunk_size=chunk_size, spark=spark,
                                                      wait=0))[0], 2),
                "full": round(_timed(lambda: full_compare(spark, server, wh))[0], 2)}
        runs = []
        for i in range(repeat):
            entry: dict[str, Any] = {}
            # alternate which goes first: the first Spark jobs of a JVM pay for code generation
            for name in ("verify", "full") if i % 2 == 0 else ("full", "verify"):
                echo(f"repeat {i + 1}: {name}")
                before = primary_load(server)
                if name == "verify":
                    secs, rep = _timed(lambda: verify(
                        server.url, f"{SCHEMA}.*", wh, chunk_size=chunk_size, spark=spark,
                        wait=0))
                    result: Any = {"equal": rep.equal, "chunks": sum(t.chunks for t in rep.tables),
                                   "tables_s": {t.table: round(t.seconds, 2) for t in rep.tables}}
                else:
                    secs, differing = _timed(lambda: full_compare(spark, server, wh))
                    result = {"differing_rows": differing}
                entry[name] = {"seconds": round(secs, 2), **result,
                               "primary": load_delta(before, primary_load(server))}
                echo(f"  {entry[name]}")
            entry["x_full"] = round(entry["full"]["seconds"] / entry["verify"]["seconds"], 2)
            runs.append(entry)
        doc["runs"] = runs
        ratios = sorted(r["x_full"] for r in runs)
        doc["x_full_median"] = ratios[len(ratios) // 2] if len(ratios) % 2 else \
            round((ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2, 2)
        doc["equal"] = all(r["verify"]["equal"] for r in runs) and all(
            n == 0 for r in runs for n in r["full"]["differing_rows"].values())
        return doc
    finally:
        server.stop()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def format_summary(doc: dict[str, Any]) -> str:
    lines = [f"scale {doc['config']['scale']:,}: rows {doc['workload']['rows']}, "
             f"sync --once {doc['sync_s']} s"]
    for i, r in enumerate(doc["runs"], 1):
        v, f = r["verify"], r["full"]
        lines.append(
            f"repeat {i}: verify {v['seconds']} s (equal: {v['equal']}, {v['chunks']} chunks), "
            f"full compare {f['seconds']} s -> verify {r['x_full']}x faster; primary CPU "
            f"{v['primary']['cpu_s']} s vs {f['primary']['cpu_s']} s, rows read "
            f"{v['primary']['rows_read']:,} vs {f['primary']['rows_read']:,}, sent "
            f"{v['primary']['sent_mb']} MB vs {f['primary']['sent_mb']} MB")
    lines.append(f"median: verify {doc['x_full_median']}x faster than the full compare (goal 3x); "
                 f"verify equal and the full compare found 0 differing rows: {doc['equal']}")
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
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="time the JVM's first (code-generating) runs too")
    args = ap.parse_args(argv)
    from ..cli.logs import setup

    setup()
    doc = run(args.scale, args.seed, args.repeat, args.chunk_size,
              Path(args.workdir) if args.workdir else None,
              echo=lambda m: print(m, file=sys.stderr), keep=args.keep, warmup=args.warmup)
    print(format_summary(doc))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return 0 if doc["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
