"""`binlake stream`: the live replica on the command line."""
from __future__ import annotations

import sys
import time
from typing import Any

import click

from ..cli.decode_command import write_jsonl, write_records
from ..errors import BinlakeError, ConfigError
from .position import Position


@click.command()
@click.argument("url")
@click.option("--checkpoint", type=click.Path(dir_okay=False), default=None,
              help="Checkpoint file: resume from it on restart, update it as changes are written.")
@click.option("--start", "start_pos", default=None, metavar="FILE:POS",
              help="Start at this binlog file and offset, at a transaction boundary (default: the "
                   "end). An existing checkpoint takes precedence, so a restart can repeat it.")
@click.option("--gtid", "gtid", default=None, metavar="SET",
              help="Start after these GTIDs: MySQL executed set 'uuid:1-42', or MariaDB state '0-1-42'.")
@click.option("--until-end", is_flag=True, help="Stop at the primary's end as of connecting.")
@click.option("--tables", default=None, help="Only these tables: 'db.t1,db2.*' (shell patterns).")
@click.option("--semi-sync", is_flag=True,
              help="Acknowledge transactions as a semi-synchronous replica (after the checkpoint).")
@click.option("--server-id", type=int, default=6449519, show_default=True,
              help="Replica server id; unique among the primary's replicas.")
@click.option("--heartbeat", type=click.FloatRange(0.01, 4294967.0), default=5.0, show_default=True,
              help="Heartbeat period in seconds; a silent connection is dead after 3 periods.")
@click.option("--output", "-o", type=click.Choice(["jsonl", "text", "null"]), default="jsonl",
              show_default=True)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write to this file instead of stdout; with --checkpoint it is exactly-once "
                   "(a FIFO or a device such as /dev/null: at-least-once, like stdout).")
@click.option("--password-prompt", is_flag=True, help="Ask for the password.")
@click.option("--password-env", default="BINLAKE_PASSWORD", show_default=True,
              help="Environment variable holding the password when the URL has none.")
@click.option("--schema-history/--no-schema-history", default=True, show_default=True,
              help="Track table shapes across DDL (names/types right even with "
                   "binlog_row_metadata=MINIMAL); stored beside the checkpoint.")
@click.option("--skip-incidents", is_flag=True,
              help="Read on past INCIDENT events (the primary lost changes there) with a "
                   "warning; without it the stream stops before the first one with an error, "
                   "as a MySQL replica does (error 1590).")
@click.option("--stats", is_flag=True, help='Print a final JSON line {"rows","events","seconds"}.')
def stream(url: str, checkpoint: str | None, start_pos: str | None, gtid: str | None,
           until_end: bool, tables: str | None, semi_sync: bool, server_id: int, heartbeat: float,
           output: str, out_path: str | None, password_prompt: bool, password_env: str,
           schema_history: bool, skip_incidents: bool, stats: bool) -> None:
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

    from ..cdc.jsontext import images_for
    from ..cdc.changes import incident_line, table_filter
    from .checkpoint import CheckpointStore
    from .sink import OutputSink
    from .stream import BinlogStream, StreamOptions
    from .url import ServerURL
    from ..cli.program import settle_imports

    settle_imports()
    t0 = time.perf_counter()
    store = CheckpointStore(checkpoint) if checkpoint else None
    saved_now = [False]  # a checkpoint was written by this run
    try:
        server = ServerURL.parse(url, password_env=password_env)
        if start_pos and gtid:
            raise ConfigError("--start and --gtid exclude each other", hint="give one start position")
        saved = store.load() if store else None
        start: Position | None = None
        resume_bytes = None
        if saved is not None:
            start, extra = saved
            resume_bytes = extra.get("out_bytes")
            if start_pos or gtid:
                click.echo(f"binlake: resuming from checkpoint {checkpoint} at {start}; "
                           "--start/--gtid only apply when there is no checkpoint yet", err=True)
        elif start_pos:
            start = Position.parse_start(start_pos)
        elif gtid:
            start = _parse_gtid(gtid)
        keep = table_filter(tables)  # (a pattern that can match nothing: refused here)
        if password_prompt:
            server = server.with_password(click.prompt("Password", hide_input=True))
        sink = OutputSink(out_path, resume_bytes)
        last_save = [0.0]
        last_saved: list[Position | None] = [saved[0] if saved is not None else None]

        tracker = _checked_tracker(server, checkpoint, start, schema_history, tables=tables,
                                   until_end=until_end, server_id=server_id, heartbeat=heartbeat)

        def save(position: Position, force: bool = False) -> None:
            """Make the output durable, then record where it ends and where the stream is.
            At most every 0.2 s unless forced (semi-sync: at every commit, before the ACK)."""
            if store is None:
                sink.fh.flush()
                return
            now = time.monotonic()
            if force or semi_sync or now - last_save[0] >= 0.2:
                if tracker is not None:
                    # The history must cover the checkpoint: saved first.
                    from ..schema.history import history_path

                    hpath = history_path(store.path)
                    if tracker.dirty or not hpath.exists():
                        tracker.save(hpath)
                size = sink.durable_size()
                store.save(position, {"out_bytes": size} if size is not None else {})
                saved_now[0] = True
                last_save[0] = now
                last_saved[0] = position

        def idle(position: Position) -> None:
            # A quiet primary: store what the throttle left unsaved.
            if position != last_saved[0] and (saved_now[0] or saved is not None):
                save(position, force=True)

        def started(position: Position) -> None:
            # The primary accepted the position: record it (and where the output ends) before
            # the first row, so that a crash before the first commit truncates back to here.
            if store is not None and saved is None:
                save(position, force=True)

        opts = StreamOptions(server_id=server_id, start=start, until_end=until_end,
                             semi_sync=semi_sync, heartbeat=heartbeat, tables=keep,
                             on_commit=save, on_stream_start=started, on_idle=idle,
                             table_resolver=tracker, json_images=images_for(output),
                             on_incident=(lambda ev: click.echo(incident_line(ev), err=True))
                             if skip_incidents else None)
        bs = BinlogStream(server, opts)

        def stop(signum: int, frame: Any) -> None:
            bs.request_stop()

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        n = 0
        finished = False
        try:
            for batch in bs.batches(per_event=False):  # records of one or more rows events
                n += len(batch)
                if output != "null":
                    write_records(sink, batch, output)
                if bs.stop_requested:
                    break
            finished = True
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            bs.close()
            # Record where the output ends. A run that failed before the primary accepted the
            # start position leaves the checkpoint as it was (absent or unchanged).
            if bs.positioned and (finished or saved_now[0]):
                save(bs.position, force=True)
            sink.close()
    except BinlakeError as exc:
        if store is not None and not saved_now[0]:
            raise _fail(BinlakeError(f"{exc} [checkpoint {checkpoint} left unchanged]")) from None
        raise _fail(exc) from None
    if stats:
        write_jsonl(sys.stdout if output == "null" or out_path else sys.stderr,
                    {"rows": n, "events": bs.events_seen,
                     "seconds": round(time.perf_counter() - t0, 3)})


def _parse_gtid(text: str) -> Position:
    """--gtid: a MySQL executed set (has ':') or a MariaDB position (domain-server-seq,...)."""
    from ..gtid.sets import MariaGtidState, MySQLGtidSet

    if ":" in text:
        return Position(gtid_set=str(MySQLGtidSet(text)))
    return Position(gtid_state=str(MariaGtidState(text)))


def _fail(exc: BinlakeError) -> click.ClickException:
    from ..cli.program import click_error as fail

    return fail(exc)


def _checked_tracker(server: Any, checkpoint: str | None, start: Any, enabled: bool, *,
                     tables: str | None, until_end: bool, server_id: int,
                     heartbeat: float) -> Any:
    """Check what the run needs on the server (replica/preflight.py), then make its schema
    history (_schema_tracker), over one connection."""
    from ..errors import BinlakeError
    from .connection import MySQLConnection
    from .preflight import Needs, check

    with MySQLConnection.connect(server.host, server.port, server.user, server.password,
                                 **server.connect_kwargs()) as probe:
        has_history = False
        if enabled and checkpoint is not None:
            from ..schema.history import history_path

            has_history = history_path(checkpoint).exists()
        metadata = "UNKNOWN"
        if enabled and not has_history and start is not None:
            try:
                metadata = str(probe.query("SELECT @@global.binlog_row_metadata").rows[0][0]).upper()
            except BinlakeError:  # (MySQL 5.7 has no such variable: no metadata either)
                pass
        # A past start without FULL metadata: a history built from information_schema and
        # the DDL since the start (replica/range_schema.py).
        past = enabled and not has_history and start is not None and metadata != "FULL"
        status = ("for a start at the end" if start is None
                  else "for the schema history at a past start (or pass --no-schema-history)"
                  if past else "for --until-end" if until_end else None)
        bootstrap = enabled and not has_history and (start is None or past)
        needs = Needs(binlog_status=status,
                      select="for the schema history (or pass --no-schema-history)"
                      if bootstrap else None)
        check(probe, tables, needs, server_id=server_id,
              warn=lambda line: click.echo(line, err=True))
        if past:
            return _past_tracker(server, start, tables, server_id, heartbeat)
        return _schema_tracker(server, checkpoint, start, enabled)


def _past_tracker(server: Any, start: Any, tables: str | None, server_id: int,
                  heartbeat: float) -> Any:
    """The schema history of a stream from a past position without one saved: shapes from
    information_schema and from the DDL found between the start and the primary's end."""
    from ..cdc.changes import table_filter
    from ..schema.bootstrap import default_filter
    from .range_schema import range_tracker

    keep = table_filter(tables)

    def tracked(schema: str, table: str) -> bool:
        return default_filter(schema, table) and (keep is None or keep(schema, table))

    import pymysql

    from ..errors import SchemaError, ServerError

    try:
        return range_tracker(server, start, lambda: _sql_connection(server), tables=tracked,
                             server_id=server_id ^ 0x80000000, heartbeat=heartbeat,
                             warn=lambda line: click.echo(line, err=True))
    except (SchemaError, ServerError, pymysql.err.Error) as exc:  # (a primary without SHOW
        # BINLOG EVENTS, or an information_schema it does not fill: as without a history)
        click.echo(f"binlake: no schema history for this start position ({exc}): column names "
                   "and types come from the TABLE_MAP metadata, and binlog_row_metadata is not "
                   "FULL: unnamed columns show as @1, @2, ...", err=True)
        return None


def _sql_connection(server: Any) -> Any:
    """A plain-SQL connection for information_schema; its errors read like the stream's."""
    import pymysql

    from ..errors import ServerError
    from .connection import ConnectionFailed

    opts = server.options
    ssl = None
    if opts.get("ssl_mode", "").upper() not in ("", "DISABLED", "PREFERRED") or opts.get("ssl_ca"):
        ssl = {k: v for k, v in (("ca", opts.get("ssl_ca")), ("cert", opts.get("ssl_cert")),
                                 ("key", opts.get("ssl_key"))) if v}
        ssl["check_hostname"] = opts.get("ssl_mode", "").upper() == "VERIFY_IDENTITY"
    try:
        return pymysql.connect(host=server.host, port=server.port, user=server.user,
                               password=server.password or "", connect_timeout=10, ssl=ssl)
    except pymysql.err.OperationalError as exc:
        code, message = (exc.args + (0, ""))[:2]
        if code in (2003, 2005, 2006, 2013):
            raise ConnectionFailed(f"cannot connect to {server.host}:{server.port}: {message}",
                                   hint="check the host, the port and that the server runs") from None
        hint = "check the credentials: user name and password" if code == 1045 else None
        raise ServerError(code, str(message), hint=hint) from None


def _schema_tracker(server: Any, checkpoint: str | None, start: Any, enabled: bool) -> Any:
    """The schema history for this run: the one saved beside the checkpoint, else a bootstrap
    from information_schema when the stream starts at the primary's current end. A stream
    started at an older position without a history, with FULL row metadata, takes names and
    types from the TABLE_MAPs (a past start without FULL goes to _past_tracker)."""
    if not enabled:
        return None

    def connect() -> Any:
        return _sql_connection(server)

    # The schema modules are imported only where a tracker is made (tens of ms of start-up).
    if checkpoint is not None:
        from ..schema.history import history_path

        if history_path(checkpoint).exists():
            from ..schema.tracker import SchemaTracker

            return SchemaTracker.load(history_path(checkpoint), connect=connect)
    if start is None:
        from ..schema.tracker import SchemaTracker

        return SchemaTracker.from_server(connect)
    return None
