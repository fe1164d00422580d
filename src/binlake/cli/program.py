"""The `binlake` command line."""
from __future__ import annotations

import sys
import time
from pathlib import Path
import click

from .. import __version__
from ..errors import BinlakeError


_PROGRAM = False
"""True when this process is the `binlake` program (entry()), not a library or test caller."""


def entry() -> None:
    """The `binlake` program: the console script and `python -m binlake.cli`."""
    global _PROGRAM
    _PROGRAM = True
    main()


def settle_imports() -> None:
    """Called by a one-shot command (decode, stream) once its modules are imported.

    Why: the objects of the imported modules that the collector tracks (~17,000 for
    `decode`: classes, functions, dicts, tuples) are never garbage, yet each full
    collection walks them, the last one at exit. gc.freeze() moves them out of the
    collector's sight.
    What the command itself creates afterwards is collected and finalized as usual. Only
    in the program's own process: a caller that runs a command in its process (a test's
    CliRunner) keeps its collector as it was."""
    if _PROGRAM:
        import gc

        gc.freeze()


class _Fail(click.ClickException):
    exit_code = 2


def click_error(exc: BinlakeError) -> click.ClickException:
    """A binlake error as the one line click prints before exiting with status 2 (every
    subcommand reports its errors so)."""
    return _Fail(str(exc))


class _UsageLine(click.ClickException):
    """A usage error as one line (the message and where help is), not click's usage block:
    every bad input gets one line on stderr."""

    exit_code = 2


def _one_line(exc: click.UsageError) -> click.ClickException:
    where = exc.ctx.command_path if exc.ctx is not None else "binlake"
    message = " ".join(exc.format_message().split())
    return _UsageLine(f"{message} (see '{where} --help')")


class _LazyGroup(click.Group):
    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[arg-type]
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is None and name in _LAZY_COMMANDS:
            import importlib

            module, attr = _LAZY_COMMANDS[name].split(":")
            cmd = getattr(importlib.import_module(module), attr)
            self.add_command(cmd, name)
        return cmd


@click.group(cls=_LazyGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="binlake")
def main() -> None:
    """binlake: MySQL and MariaDB change data capture.

    Decode binlog files, stream row changes from a live primary as a replica, and keep Delta
    Lake tables equal to the source tables. Every command has --help with examples.
    """


def _load_keys(key_file: str | None) -> dict[int, bytes] | None:
    if not key_file:
        return None
    from ..binlog.encryption import load_key_file

    return load_key_file(Path(key_file).read_text())


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--output", "-o", type=click.Choice(["jsonl", "text", "null"]), default="jsonl",
              show_default=True, help="Print format; null prints nothing (for timing).")
@click.option("--events", "what", flag_value="events",
              help="Print every event instead of row changes.")
@click.option("--changes", "what", flag_value="changes", default=True,
              help="Print row changes (the default).")
@click.option("--start-position", type=click.IntRange(min=4), default=None,
              help="Skip events that start before this byte offset (first file only).")
@click.option("--stop-position", type=click.IntRange(min=4), default=None,
              help="Stop before the first event that starts at or after this offset (last file).")
@click.option("--gtid", "gtids", default=None,
              help="Only transactions with these GTIDs (MySQL set 'uuid:1-5' or MariaDB "
                   "'0-1-5,1-1-7').")
@click.option("--tables", default=None, help="Only these tables: 'db.t1,db2.*' (shell patterns).")
@click.option("--key-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="MariaDB file_key_management key file, for encrypted binlogs.")
@click.option("--allow-unknown-events", is_flag=True,
              help="Hand on events of unknown type as raw bytes instead of failing.")
@click.option("--no-verify-checksums", is_flag=True, help="Do not verify CRC32 checksums.")
@click.option("--schema-history", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A schema history saved by binlake (stream --checkpoint writes "
                   "CHECKPOINT.schema.json, sync WAREHOUSE/_binlake/schema_history.json): "
                   "column names, types and keys at each row's own position, across DDL and "
                   "with binlog_row_metadata=MINIMAL.")
@click.option("--skip-incidents", is_flag=True,
              help="Read on past INCIDENT events (the primary lost changes there) with a "
                   "warning; without it, reading changes stops at the first one with an error, "
                   "as a MySQL replica does (error 1590).")
@click.option("--stats", is_flag=True,
              help='Print a final JSON line {"rows", "events", "bytes", "seconds"}: on stdout '
                   "with --output null, else on stderr.")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=1, show_default=True,
              help="Decode this many files, or pieces of big files, at a time in worker "
                   "processes (0: one per CPU). The output is the same, in the same order. Not "
                   "with --schema-history, whose DDL is replayed in order.")
def decode(files: tuple[str, ...], output: str, what: str, start_position: int | None,
           stop_position: int | None, gtids: str | None, tables: str | None,
           key_file: str | None, allow_unknown_events: bool, no_verify_checksums: bool,
           schema_history: str | None, skip_incidents: bool, stats: bool, jobs: int) -> None:
    """Decode binlog FILES and print their row changes (or events).

    \b
    Examples:
      binlake decode mariadb-bin.000001
      binlake decode --events --output text binlog.000042
      binlake decode --tables 'shop.orders' --output jsonl binlog.0000*
      binlake decode --output null --stats big-binlog.000007
      binlake decode --jobs 0 mariadb-bin.0000*      # a worker per CPU, same output
      binlake decode --schema-history warehouse/_binlake/schema_history.json mariadb-bin.0000*
    """
    import os

    from .decode_command import (DecodeSpec, decode_in_order, decode_in_parallel,
                                 import_decoder, write_jsonl)

    import_decoder()
    settle_imports()
    t0 = time.perf_counter()
    if jobs == 0:
        jobs = os.cpu_count() or 1
    if jobs > 1 and schema_history is not None:
        raise click.UsageError("--schema-history replays the files' DDL in order: use --jobs 1")
    out = sys.stdout
    try:
        spec = DecodeSpec(files=files, output=output, what=what, start_position=start_position,
                          stop_position=stop_position, gtids=gtids, tables=tables,
                          keys=_load_keys(key_file), allow_unknown=allow_unknown_events,
                          verify_checksums=not no_verify_checksums,
                          schema_history=schema_history, skip_incidents=skip_incidents)
        if jobs > 1:
            counts = decode_in_parallel(spec, jobs, out)
        else:
            counts = decode_in_order(spec, out)
    except BinlakeError as exc:
        raise click_error(exc) from None
    except BrokenPipeError:
        return
    if stats:
        line = {"rows": counts.rows, "events": counts.events, "bytes": counts.bytes,
                "seconds": round(time.perf_counter() - t0, 3)}
        write_jsonl(sys.stdout if output == "null" else sys.stderr, line)


_LAZY_COMMANDS = {
    "stream": "binlake.replica.cli:stream",
    "sync": "binlake.spark.cli:sync",
    "serve": "binlake.serve.cli:serve",
    "bench": "binlake.bench.cli:bench",
    "verify": "binlake.verify.cli:verify",
}
"""Commands that live with their subsystem, imported only when used (a `decode` or
`stream` run should not pay for importing the benchmark harness or the Spark glue)."""


if __name__ == "__main__":  # pragma: no cover
    # python -m binlake.cli.program: run the module the subcommands import, not this
    # copy of it, so that what entry() sets is what they read (settle_imports).
    from binlake.cli.program import entry as _entry

    _entry()
