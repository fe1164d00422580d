"""`binlake bench --sync`: the pipeline (`binlake sync`) against the Spark floors it stands on.

One throwaway MariaDB, the seeded bench workload (narrow, wide, large), one local Spark
session, and in the same run:

* snapshot: `binlake sync --once` on the loaded tables (snapshot plus an empty catch-up),
  against `spark.read.jdbc` (MariaDB Connector/J, 4 partitions per table) -> Delta;
* catch-up: a second round of changes on the existing rows (every row updated, some deleted,
  some inserted, in multi-row transactions), then `binlake sync --once`, against the two
  floors of any Spark apply: a plain Delta append, and one bare Delta MERGE (upsert of every
  row) of the rows the tables hold afterwards into a copy of the tables before the round;
* peak RSS of the Python driver and of the JVM;
* after each phase, every Delta table compared with its MariaDB table row by row.

Run `python -m binlake.bench.sync_bench --scale 50000 --json out.json` (or
`binlake bench --sync`). Connector/J comes from `jdbc_jar()` (scripts/spark-jars.sh fetches
it); without it the jdbc floor is skipped and says so.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .workload import SCHEMA, TABLES, Workload, load

JDBC_VERSION = "3.5.1"
JDBC_COORDINATE = f"org.mariadb.jdbc:mariadb-java-client:{JDBC_VERSION}"


def jdbc_jar() -> Path | None:
    """MariaDB Connector/J in the jar cache (scripts/spark-jars.sh puts it there)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    jar = cache / "binlake" / "jars" / "jdbc" / f"mariadb-java-client-{JDBC_VERSION}.jar"
    return jar if jar.exists() else None


def _jvm_peak_rss_mb(spark: Any) -> float | None:
    try:
        pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except Exception:  # noqa: BLE001 - reported as unknown
        return None
    return None


def _driver_peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _columns(server: Any, table: str) -> list[str]:
    rows = server.sql("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                      f"'{SCHEMA}' AND table_name = '{table}' ORDER BY ordinal_position",
                      database=None)
    return [r[0] for r in rows]


def _types(server: Any, table: str) -> list[tuple[str, int]]:
    rows = server.sql("SELECT data_type, COALESCE(datetime_precision, 0) FROM "
                      f"information_schema.columns WHERE table_schema = '{SCHEMA}' AND "
                      f"table_name = '{table}' ORDER BY ordinal_position", database=None)
    return [(str(r[0]).lower(), int(r[1])) for r in rows]


def _time_text(v: Any, scale: int) -> str:
    us = v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
    sign, us = ("-", -us) if us < 0 else ("", us)
    h, rest = divmod(us, 3_600_000_000)
    m, rest = divmod(rest, 60_000_000)
    sec, frac = divmod(rest, 1_000_000)
    return f"{sign}{h:02d}:{m:02d}:{sec:02d}" + (f".{frac:06d}"[:scale + 1] if scale else "")


def _normalizer(kind: str, scale: int) -> Callable[[Any], Any]:
    """One form for a value read through PyMySQL and through Spark where the two differ only
    in representation (BIT as bytes or int, FLOAT's printed digits, TIME as timedelta or text,
    wide integers and DECIMAL(65) as Decimal, int or text)."""
    from ..spark.compare import comparable

    def norm(v: Any) -> Any:
        if v is None:
            return None
        if kind == "bit":
            return ("i", int.from_bytes(v, "big") if isinstance(v, (bytes, bytearray)) else int(v))
        if kind == "float":
            return ("f", f"{float(v):.6g}")
        if kind == "time":
            return ("s", v if isinstance(v, str) else _time_text(v, scale))
        if kind in ("bigint", "decimal"):
            return ("n", str(v))
        return comparable(v)

    return norm


def compare_tables(spark: Any, server: Any, warehouse: Path) -> dict[str, Any]:
    """Every Delta table against its MariaDB table, row by row by primary key (values made
    comparable); a mismatch names the first differing row's columns."""
    out: dict[str, Any] = {}
    for table in TABLES:
        names = _columns(server, table)
        norms = [_normalizer(k, sc) for k, sc in _types(server, table)]
        conn = server.connect(database=SCHEMA)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT * FROM `{table}`")
                want = {r[0]: tuple(f(v) for f, v in zip(norms, r)) for r in cur.fetchall()}
        finally:
            conn.close()
        df = spark.read.format("delta").load(str(warehouse / SCHEMA / table))
        got: dict[Any, tuple[Any, ...]] = {}
        dup = 0
        for r in df.select(*names).toLocalIterator():
            dup += r[0] in got
            got[r[0]] = tuple(f(v) for f, v in zip(norms, r))
        bad = [k for k in want.keys() | got.keys() if want.get(k) != got.get(k)]
        entry: dict[str, Any] = {"rows": len(want), "equal": not bad and not dup,
                                 "differing": len(bad), "duplicate_keys": dup}
        if bad:
            k = min(bad)
            w, g = want.get(k), got.get(k)
            entry["first"] = {"id": k, "columns": {
                n: [str(a), str(b)] for n, a, b in zip(names, w or [None] * len(names),
                                                        g or [None] * len(names)) if a != b}}
        out[table] = entry
    return out


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
                cols = [c for c in _columns(server, table) if c != "id"]
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


def jdbc_floor(spark: Any, server: Any, out: Path) -> float:
    """spark.read.jdbc (4 partitions on id) -> Delta of every bench table; seconds."""
    # the mysql scheme makes Spark quote names with backticks (its MySQL dialect)
    url = f"jdbc:mysql://127.0.0.1:{server.port}/{SCHEMA}?permitMysqlScheme"
    props = {"user": server.user, "password": server.password, "driver": "org.mariadb.jdbc.Driver",
             "fetchsize": "10000"}
    t0 = time.perf_counter()
    for table in TABLES:
        lo, hi = server.sql(f"SELECT MIN(id), MAX(id) FROM `{table}`", database=SCHEMA)[0]
        df = spark.read.jdbc(url, table, column="id", lowerBound=int(lo or 0),
                             upperBound=int(hi or 0) + 1, numPartitions=4, properties=props)
        df.write.format("delta").mode("overwrite").save(str(out / table))
    return time.perf_counter() - t0


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
        master: str = "local[2]", event_log: Path | None = None) -> dict[str, Any]:
    from ..devtools.devserver import DevServer
    from ..spark.session import build_session
    from ..spark.sync import SyncOptions, run_sync

    work = Path(workdir or tempfile.mkdtemp(prefix="binlake-syncbench-"))
    work.mkdir(parents=True, exist_ok=True)
    server = DevServer(work / "server", extra_options={
        "innodb_buffer_pool_size": "256M", "innodb_flush_log_at_trx_commit": "0"}).start()
    doc: dict[str, Any] = {"config": {"scale": scale, "seed": seed, "master": master,
                                      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}}
    try:
        echo(f"loading the workload ({scale:,} row changes)")
        loaded = load(server, Workload(scale, seed))
        doc["workload"] = {"expected": loaded.expected.to_json(), "load_s": round(loaded.seconds, 1)}
        conf: dict[str, str] = {}
        jar = jdbc_jar()
        if jar:
            conf = {"spark.driver.extraClassPath": str(jar),
                    "spark.executor.extraClassPath": str(jar)}
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
                           master=master)
        echo("snapshot: binlake sync --once")
        snap_s, rep = _timed(lambda: run_sync(opts, spark))
        snap = {"rows": rep.snapshot_rows, "seconds": round(snap_s, 2),
                "rows_per_s": round(rep.snapshot_rows / snap_s)}
        echo(f"snapshot: {snap}")
        if jar:
            echo("snapshot floor: spark.read.jdbc -> Delta")
            jdbc_s = jdbc_floor(spark, server, work / "jdbc")
            snap["jdbc_s"] = round(jdbc_s, 2)
            snap["x_jdbc"] = round(jdbc_s / snap_s, 2)  # >1: binlake faster
        else:
            snap["jdbc_s"] = None
            echo("snapshot floor skipped: no MariaDB Connector/J (run scripts/spark-jars.sh)")
        snap["check"] = compare_tables(spark, server, wh)
        doc["snapshot"] = snap
        echo(f"snapshot: {snap}")

        before = work / "before"
        shutil.copytree(wh / SCHEMA, before)
        echo("second round of changes")
        round_s, changed = _timed(lambda: second_round(server))
        doc["second_round"] = {"changes": changed, "seconds": round(round_s, 1)}
        echo("catch-up: binlake sync --once")
        catch_s, rep = _timed(lambda: run_sync(opts, spark))
        floors = merge_floors(spark, wh, before, work)
        n = sum(changed.values())
        catch = {"changes": n, "records": rep.rows, "batches": rep.batches,
                 "seconds": round(catch_s, 2), "changes_per_s": round(n / catch_s), **floors,
                 "x_merge": round(catch_s / floors["merge_s"], 2),
                 "x_append": round(catch_s / floors["append_s"], 2)}
        catch["check"] = compare_tables(spark, server, wh)
        doc["catch_up"] = catch
        echo(f"catch-up: {catch}")
        doc["peak_rss_mb"] = {"driver_python": _driver_peak_rss_mb(), "jvm": _jvm_peak_rss_mb(spark)}
        doc["equal"] = all(v["equal"] for ph in ("snapshot", "catch_up")
                           for v in doc[ph]["check"].values())
        return doc
    finally:
        server.stop()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def format_summary(doc: dict[str, Any]) -> str:
    s, c = doc["snapshot"], doc["catch_up"]
    jd = (f"spark.read.jdbc->Delta {s['jdbc_s']} s ({s['x_jdbc']}x: >1 means binlake faster)"
          if s.get("jdbc_s") else "jdbc floor skipped")
    return "\n".join([
        f"snapshot: {s['rows']:,} rows in {s['seconds']} s ({s['rows_per_s']:,} rows/s); {jd}",
        (f"catch-up: {c['changes']:,} changes in {c['seconds']} s ({c['changes_per_s']:,}/s, "
         f"{c['batches']} batch(es)); bare MERGE {c['merge_s']} s -> {c['x_merge']}x the MERGE; "
         f"plain append {c['append_s']} s -> {c['x_append']}x"),
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
    args = ap.parse_args(argv)
    import logging

    from ..cli.logs import setup

    setup()
    if args.verbose:
        for name in ("binlake.apply", "binlake.snapshot"):
            logging.getLogger(name).setLevel(logging.DEBUG)
    doc = run(args.scale, args.seed, Path(args.workdir) if args.workdir else None,
              echo=lambda m: print(m, file=sys.stderr), keep=args.keep,
              event_log=Path(args.event_log) if args.event_log else None)
    print(format_summary(doc))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return 0 if doc["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
