"""The `binlake` command line."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import click

from . import __version__
from .errors import BinlakeError


class _Fail(click.ClickException):
    exit_code = 2


def _fail(exc: BinlakeError) -> click.ClickException:
    return _Fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="binlake")
def main() -> None:
    """binlake: MySQL and MariaDB change data capture.

    \b
    Commands:
      decode   read binlog files, print events or row changes (like mysqlbinlog -vv)
      stream   act as a replica of a live server and print its row changes
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
@click.option("--stats", is_flag=True,
              help='Print a final JSON line {"rows", "events", "bytes", "seconds"}: on stdout '
                   "with --output null, else on stderr.")
def decode(files: tuple[str, ...], output: str, what: str, start_position: int | None,
           stop_position: int | None, gtids: str | None, tables: str | None,
           key_file: str | None, allow_unknown_events: bool, no_verify_checksums: bool,
           stats: bool) -> None:
    """Decode binlog FILES and print their row changes (or events).

    \b
    Examples:
      binlake decode mariadb-bin.000001
      binlake decode --events --output text binlog.000042
      binlake decode --tables 'shop.orders' --output jsonl binlog.0000*
      binlake decode --output null --stats big-binlog.000007
    """
    from .binlog.events import Event
    from .changes import ChangeTracker, table_filter
    from .files import read_events
    from .gtid_filter import GtidFilter

    t0 = time.perf_counter()
    keys = _load_keys(key_file)
    tracker = ChangeTracker(table_filter(tables))
    gfilter = GtidFilter.parse(gtids) if gtids else None
    out = sys.stdout
    n_rows = n_events = n_bytes = 0
    try:
        for fi, path in enumerate(files):
            n_bytes += Path(path).stat().st_size
            first, last = fi == 0, fi == len(files) - 1
            for ev in read_events(path, keys=keys, allow_unknown=allow_unknown_events,
                                  verify_checksums=not no_verify_checksums):
                n_events += 1
                if last and stop_position is not None and ev.offset >= stop_position:
                    break
                if first and start_position is not None and ev.offset < start_position and ev.type_code != 15:
                    tracker.observe(ev)
                    continue
                if gfilter is not None and not gfilter.accept(ev):
                    continue
                records = tracker.records(ev)
                n_rows += len(records)
                if output == "null":
                    continue
                if what == "events":
                    _print_event(out, ev, output)
                else:
                    for rec in records:
                        if output == "jsonl":
                            _write_jsonl(out, rec.to_json_dict())
                        else:
                            out.write(_record_text(rec) + "\n")
    except BinlakeError as exc:
        raise _fail(exc) from None
    except BrokenPipeError:
        return
    if stats:
        line = {"rows": n_rows, "events": n_events, "bytes": n_bytes,
                "seconds": round(time.perf_counter() - t0, 3)}
        _write_jsonl(sys.stdout if output == "null" else sys.stderr, line)


@main.command()
@click.argument("url")
@click.option("--checkpoint", type=click.Path(dir_okay=False), default=None,
              help="Checkpoint file: resume from it on restart, update it as changes are written.")
@click.option("--start", "start_pos", default=None, metavar="FILE:POS",
              help="Start at this binlog file and offset (default: the checkpoint, else the end).")
@click.option("--gtid", "gtid", default=None, metavar="SET",
              help="Start after these GTIDs: MySQL executed set 'uuid:1-42', or MariaDB state '0-1-42'.")
@click.option("--until-end", is_flag=True, help="Stop at the primary's end as of connecting.")
@click.option("--tables", default=None, help="Only these tables: 'db.t1,db2.*' (shell patterns).")
@click.option("--semi-sync", is_flag=True,
              help="Acknowledge transactions as a semi-synchronous replica (after the checkpoint).")
@click.option("--server-id", type=int, default=6449519, show_default=True,
              help="Replica server id; unique among the primary's replicas.")
@click.option("--heartbeat", type=float, default=5.0, show_default=True,
              help="Heartbeat period in seconds; a silent connection is dead after 3 periods.")
@click.option("--output", "-o", type=click.Choice(["jsonl", "text", "null"]), default="jsonl",
              show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of stdout; with --checkpoint it is exactly-once.")
@click.option("--password-prompt", is_flag=True, help="Ask for the password.")
@click.option("--password-env", default="BINLAKE_PASSWORD", show_default=True,
              help="Environment variable holding the password when the URL has none.")
@click.option("--stats", is_flag=True, help='Print a final JSON line {"rows","events","seconds"}.')
def stream(url: str, checkpoint: str | None, start_pos: str | None, gtid: str | None,
           until_end: bool, tables: str | None, semi_sync: bool, server_id: int, heartbeat: float,
           output: str, out_path: str | None, password_prompt: bool, password_env: str,
           stats: bool) -> None:
    """Stream row changes from a live MySQL/MariaDB primary (URL: mysql://user:pw@host:port).

    \b
    Records carry their exact position; with --checkpoint a restart resumes after the last
    written record: exactly once with --out FILE, at least once on stdout.
    \b
    Examples:
      binlake stream mysql://repl@db1:3306 --checkpoint state.json --out changes.jsonl
      BINLAKE_PASSWORD=... binlake stream mysql://repl@db1 --gtid 0-1-1000 --until-end
      binlake stream mysql://repl:pw@127.0.0.1:3306 --until-end --output null --stats
    """
    import signal

    from .changes import table_filter
    from .replica.checkpoint import CheckpointStore
    from .replica.position import Position
    from .replica.sink import OutputSink
    from .replica.stream import BinlogStream, StreamOptions
    from .replica.url import ServerURL

    t0 = time.perf_counter()
    try:
        server = ServerURL.parse(url, password_env=password_env)
        if password_prompt:
            server = server.with_password(click.prompt("Password", hide_input=True))
        store = CheckpointStore(checkpoint) if checkpoint else None
        saved = store.load() if store else None
        start: Position | None = None
        resume_bytes = None
        if saved is not None:
            start, extra = saved
            resume_bytes = extra.get("out_bytes")
        elif start_pos:
            start = Position.parse_start(start_pos)
        elif gtid:
            start = Position(gtid_set=gtid) if ":" in gtid else Position(gtid_state=gtid)
        sink = OutputSink(out_path, resume_bytes)
        last_save = [0.0]

        def save(position: Position, force: bool = False) -> None:
            if store is None:
                sink.fh.flush()
                return
            now = time.monotonic()
            if force or semi_sync or now - last_save[0] >= 0.2:
                size = sink.durable_size()
                store.save(position, {"out_bytes": size} if size is not None else {})
                last_save[0] = now

        opts = StreamOptions(server_id=server_id, start=start, until_end=until_end,
                             semi_sync=semi_sync, heartbeat=heartbeat, tables=table_filter(tables),
                             on_commit=save)
        bs = BinlogStream(server, opts)

        def stop(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)
        n = 0
        try:
            for rec in bs.changes():
                n += 1
                if output == "jsonl":
                    sink.write(json.dumps(rec.to_json_dict(), ensure_ascii=False, separators=(",", ":")) + "\n")
                elif output == "text":
                    sink.write(_record_text(rec) + "\n")
        except KeyboardInterrupt:
            pass
        finally:
            bs.close()
            if bs._boundary is not None:
                save(bs.position, force=True)
            sink.close()
    except BinlakeError as exc:
        raise _fail(exc) from None
    if stats:
        _write_jsonl(sys.stdout if output == "null" or out_path else sys.stderr,
                     {"rows": n, "events": bs.events_seen,
                      "seconds": round(time.perf_counter() - t0, 3)})


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


def run() -> None:  # pragma: no cover
    main()


if __name__ == "__main__":  # pragma: no cover
    main()
