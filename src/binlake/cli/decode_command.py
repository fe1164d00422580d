"""The engine of `binlake decode`: one binlog file's events to records and printed lines, run
over the files in order, or several files at a time in worker processes with the output
still in order.

Why worker processes: decoding is CPU-bound and holds the GIL. A binlog file decodes on its
own (it starts with its own format description; a transaction never spans a rotation), but
for an XA transaction prepared in one file and committed in a later one: the worker that
meets the XA COMMIT finds the PREPARE in the earlier files and re-reads it, as the Spark
files source does. Each worker writes its file's lines to a spool file; the parent copies
the spools out in file order, so the output is the same bytes as an in-order run's.
"""
from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

from ..binlog.constants import EventType
from ..errors import BinlakeError


class DecodeFailed(BinlakeError):
    """A worker's decode failed; the message is its error's, word for word."""


@dataclass(frozen=True)
class DecodeSpec:
    """What to decode and how to print it. Plain values only: a worker process gets a copy
    and builds its own filters and decoder from it."""

    files: tuple[str, ...]
    output: str = "jsonl"
    """jsonl, text or null."""
    what: str = "changes"
    """changes or events."""
    start_position: int | None = None
    stop_position: int | None = None
    gtids: str | None = None
    tables: str | None = None
    keys: dict[int, bytes] | None = None
    allow_unknown: bool = False
    verify_checksums: bool = True
    schema_history: str | None = None
    skip_incidents: bool = False
    """Read past INCIDENT events with a warning (else: an error at the first one)."""

    def passes_over(self) -> bool:
        """May left-out tables' rows events be passed over unread? Not for the positions,
        the GTID filter, the schema history and --events, which see every event (and inside
        an open XA transaction, whose rows are numbered kept or not: see
        changes.XaLeftOut)."""
        return (bool(self.tables) and self.schema_history is None and self.gtids is None
                and self.what != "events" and self.start_position is None
                and self.stop_position is None)


@dataclass
class Counts:
    """What --stats reports: row changes, events and bytes read."""

    rows: int = 0
    events: int = 0
    bytes: int = 0

    def add(self, other: "Counts") -> None:
        self.rows += other.rows
        self.events += other.events
        self.bytes += other.bytes


class _FileDecoder:
    """The filters, history and decoder options of one process, and the per-file loop."""

    def __init__(self, spec: DecodeSpec) -> None:
        from ..cdc.changes import table_filter
        from ..gtid.filter import GtidFilter

        self.spec = spec
        self.tables = table_filter(spec.tables)
        self.gtid_filter = GtidFilter.parse(spec.gtids) if spec.gtids else None
        self.resolver = None
        if spec.schema_history is not None:
            from ..schema.tracker import SchemaTracker

            # The history replays the files' DDL at its positions (idempotently: what it
            # already recorded is looked up, not applied twice).
            self.resolver = SchemaTracker.load(spec.schema_history)
        self.options: dict[str, Any] = dict(
            keys=spec.keys, allow_unknown=spec.allow_unknown,
            verify_checksums=spec.verify_checksums, table_filter=self.tables,
            table_resolver=self.resolver)
        if spec.what == "changes":
            from ..cdc.jsontext import images_for

            self.options["json_images"] = images_for(spec.output)

    def tracker(self, locate: Callable[..., Any] | None = None) -> Any:
        from ..cdc.changes import ChangeTracker

        return ChangeTracker(self.tables, locate=locate, reread=lambda rng, _at: reread_prepared(
            self.spec.files, rng, self.tables, **self.options), on_incident=self._incident())

    def _incident(self) -> Callable[[Any], None] | None:
        """What an INCIDENT event does: stop the changes (None: IncidentError), pass with a
        warning (--skip-incidents), or nothing with --events, which prints it as an event."""
        if self.spec.what == "events":
            return lambda ev: None
        if self.spec.skip_incidents:
            import sys

            from ..cdc.changes import incident_line

            return lambda ev: print(incident_line(ev), file=sys.stderr, flush=True)
        return None

    def decode(self, index: int, tracker: Any, out: TextIO, counts: Counts, *,
               begin: int | None = None, until: int | None = None) -> int | None:
        """Decode files[index] into `out`, adding to `counts`; a BinlakeError names the file
        and offset. Lines already written stay written (as on a terminal).

        A part of the file: from `begin` (an event group's start), and up to the first event
        group starting at or after `until`, whose offset is returned (None: the file's end)."""
        from ..binlog.decoder import BinlogDecoder
        from ..cdc.changes import XaLeftOut
        from ..binlog.files import opens_group, read_events

        spec, resolver, gfilter = self.spec, self.resolver, self.gtid_filter
        path = spec.files[index]
        if begin is None:
            counts.bytes += Path(path).stat().st_size
        first, last = index == 0, index == len(spec.files) - 1
        skip = spec.passes_over()
        start, stop = spec.start_position, spec.stop_position
        # A file starts outside any transaction: its records carry no GTID of the file
        # before (an old server's file after a newer one's had the last GTID stamped on).
        tracker.gtid = None
        if gfilter is not None:
            gfilter.current = None
        left_out = XaLeftOut(tracker, pass_over=skip) if self.tables is not None else None
        dec = BinlogDecoder(file=Path(path).name, left_out=left_out, **self.options)
        if spec.output != "null" and spec.what == "changes":
            out = LinesOut(out)  # (flushed below: lines written stay written on an error)
        reached = None
        # Asked once, not per event: most events meet none of these.
        start_here = first and start is not None
        stop_here = last and stop is not None
        null = spec.output == "null"
        records_of = tracker.records
        runs = None
        if (spec.what == "changes" and resolver is None and gfilter is None and not start_here
                and not stop_here):
            from ..cdc.runs import RecordRuns

            # The records only: the record-run driver makes them, in C where it can (never
            # a group's first event, so `until` is met as before).
            runs = RecordRuns(dec, tracker, pass_over=skip)
        events = rows = 0
        try:
            if runs is not None:
                for records in runs.read(path, start=begin, until=until):
                    rows += len(records)
                    if not null:
                        write_records(out, records, spec.output)
                    records = None  # type: ignore[assignment]  # (not kept while reading on)
                reached = runs.reached
            else:
                for ev in read_events(path, decoder=dec, start=begin):
                    if until is not None and ev.offset >= until and opens_group(ev):
                        reached = ev.offset
                        break
                    events += 1
                    if resolver is not None:
                        resolver.observe(ev)
                    if stop_here and ev.offset >= stop:
                        break
                    if (start_here and ev.offset < start
                            and ev.type_code != EventType.FORMAT_DESCRIPTION):
                        tracker.observe(ev, keep=False)
                        continue
                    if gfilter is not None and not gfilter.accept(ev):
                        # (an XA PREPARE left out is still known: a COMMIT let in re-reads it)
                        tracker.observe(ev, keep=False)
                        continue
                    records = records_of(ev)
                    rows += len(records)
                    if null:
                        records = ev = None  # a 16 MiB row is not kept while the next is decoded
                        continue
                    if spec.what == "events":
                        print_event(out, ev, spec.output)
                    else:
                        write_records(out, records, spec.output)
        finally:
            if runs is not None:
                events += runs.events
            counts.events += events
            counts.rows += rows
            if type(out) is LinesOut:
                out.flush()
        counts.events += dec.events_skipped
        return reached


def import_decoder() -> None:
    """Import now what a decode imports as it starts, so that a one-shot command settles
    those modules with the rest (cli.settle_imports)."""
    from ..cdc import changes  # noqa: F401
    from ..cdc import runs  # noqa: F401
    from ..binlog import files  # noqa: F401
    from ..binlog import decoder  # noqa: F401


def decode_in_order(spec: DecodeSpec, out: TextIO) -> Counts:
    """Every file in this process, one tracker carrying XA transactions across files."""
    files = _FileDecoder(spec)
    tracker = files.tracker()
    counts = Counts()
    for index in range(len(spec.files)):
        files.decode(index, tracker, out, counts)
    return counts


@dataclass(frozen=True)
class Piece:
    """Part `part` of `parts` of files[index]: the event groups that start in its share of
    the bytes, [cut, until) (the first part from the file's start, the last to its end)."""

    index: int
    part: int = 0
    parts: int = 1
    cut: int | None = None
    until: int | None = None


@dataclass
class _Part:
    """A worker's piece: its counts, its spooled lines, where it began and stopped (event
    offsets; None: the file's start, its end, or nothing found to begin at) and its error."""

    piece: Piece
    counts: Counts
    spool: str | None
    began: int | None = None
    reached: int | None = None
    error: str | None = None


def plan_pieces(spec: DecodeSpec, jobs: int, piece_bytes: int | None = None) -> list[Piece]:
    """Files cut in pieces of at most about `piece_bytes` (default: a fourth of a job's
    share of the total, within 32 MiB..256 MiB), so that a few big files keep every job busy
    and the spool of the pieces decoded ahead stays small. Not cut: with positions (they
    are about whole files), and files whose event groups cannot be found in place
    (files.cuttable)."""
    from ..binlog.files import cuttable

    sizes = [Path(f).stat().st_size for f in spec.files]
    if piece_bytes is None:
        piece_bytes = min(256 << 20, max(32 << 20, sum(sizes) // (4 * jobs)))
    cut = jobs > 1 and spec.start_position is None and spec.stop_position is None
    out = []
    for index, size in enumerate(sizes):
        parts = max(1, -(-size // piece_bytes)) if cut else 1
        if parts > 1 and not cuttable(spec.files[index]):
            parts = 1
        bounds = [size * k // parts for k in range(parts)] + [None]
        out += [Piece(index, part, parts, bounds[part] if part else None, bounds[part + 1])
                for part in range(parts)]
    return out


def _decode_piece(spec: DecodeSpec, piece: Piece, spool_dir: str, encoding: str,
                  errors: str) -> _Part:
    """In a worker: one piece of a file, into a spool file in the parent's encoding."""
    from ..binlog.files import find_group_start, locate_prepared

    path = spec.files[piece.index]
    counts = Counts()
    begin = None
    if piece.cut is not None:
        begin = find_group_start(path, piece.cut)
        if begin is None:
            return _Part(piece, counts, None)
    files = _FileDecoder(spec)
    earlier = spec.files[:piece.index]
    locate_options = dict(keys=spec.keys, allow_unknown=spec.allow_unknown,
                          verify_checksums=spec.verify_checksums)
    # An XA COMMIT whose PREPARE was in an earlier file (or piece): the in-order run's
    # tracker would have seen that PREPARE; this one finds it there.
    tracker = files.tracker(locate=lambda xid, _before: locate_prepared(
        earlier, xid, head=None if begin is None else (path, begin), **locate_options))
    spool = None
    if spec.output == "null":
        out: TextIO = open(os.devnull, "w")
    else:
        spool = os.path.join(spool_dir, f"{piece.index}.{piece.part}.out")
        out = open(spool, "w", encoding=encoding, errors=errors, newline="")
    try:
        with out:
            reached = files.decode(piece.index, tracker, out, counts, begin=begin,
                                   until=piece.until)
    except BinlakeError as exc:
        return _Part(piece, counts, spool, begin, None, str(exc))
    return _Part(piece, counts, spool, begin, reached)


def _joined(parts: list[_Part]) -> bool:
    """Do a file's pieces (so far) follow each other: each began where the one before
    stopped (both found the same event group, or none)? The last one done may have failed."""
    return all(a.error is None and a.reached == b.began for a, b in zip(parts, parts[1:]))


def decode_in_parallel(spec: DecodeSpec, jobs: int, out: TextIO, *,
                       piece_bytes: int | None = None) -> Counts:
    """`jobs` worker processes, a piece of a file each at a time; their output copied out
    in order as each piece before it is done. A failed piece's lines up to its error go
    out, then its error, and nothing after it: as in order. A file whose pieces do not
    join up (see files.find_group_start) is decoded again whole."""
    import multiprocessing
    import tempfile  # (here, as shutil in _copy_out: imports a one-process decode skips)
    from concurrent.futures import Future, ProcessPoolExecutor

    if spec.schema_history is not None:
        raise ValueError("a schema history is replayed in order: decode with one job")
    methods = multiprocessing.get_all_start_methods()
    # fork: the workers start with binlake already imported (a spawn imports it in each)
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    encoding = getattr(out, "encoding", None) or "utf-8"
    errors = getattr(out, "errors", None) or "strict"
    pieces = plan_pieces(spec, jobs, piece_bytes)
    if len(pieces) < 2:
        return decode_in_order(spec, out)
    jobs = min(jobs, len(pieces))
    total = Counts()
    with tempfile.TemporaryDirectory(prefix="binlake-decode-") as spool_dir:
        from ..binlog.files import share_cpus

        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                   initializer=share_cpus, initargs=(jobs,))
        try:
            queued: deque[Future[_Part]] = deque()
            ahead = iter(pieces)

            def submit() -> None:
                piece = next(ahead, None)
                if piece is not None:
                    queued.append(pool.submit(_decode_piece, spec, piece, spool_dir, encoding,
                                              errors))

            # Two pieces per worker in flight: none waits while the head's lines are
            # copied, and the spool holds at most that many pieces' output.
            for _ in range(2 * jobs):
                submit()
            done: list[_Part] = []  # the head file's pieces
            while queued:
                part = queued.popleft().result()
                submit()
                done.append(part)
                if part.error is None and part.piece.part < part.piece.parts - 1:
                    continue
                if not _joined(done):
                    for p in done:
                        _drop(p.spool)
                    done = [pool.submit(_decode_piece, spec, Piece(part.piece.index),
                                        spool_dir, encoding, errors).result()]
                for p in done:
                    if p.spool is not None:
                        _copy_out(p.spool, out)
                    total.add(p.counts)
                    if p.error is not None:
                        raise DecodeFailed(p.error)
                done = []
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return total


def _drop(spool: str | None) -> None:
    if spool is not None:
        os.unlink(spool)


def _copy_out(spool: str, out: TextIO) -> None:
    raw = getattr(out, "buffer", None)
    with open(spool, "rb") as fh:
        if raw is not None:
            out.flush()
            import shutil

            shutil.copyfileobj(fh, raw, 1 << 20)
            raw.flush()
        else:
            out.write(fh.read().decode(getattr(out, "encoding", None) or "utf-8"))
    os.unlink(spool)


# -- printing ---------------------------------------------------------------------------------

def write_jsonl(out: Any, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    out.write("\n")


class LinesOut:
    """Where `decode` writes record lines: a text stream's binary buffer when the stream
    writes UTF-8 with plain newlines (as the bytes of cdcjson's writers, gathered into
    writes of about 1 MiB), else the text stream itself. Nothing else may write to the
    stream while it is in use; flush() before it is used again."""

    LIMIT = 1 << 20

    def __init__(self, out: Any) -> None:
        import codecs

        self.out = out
        enc = getattr(out, "encoding", None)
        raw = getattr(out, "buffer", None)
        self.raw = None
        if raw is not None and enc and codecs.lookup(enc).name == "utf-8" and os.linesep == "\n":
            out.flush()  # (anything written as text before goes first)
            self.raw = raw
        self.pending: list[bytes] = []
        self.size = 0

    def write_bytes(self, data: bytes) -> None:
        if self.raw is None:
            self.out.write(data.decode("utf-8"))
            return
        self.pending.append(data)
        self.size += len(data)
        if self.size >= self.LIMIT:
            self.flush()

    def write(self, text: str) -> None:
        """Text, after the bytes before it (a value the UTF-8 codec refuses: the stream's
        own error handler decides)."""
        self.flush()
        self.out.write(text)
        self.out.flush()

    def flush(self) -> None:
        if self.pending:
            data = self.pending[0] if len(self.pending) == 1 else b"".join(self.pending)
            self.pending = []
            self.size = 0
            self.raw.write(data)  # type: ignore[union-attr]


def write_records(out: Any, records: Iterable[Any], output: str) -> None:
    """Change records as lines of `output` ("jsonl" or "text"): the one writer of
    `decode` (events or lists of records) and `stream`, written by cdcjson's writers. The
    lines go as bytes to an `out` with write_bytes (LinesOut, replica.sink.OutputSink), else
    as text."""
    from ..cdc import jsontext as cdcjson

    jsonl = output == "jsonl"
    try:
        data = cdcjson.records_jsonl(records) if jsonl else cdcjson.records_text(records)
    except UnicodeEncodeError:  # a lone surrogate: as the text stream writes it
        line = cdcjson.record_line if jsonl else cdcjson.record_text
        for rec in records:
            out.write(line(rec) + "\n")
        return
    write_bytes = getattr(out, "write_bytes", None)
    if write_bytes is not None:
        write_bytes(data)
    else:
        out.write(data.decode("utf-8"))


def print_event(out: Any, ev: Any, output: str) -> None:
    from ..cdc.changes import json_value

    if output == "jsonl":
        obj = {"type": ev.type_name, "file": ev.file, "pos": ev.offset, "end_pos": ev.end,
               "ts": ev.timestamp, "server_id": ev.header.server_id}
        if ev.inner_index is not None:
            obj["inner"] = ev.inner_index
        obj.update(json_value(ev.summary()))
        write_jsonl(out, obj)
    else:
        detail = " ".join(f"{k}={json.dumps(json_value(v), ensure_ascii=False)}"
                          for k, v in ev.summary().items())
        out.write(f"# at {ev.offset} end {ev.end} {ev.type_name} server_id={ev.header.server_id} "
                  f"ts={ev.timestamp} {detail}\n")


def reread_prepared(files: Any, rng: Any, tables: Any, **decoder_options: Any) -> tuple[list[Any], int]:
    """An XA COMMIT whose PREPARE was not decoded here (before --start-position, left out
    by --gtid, or in another worker's file): its records from the PREPARE's range, in the
    given files or beside them."""
    from ..cdc.changes import prepared_records
    from ..errors import ConfigError
    from ..binlog.files import read_range
    from ..binlog.left_out import LeftOut

    given = [Path(f) for f in files]
    path = next((p for p in given if p.name == rng.file), None)
    if path is None and given and (given[0].parent / rng.file).is_file():
        path = given[0].parent / rng.file
    if path is None:
        raise ConfigError(f"XA transaction {rng}: that binlog file is neither given nor beside "
                          f"{given[0] if given else 'the input'}", hint="add it to FILES")
    return prepared_records(read_range(path, rng.start, rng.end,
                                       **{**decoder_options, "left_out": LeftOut(count=True)}),
                             rng, tables)
