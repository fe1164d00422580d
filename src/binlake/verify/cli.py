"""`binlake verify`: the command line of binlake.verify."""
from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..errors import BinlakeError
from .run import DEFAULT_CHUNK_SIZE, DEFAULT_CONNECTIONS, ENGINES


@click.command()
@click.argument("url")
@click.option("--tables", required=True, help="Tables to verify: 'db.*,db2.t' (shell patterns).")
@click.option("--warehouse", type=click.Path(file_okay=False), default="warehouse",
              show_default=True, help="The folder binlake sync writes (<schema>/<table>).")
@click.option("--chunk-size", type=click.IntRange(min=1), default=DEFAULT_CHUNK_SIZE,
              show_default=True, help="Rows per checksum chunk (one source query each).")
@click.option("--rate", type=click.FloatRange(min=1), default=None,
              help="At most this many source rows read per second.")
@click.option("--connections", type=click.IntRange(min=1, max=64), default=DEFAULT_CONNECTIONS,
              show_default=True,
              help="Source connections reading chunk checksums at a time (1: one at a time, "
                   "as pt-table-checksum).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="Source statement timeout in seconds; a timed-out read backs off and retries.")
@click.option("--rounds", type=click.IntRange(min=1), default=2, show_default=True,
              help="Source reads a differing row must differ in before it is reported.")
@click.option("--wait", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds to wait for a running sync to apply past the source reads.")
@click.option("--max-rows", type=click.IntRange(min=0), default=100, show_default=True,
              help="Differing rows listed per table (the rest are counted).")
@click.option("--master", default="local[*]", show_default=True,
              help="Spark master URL (Spark starts only when it has work: see --engine).")
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True,
              help="Who checksums the Delta tables: the driver reading them with Arrow (auto "
                   "on a local master; equal tables then need no JVM) or Spark (auto on a "
                   "cluster). Differing rows are always narrowed down by Spark.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--repair", is_flag=True,
              help="Re-read differing rows from the source, apply them through the sync's "
                   "apply step (exactly once, tombstones and SCD2 history kept), verify again.")
def verify(url: str, tables: str, warehouse: str, chunk_size: int, rate: float | None,
           timeout: float, rounds: int, wait: float, max_rows: int, master: str,
           as_json: bool, repair: bool, connections: int, engine: str) -> None:
    """Prove that the synced Delta tables equal the source tables, chunk by chunk.

    Exit status 0 when every table is equal, 1 when some row differs, 2 on an error.

    \b
    Examples:
      binlake verify mysql://repl:pw@db1 --tables 'shop.*' --warehouse /data/lake
      binlake verify mysql://repl@db1 --tables shop.orders --warehouse lake --json
      binlake verify mysql://repl@db1 --tables 'shop.*' --warehouse lake --repair
    """
    import logging

    from . import verify as run

    logging.getLogger("py4j").setLevel(logging.ERROR)
    bar = _Bar() if sys.stderr.isatty() and not as_json else None
    try:
        report = run(url, tables, warehouse, chunk_size=chunk_size, master=master,
                     rounds=rounds, wait=wait, max_rows=max_rows, rate=rate, timeout=timeout,
                     repair=repair, progress=bar.update if bar else None,
                     connections=connections, engine=engine)
    except BinlakeError as exc:
        raise _Fail(str(exc)) from None
    except Exception as exc:  # a Spark failure: its binlake error as one line, if it has one
        from ..spark.cli import spark_error_line

        line = spark_error_line(exc)
        if line is None:
            raise
        raise _Fail(line) from None
    finally:
        if bar:
            bar.close()
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        for t in report.tables:
            mark = "equal" if t.equal else "DIFFERENT"
            click.echo(f"{t.table}: {mark}  {t.rows} rows (Delta {t.lake_rows}), {t.chunks} "
                       f"chunks, {t.differing_chunks} differing, {t.seconds:.1f} s"
                       + (f", {t.changed_while_verifying} changed while verifying"
                          if t.changed_while_verifying else ""))
            if t.problem:
                click.echo(f"  {t.problem}")
            if t.repaired:
                click.echo(f"  repaired {t.repaired} rows")
            if t.note:
                click.echo(f"  note: {t.note}")
            for d in t.differences:
                key = ", ".join(f"{k}={v}" for k, v in d.key.items())
                if d.kind == "changed":
                    cols = "; ".join(f"{c}: source {d.source[c]!r}, Delta {d.lake[c]!r}"
                                     for c in d.columns) if d.source and d.lake else ""
                    click.echo(f"  {key}: changed: {cols}")
                else:
                    click.echo(f"  {key}: {'missing in Delta' if d.kind == 'missing' else 'only in Delta'}")
            if t.more_differences:
                click.echo(f"  ... and {t.more_differences} more differing rows")
        click.echo(f"{'all tables equal' if report.equal else 'the Delta tables differ'} "
                   f"({report.seconds:.1f} s)")
    if not report.equal:
        sys.exit(1)


class _Fail(click.ClickException):
    exit_code = 2


class _Bar:
    """One tqdm bar over every table's chunks (a table's reads may overlap the next one's),
    naming the table whose chunk came last."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.totals: dict[str, int] = {}
        self.dones: dict[str, int] = {}

    def update(self, table: str, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(total=0, desc="verify", unit="chunk", leave=False)
        if self.totals.get(table) != total:
            self.totals[table] = total
            self.bar.total = sum(self.totals.values())
        self.bar.set_postfix_str(table, refresh=False)
        self.bar.update(done - self.dones.get(table, 0))
        self.dones[table] = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
