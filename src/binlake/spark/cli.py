"""`binlake sync`: the main job on the command line (Spark is imported only when it runs)."""
from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import click

from ..errors import BinlakeError
from .compare import comparable


_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'128M', '1g', '65536', '64MiB' -> bytes (K, M, G are powers of 1024); ValueError
    naming the text otherwise."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size: write bytes, or a number with K, M or G "
                         "(e.g. 128M)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


class ByteSize(click.ParamType):  # type: ignore[type-arg]
    name = "SIZE"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@click.command()
@click.argument("url", required=False)
@click.option("--tables", default=None,
              help="Tables to sync: 'db.*,db2.t' (shell patterns). Required with a URL.")
@click.option("--warehouse", type=click.Path(file_okay=False), default="warehouse",
              show_default=True,
              help="Folder of Delta tables (<schema>/<table>); checkpoint, schema history "
                   "and state in _binlake/.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--once", is_flag=True, help="Catch up to the primary's current end, then exit.")
@click.option("--scd", "scd_type", type=click.Choice(["1", "2"]), default="1", show_default=True,
              help="SCD type 1 (current rows) or 2 (history with __START_AT/__END_AT).")
@click.option("--change-log", is_flag=True,
              help="Also keep an append-only raw change table in _binlake/changes.")
@click.option("--max-rows-per-trigger", type=int, default=None,
              help="Admission control: at most this many row changes per micro-batch.")
@click.option("--max-bytes-per-trigger", type=ByteSize(), default=None,
              show_default="a 96th of memory, 64M-256M",
              help="Admission control: at most this much binlog per micro-batch (whole "
                   "transactions; K, M, G suffixes; 0: no limit), so a long backlog is "
                   "applied in bounded batches.")
@click.option("--trigger-interval", type=float, default=1.0, show_default=True,
              help="Seconds between micro-batches when streaming.")
@click.option("--no-snapshot", is_flag=True,
              help="Skip the initial snapshot: only changes from the primary's current end.")
@click.option("--chunk-size", type=int, default=None, help="Rows per snapshot chunk.")
@click.option("--writer", type=click.Choice(["auto", "driver", "spark"]),
              default="auto", show_default=True,
              help="Who writes the Delta tables: the driver (delta-rs: the first snapshot's "
                   "tables and each batch's SCD1 MERGEs, no rows through Spark), Spark "
                   "(a snapshot task per chunk, MERGEs in Spark), or auto: the driver on a "
                   "local master.")
@click.option("--metrics-port", type=int, default=None,
              help="Serve Prometheus metrics (lag, changes/s, totals) on 127.0.0.1:PORT/metrics; "
                   "they are always written to WAREHOUSE/_binlake/metrics.prom.")
@click.option("--log-json", is_flag=True, help="Log one JSON object per line (for log shippers).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting (repeatable), e.g. spark.driver.host=10.0.0.5 on a cluster.")
def sync(url: str | None, tables: str | None, warehouse: str, master: str, once: bool,
         scd_type: str, change_log: bool, max_rows_per_trigger: int | None,
         max_bytes_per_trigger: int | None, trigger_interval: float, no_snapshot: bool, chunk_size: int | None,
         metrics_port: int | None, log_json: bool, confs: tuple[str, ...] = (),
         writer: str = "auto") -> None:
    """Keep Delta Lake tables equal to MySQL/MariaDB tables: snapshot, then stream.

    \b
    Without URL it runs the demo: a throwaway local MariaDB with a sample 'shop' database,
    a sync, a round of changes, and a second sync that catches up.
    \b
    Examples:
      binlake sync                                               # the demo
      binlake sync mysql://repl:pw@db1:3306 --tables 'shop.*' --warehouse /data/lake
      binlake sync mysql://repl@db1 --tables 'shop.orders' --once --scd 2
    """
    from ..cli.logs import setup

    setup(logging.INFO, json_lines=log_json)
    try:
        if url is None:
            _demo(Path(warehouse), master, int(scd_type))
            return
        if not tables:
            raise click.UsageError("--tables is required with a server URL")
        bad = [c for c in confs if "=" not in c or not c.partition("=")[0].strip()]
        if bad:
            raise click.UsageError(f"--conf {bad[0]!r}: write it as KEY=VALUE")
        conf = dict(c.split("=", 1) for c in confs)
        # The URL, the connection, the privileges and the patterns, in one line each, before
        # Spark's start-up (tens of seconds) rather than in a traceback after it.
        from ..replica.preflight import check_sync

        check_sync(url, tables, warn=lambda line: click.echo(line, err=True))
        from .sync import SyncOptions, run_sync

        opts = SyncOptions(url=url, tables=tables, warehouse=Path(warehouse), master=master,
                           once=once, scd_type=int(scd_type), change_log=change_log,
                           max_rows_per_trigger=max_rows_per_trigger,
                           max_bytes_per_trigger=max_bytes_per_trigger,
                           trigger_seconds=trigger_interval, snapshot=not no_snapshot,
                           chunk_size=chunk_size, metrics_port=metrics_port, conf=conf,
                           writer=writer)
        report = run_sync(opts, on_progress=_progress)
        click.echo(json.dumps({"snapshot_rows": report.snapshot_rows, "batches": report.batches,
                               "rows": report.rows, "stream_start": report.stream_start}))
    except BinlakeError as exc:
        raise click.ClickException(str(exc)) from None
    except Exception as exc:
        line = spark_error_line(exc)
        if line is None:
            raise
        raise click.ClickException(line) from None


_WRAPPED = re.compile(r"^(?:binlake\.[\w.]+\.)?(\w*(?:Error|Unavailable|Mismatch|Lost)): (.+)$",
                      re.MULTILINE)


def spark_error_line(exc: BaseException) -> str | None:
    """The binlake error inside an exception Spark wrapped it in (a Python worker's
    traceback carried by a JVM exception), as its one line; None if there is none."""
    text = str(exc)
    if "binlake" not in text:
        return None
    found = [m for m in _WRAPPED.finditer(text) if "binlake." in m.group(0)]
    if not found:
        return None
    return found[-1].group(2).strip()


def _progress(info: dict[str, Any]) -> None:
    lag = info.get("lag_s")
    rate = info.get("changes_per_s")
    click.echo(f"batch {info['batch']}: {info['rows']} changes applied"
               + (f" in {info['apply_s']:.1f} s ({rate:,.0f}/s)" if rate is not None else "")
               + (f", lag {lag:.1f} s" if lag is not None else ""), err=True)


def _demo(warehouse: Path, master: str, scd_type: int) -> None:
    """The quickstart: local MariaDB + sample data -> Delta, then changes -> Delta again."""
    from ..devtools import demo
    from ..devtools.devserver import DevServer
    from .session import build_session
    from .sync import SyncOptions, run_sync

    warehouse = warehouse.resolve()
    click.echo(f"binlake demo: warehouse {warehouse}", err=True)
    server = DevServer(warehouse / "_binlake" / "demo-mariadb").start()
    try:
        conn = server.connect(database=None)
        with conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{demo.SCHEMA}'")
            fresh = cur.fetchone()[0] == 0
            if fresh:
                click.echo("loading the sample 'shop' database", err=True)
                for stmt in demo.load_statements():
                    cur.execute(stmt)
            cur.execute(f"SELECT COALESCE(MAX(id), 1000) - 999 FROM {demo.SCHEMA}.customers "
                        "WHERE id BETWEEN 1000 AND 1999")
            round_no = int(cur.fetchone()[0])
        spark = build_session("binlake-demo", master=master)
        opts = SyncOptions(url=server.url, tables=f"{demo.SCHEMA}.*", warehouse=warehouse,
                           master=master, once=True, scd_type=scd_type)
        t0 = time.time()
        run_sync(opts, spark=spark, on_progress=_progress)
        same = _show(spark, warehouse, conn, "after the snapshot", time.time() - t0)
        with conn.cursor() as cur:
            for stmt in demo.change_statements(round_no):
                cur.execute(stmt)
        click.echo("applied a round of changes on MariaDB (insert, update, key change, delete)",
                   err=True)
        t0 = time.time()
        run_sync(opts, spark=spark, on_progress=_progress)
        same = _show(spark, warehouse, conn, "after catching up", time.time() - t0) and same
        conn.close()
        if not same:
            raise click.ClickException("the Delta tables differ from MariaDB (see above)")
        click.echo("every table matches MariaDB row by row")
    finally:
        server.stop()


def _differences(spark: Any, warehouse: Path, conn: Any, table: str) -> tuple[int, int, int]:
    """(rows in MariaDB, rows in Delta, rows that differ either way) for one demo table."""
    from collections import Counter

    from ..devtools import demo
    from .apply import END_AT, START_AT

    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {demo.SCHEMA}.{table}")
        names = [d[0] for d in cur.description]
        source = Counter(tuple(comparable(v) for v in r) for r in cur.fetchall())
    df = spark.read.format("delta").load(str(warehouse / demo.SCHEMA / table))
    if END_AT in df.columns:  # SCD2: the open versions are the current rows
        df = df.where(df[END_AT].isNull())
    if sorted(c for c in df.columns if not c.startswith("_binlake_")
              and c not in (START_AT, END_AT)) != sorted(names):
        lake_rows = df.count()
        return sum(source.values()), lake_rows, sum(source.values()) + lake_rows
    lake = Counter(tuple(comparable(r[n]) for n in names) for r in df.select(*names).collect())
    diff = sum(((source - lake) + (lake - source)).values())
    return sum(source.values()), sum(lake.values()), diff


def _show(spark: Any, warehouse: Path, conn: Any, when: str, seconds: float) -> bool:
    from ..devtools import demo

    click.echo(f"\n{when} ({seconds:.1f} s): rows in MariaDB vs Delta, compared row by row")
    same = True
    for t in demo.table_counts(conn):
        n_src, n_lake, diff = _differences(spark, warehouse, conn, t)
        mark = "ok" if diff == 0 else f"DIFFERENT ({diff} rows)"
        same = same and diff == 0
        click.echo(f"  {demo.SCHEMA}.{t:<10} {n_src:>6} {n_lake:>6}  {mark}")
    click.echo(f"  read them: spark.read.format('delta').load('{warehouse / demo.SCHEMA}/orders')")
    return same
