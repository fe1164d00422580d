"""The `binlake` command line."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from . import __version__
from .errors import BinlakeError


class _Fail(click.ClickException):
    exit_code = 2


def _fail(exc: BinlakeError) -> click.ClickException:
    return _Fail(str(exc))


class _LazyGroup(click.Group):
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
    from .binlog.encryption import load_key_file

    return load_key_file(Path(key_file).read_text())


def _write_jsonl(out: Any, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    out.write("\n")


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--output", "-o", type=click.Choice(["jsonl", "text", "null"]), default="jsonl",
              show_default=True, help="Print format; null prints nothing (for timing).")
@click.option("--events", "what", flag_value="events",
              help="Print every event instead of row changes.")
@click.option("--changes", "what", flag_value="changes", default=True,
              help="Print row changes (the default).")
@click.option("--start-position", type=int, default=None,
              help="Skip events that start before this byte offset (first file only).")
@click.option("--stop-position", type=int, default=None,
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
@click.option("--stats", is_flag=True,
              help='Print a final JSON line {"rows", "events", "bytes", "seconds"}: on stdout '
                   "with --output null, else on stderr.")
def decode(files: tuple[str, ...], output: str, what: str, start_position: int | None,
           stop_position: int | None, gtids: str | None, tables: str | None,
           key_file: str | None, allow_unknown_events: bool, no_verify_checksums: bool,
           schema_history: str | None, stats: bool) -> None:
    """Decode binlog FILES and print their row changes (or events).

    \b
    Examples:
      binlake decode mariadb-bin.000001
      binlake decode --events --output text binlog.000042
      binlake decode --tables 'shop.orders' --output jsonl binlog.0000*
      binlake decode --output null --stats big-binlog.000007
      binlake decode --schema-history warehouse/_binlake/schema_history.json mariadb-bin.0000*
    """
    from .binlog.decoder import BinlogDecoder
    from .changes import ChangeTracker, left_out_rows_needed, table_filter
    from .files import read_events
    from .gtid_filter import GtidFilter

    t0 = time.perf_counter()
    keys = _load_keys(key_file)
    tfilter = table_filter(tables)
    gfilter = GtidFilter.parse(gtids) if gtids else None
    out = sys.stdout
    n_rows = n_events = n_bytes = 0
    try:
        resolver = None
        if schema_history is not None:
            from .schema.tracker import SchemaTracker

            # The history replays the files' DDL at its positions (idempotently: what it
            # already recorded is looked up, not applied twice).
            resolver = SchemaTracker.load(schema_history)
        decoder_options = dict(keys=keys, allow_unknown=allow_unknown_events,
                               verify_checksums=not no_verify_checksums, table_filter=tfilter,
                               table_resolver=resolver)
        tracker = ChangeTracker(tfilter, reread=lambda rng, _at: _reread_prepared(
            files, rng, tfilter, **decoder_options))
        # The left-out tables' rows events need not be handed over at all, but for the
        # positions, the GTID filter, the schema history and --events (which see every
        # event), and while an XA transaction is open (its rows are numbered, kept or not).
        skip = (tfilter is not None and resolver is None and gfilter is None and what != "events"
                and start_position is None and stop_position is None)
        for fi, path in enumerate(files):
            n_bytes += Path(path).stat().st_size
            first, last = fi == 0, fi == len(files) - 1
            dec = BinlogDecoder(file=Path(path).name, skip_filtered=skip, **decoder_options)
            for ev in read_events(path, decoder=dec):
                n_events += 1
                if resolver is not None:
                    resolver.observe(ev)
                if last and stop_position is not None and ev.offset >= stop_position:
                    break
                if first and start_position is not None and ev.offset < start_position and ev.type_code != 15:
                    tracker.observe(ev, keep=False)
                    continue
                if gfilter is not None and not gfilter.accept(ev):
                    # (an XA PREPARE left out is still known: a COMMIT let in re-reads it)
                    tracker.observe(ev, keep=False)
                    continue
                records = tracker.records(ev)
                n_rows += len(records)
                if tfilter is not None:
                    left_out_rows_needed(dec, tracker, pass_over=skip)
                if output == "null":
                    records = ev = None  # a 16 MiB row is not kept while the next is decoded
                    continue
                if what == "events":
                    _print_event(out, ev, output)
                else:
                    for rec in records:
                        if output == "jsonl":
                            _write_jsonl(out, rec.to_json_dict())
                        else:
                            out.write(_record_text(rec) + "\n")
            n_events += dec.events_skipped
    except BinlakeError as exc:
        raise _fail(exc) from None
    except BrokenPipeError:
        return
    if stats:
        line = {"rows": n_rows, "events": n_events, "bytes": n_bytes,
                "seconds": round(time.perf_counter() - t0, 3)}
        _write_jsonl(sys.stdout if output == "null" else sys.stderr, line)


def _reread_prepared(files: Any, rng: Any, tables: Any, **decoder_options: Any) -> tuple[list[Any], int]:
    """An XA COMMIT whose PREPARE was not decoded here (before --start-position, or left out
    by --gtid): its records from the PREPARE's range, in the given files or beside them."""
    from .changes import prepared_records
    from .errors import ConfigError
    from .files import read_range

    given = [Path(f) for f in files]
    path = next((p for p in given if p.name == rng.file), None)
    if path is None and given and (given[0].parent / rng.file).is_file():
        path = given[0].parent / rng.file
    if path is None:
        raise ConfigError(f"XA transaction {rng}: that binlog file is neither given nor beside "
                          f"{given[0] if given else 'the input'}", hint="add it to FILES")
    return prepared_records(read_range(path, rng.start, rng.end,
                                       **{**decoder_options, "count_filtered": True}), rng, tables)


def _print_event(out: Any, ev: Any, output: str) -> None:
    from .changes import json_value

    if output == "jsonl":
        obj = {"type": ev.type_name, "file": ev.file, "pos": ev.offset, "end_pos": ev.end,
               "ts": ev.timestamp, "server_id": ev.header.server_id}
        if ev.inner_index is not None:
            obj["inner"] = ev.inner_index
        obj.update(json_value(ev.summary()))
        _write_jsonl(out, obj)
    else:
        detail = " ".join(f"{k}={json.dumps(json_value(v), ensure_ascii=False)}"
                          for k, v in ev.summary().items())
        out.write(f"# at {ev.offset} end {ev.end} {ev.type_name} server_id={ev.header.server_id} "
                  f"ts={ev.timestamp} {detail}\n")


def _record_text(rec: Any) -> str:
    d = rec.to_json_dict()
    lines = [f"### {rec.op.upper()} {rec.schema}.{rec.table}  at {rec.file}:{rec.pos} row {rec.row}"
             + (f" gtid {rec.gtid}" if rec.gtid else "")]
    for part in ("before", "after"):
        if part in d:
            lines.append(f"###   {part}:")
            for k, v in d[part].items():
                lines.append(f"###     {k}={json.dumps(v, ensure_ascii=False)}")
    return "\n".join(lines)


_LAZY_COMMANDS = {
    "stream": "binlake.replica.cli:stream",
    "sync": "binlake.spark.cli:sync",
    "serve": "binlake.serve.cli:serve",
    "bench": "binlake.bench.cli:bench",
}
"""Commands that live with their subsystem, imported only when used (a `decode` or
`stream` run should not pay for importing the benchmark harness or the Spark glue)."""


def run() -> None:  # pragma: no cover
    main()


if __name__ == "__main__":  # pragma: no cover
    main()
