"""`binlake.verify.verify`: compare synced Delta tables with their source tables.

Per table: plan chunks over the primary key; the source server computes each chunk's
checksum in a consistent snapshot at a known binlog position P; once the sync has applied
past P (its checkpoint says so), Spark computes the same checksums over the Delta table in
one job (started while the server reads, and kept when the sync was already past every P).
Differing chunks are narrowed down to rows: both sides list (key, row hash) of the
chunk, keys whose hashes differ are the differing rows, and both sides' values name the
differing columns.

Online guarantee: a row is reported only when it differs in every round (`rounds`, each a
new source read) and the sync did not change its key after that round's source read (the
Delta row's or version's seq, or a tombstone, is not past P). Such a row's Delta value is
not the source's value at P although the sync has applied every change of it up to P: a
real difference. A row changed after its chunk's read is not compared in that run (counted
as `changed_while_verifying`); a difference caused only by a change after the read is left
to the next run. Delta time travel cannot replace the seq test: a table version holds a
batch's end position, and P rarely is one (README.md, "Why not Delta time travel to P").
"""
from __future__ import annotations

import time
import queue
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..replica.url import ServerURL
from .canonical import VerifyError, frame_text
from .progress import applied as applied_at
from .progress import position_key, wait_applied
from .report import RowDifference, TableReport, VerifyReport
from .source import Checksum, Chunk, Plan, Source

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DEFAULT_CHUNK_SIZE = 10000
DEFAULT_CONNECTIONS = 2
"""Chunk checksums read at a time on the source: the server computes each on one core,
so one connection leaves verify waiting on a single core of the primary (1 reads as
pt-table-checksum does, one chunk at a time)."""


@dataclass
class VerifyOptions:
    chunk_size: int = DEFAULT_CHUNK_SIZE
    rounds: int = 2
    """Source reads a differing row must differ in before it is reported."""
    wait: float = 30.0
    """Seconds to wait for a running sync to apply past a read's position."""
    max_rows: int = 100
    """Differing rows listed per table (the rest are counted)."""
    rate: float | None = None
    """At most this many source rows read per second."""
    timeout: float | None = 30.0
    """Source statement timeout (seconds); timed-out reads back off and retry."""
    repair: bool = False
    connections: int = DEFAULT_CONNECTIONS
    """Source connections reading chunk checksums side by side."""


def verify(url: str | ServerURL, tables: str, warehouse: str | Path, *,
           chunk_size: int = DEFAULT_CHUNK_SIZE, spark: "SparkSession | None" = None,
           master: str = "local[*]", rounds: int = 2, wait: float = 30.0, max_rows: int = 100,
           rate: float | None = None, timeout: float | None = 30.0, repair: bool = False,
           progress: Callable[[str, int, int], None] | None = None,
           connections: int = DEFAULT_CONNECTIONS) -> VerifyReport:
    """Compare the Delta tables under `warehouse` with the source tables `tables`
    ('db.*,db2.t') of the server at `url`; see the module notes for the guarantee.

    `progress(table, chunks_done, chunks_total)` is called as chunks are checked.
    """
    opts = VerifyOptions(chunk_size, rounds, wait, max_rows, rate, timeout, repair, connections)
    if connections < 1:
        raise VerifyError(f"connections must be at least 1, not {connections}")
    if chunk_size < 1:
        raise VerifyError(f"--chunk-size must be at least 1, not {chunk_size}")
    if rounds < 1:
        raise VerifyError(f"rounds must be at least 1, not {rounds}")
    server = ServerURL.parse(url) if isinstance(url, str) else url
    t0 = time.monotonic()
    report = VerifyReport()
    src = Source(server, rate=rate, timeout=timeout)
    try:
        plans = [src.plan(src.describe(s, t), chunk_size) for s, t in src.select_tables(tables)]
        if spark is None:
            from ..spark.session import build_session

            spark = build_session("binlake-verify", master=master)
        report.tables = verify_tables(src, spark, str(warehouse), plans, opts, progress)
    finally:
        src.close()
    report.seconds = time.monotonic() - t0
    return report


def verify_table(src: Source, spark: "SparkSession", warehouse: str, plan: Plan,
                 opts: VerifyOptions,
                 progress: Callable[[str, int, int], None] | None = None) -> TableReport:
    """Compare one table (see `verify`)."""
    return verify_tables(src, spark, warehouse, [plan], opts, progress)[0]


def source_sums(src: Source, plans: list[Plan],
                progress: Callable[[str, int, int], None] | None = None,
                connections: int = 1) -> list[tuple[dict[int, Checksum], float]]:
    """Every chunk's source checksum, table after table (per table the sums and seconds).

    With `connections` above 1, a table's range chunks are read that many at a time, each
    on a connection of its own (more connections share `src`'s rate limit); a hash-bucket
    table is one read."""
    extra = [src.another(connections) for _ in range(connections - 1)]
    if extra and src.rate:
        src.rate /= connections
    idle: queue.SimpleQueue[Source] = queue.SimpleQueue()
    for s in (src, *extra):
        idle.put(s)

    def one(plan: Plan, chunk: Chunk) -> tuple[int, Checksum]:
        conn = idle.get()
        try:
            return chunk.index, conn.checksum(plan, chunk)
        finally:
            idle.put(conn)

    out = []
    try:
        with ThreadPoolExecutor(max(1, connections)) as pool:
            for plan in plans:
                t0 = time.monotonic()
                sums: dict[int, Checksum] = {}
                if plan.buckets or not extra:
                    parts = (got for _, got in src.checksums(plan))
                else:
                    parts = ({i: c} for i, c in _as_completed(
                        [pool.submit(one, plan, c) for c in plan.chunks]))
                for got in parts:
                    sums.update(got)
                    if progress is not None:
                        progress(plan.table.name, len(sums), len(plan.chunks))
                out.append((sums, time.monotonic() - t0))
    finally:
        for s in extra:
            src.timeouts += s.timeouts
            s.close()
        if extra and src.rate:
            src.rate *= connections
    return out


def _as_completed(futures: list[Future[Any]]) -> Iterator[Any]:
    """The futures' results as they finish (the first error is raised, the rest cancelled)."""
    try:
        for f in as_completed(futures):
            yield f.result()
    finally:
        for f in futures:
            f.cancel()


def verify_tables(src: Source, spark: "SparkSession", warehouse: str, plans: list[Plan],
                  opts: VerifyOptions,
                  progress: Callable[[str, int, int], None] | None = None) -> list[TableReport]:
    """Compare tables (see `verify`): the server computes every chunk's checksum (in a
    thread) while one Spark job computes the Delta tables' (all tables at once); differing
    chunks are then narrowed down table by table."""
    from ..spark.verify import checksums as lake_checksums
    from ..spark.verify import delta_version, lake_table, lake_table_path

    reports = [TableReport(p.table.name, rows=p.rows or 0, chunks=len(p.chunks)) for p in plans]
    # Read before the Delta tables are opened (whether a DataFrame pins its version when it
    # is made or when it runs): the sync had applied up to `before` and each table was at
    # `versions` or later when the Delta job read it.
    before = applied_at(warehouse)[0]
    versions = {i: delta_version(lake_table_path(warehouse, p)) for i, p in enumerate(plans)}
    lakes: dict[int, Any] = {}
    for i, plan in enumerate(plans):
        rep = reports[i]
        try:
            lake = lake_table(spark, warehouse, plan)
        except VerifyError as exc:
            rep.problem = str(exc)
            continue
        if not lake.comparable:
            rep.problem = f"columns missing in the Delta table: {', '.join(lake.missing)}"
            continue
        if lake.extra:
            rep.note = f"columns only in the Delta table (not compared): {', '.join(lake.extra)}"
        lakes[i] = lake
    order = sorted(lakes)
    # The Delta job runs while the server reads; a table's sums count only if the sync had
    # already applied past every read of it before the job, or if the table has no new
    # version since then (the job read the version the sync has now applied past); else
    # the job runs again for it after the wait.
    with ThreadPoolExecutor(1) as pool:
        reads = pool.submit(source_sums, src, [plans[i] for i in order], progress,
                            opts.connections)
        try:
            early = lake_checksums([lakes[i] for i in order])
        finally:
            source = reads.result()
    lake_sums = dict(zip(order, early))
    sums = {i: s for i, (s, _) in zip(order, source)}
    newest = {i: max((position_key(*c.at) for c in sums[i].values()), default=(0, 0))
              for i in order}
    applied = before
    stale = [i for i in order if before is not None and before < newest[i]]
    if stale:
        applied = wait_applied(warehouse, max(newest[i] for i in stale), opts.wait)
        moved = [i for i in stale
                 if versions[i] is None or delta_version(lakes[i].path) != versions[i]]
        if moved:
            lake_sums.update(zip(moved, lake_checksums([lakes[i] for i in moved])))
    for k, i in enumerate(order):
        t1 = time.monotonic()
        reports[i] = _compare(src, spark, warehouse, plans[i], lakes[i], reports[i], sums[i],
                              lake_sums[i], applied, newest[i], opts, progress)
        reports[i].seconds = source[k][1] + time.monotonic() - t1
    return reports


def _compare(src: Source, spark: "SparkSession", warehouse: str, plan: Plan, lake: Any,
             rep: TableReport, sums: dict[int, Any], lake_sums: dict[int, tuple[int, int]],
             applied: tuple[int, int] | None, newest: tuple[int, int], opts: VerifyOptions,
             progress: Callable[[str, int, int], None] | None) -> TableReport:
    """One table's result from both sides' chunk sums: narrowed down (and repaired)."""
    rep.rows = sum(s.rows for s in sums.values())
    rep.lake_rows = sum(n for n, _ in lake_sums.values())
    differing = [c for c in plan.chunks
                 if (sums[c.index].rows, sums[c.index].xor) != lake_sums.get(c.index, (0, 0))]
    rep.differing_chunks = len(differing)
    if differing:
        diffs, changed = narrow(src, lake, plan, differing, opts, warehouse)
        if opts.repair and diffs:
            return _repair(src, spark, warehouse, plan, lake, diffs, opts, progress)
        rep.changed_while_verifying = changed
        rep.differences = diffs[:opts.max_rows]
        rep.more_differences = max(0, len(diffs) - opts.max_rows)
        if rep.differences and applied is not None and applied < newest:
            rep.note = ((rep.note + "; ") if rep.note else "") + (
                "the sync has not applied the binlog up to the source reads (it is behind or "
                "stopped): some differences may be changes it has not applied yet")
    return rep


def _repair(src: Source, spark: "SparkSession", warehouse: str, plan: Plan, lake: Any,
            diffs: list[RowDifference], opts: VerifyOptions,
            progress: Callable[[str, int, int], None] | None) -> TableReport:
    """Apply the differing rows again from the source, then verify the table again."""
    from dataclasses import replace

    from ..spark.verify import repair

    keys = {"".join(frame_text(d.key[k]) for k in plan.table.key): d.key for d in diffs}
    n = repair(spark, src, warehouse, plan, lake, keys)
    again = verify_table(src, spark, warehouse, plan, replace(opts, repair=False), progress)
    again.repaired = n
    again.note = ((again.note + "; ") if again.note else "") + \
        f"repaired {n} rows from the source, then verified again"
    return again


def narrow(src: Source, lake: Any, plan: Plan, differing: list[Chunk], opts: VerifyOptions,
           warehouse: str) -> tuple[list[RowDifference], int]:
    """The rows that differ in the given chunks: per-row hashes of both sides, re-read for
    `opts.rounds` rounds; keys the sync changed after a round's read are left out."""
    by_index = {c.index: c for c in differing}
    candidates: dict[int, set[str]] | None = None
    changed: set[str] = set()
    pending = sorted(by_index)
    for rnd in range(opts.rounds):
        if rnd:
            time.sleep(1.0)
        source: dict[int, dict[str, str]] = {}
        reads = []
        for i in pending:
            source[i], at = src.row_hashes(plan, by_index[i])
            reads.append(position_key(*at))
        wait_applied(warehouse, max(reads), opts.wait)
        lake_rows = lake.row_hashes(pending)
        touched, truncated = lake.touched_since(pending, min(reads))
        found: dict[int, set[str]] = {}
        for i in pending:
            s, d = source[i], lake_rows.get(i, {})
            keys = {k for k in s.keys() | d.keys() if s.get(k) != d.get(k)}
            if truncated:
                changed |= keys
                keys = set()
            changed |= keys & touched
            keys -= touched
            if candidates is not None:
                keys &= candidates.get(i, set())
            if keys:
                found[i] = keys
        candidates = found
        pending = sorted(found)
        if not pending:
            break
    diffs: list[RowDifference] = []
    if not candidates:
        return diffs, len(changed)
    everything = set().union(*candidates.values())
    lake_values = lake.row_values(everything)
    key_names = list(plan.table.key)
    for i in sorted(candidates):
        src_values = src.row_values(plan, by_index[i], candidates[i])
        for k in sorted(candidates[i]):
            sv, lv = src_values.get(k), lake_values.get(k)
            if sv is None:
                if lv is not None:
                    diffs.append(RowDifference({n: lv[n] for n in key_names}, "extra", lake=lv))
                continue  # else gone from both sides since the last round
            key = {n: sv[n] for n in key_names}
            if lv is None:
                diffs.append(RowDifference(key, "missing", source=sv))
            else:
                cols = [n for n in sv if sv[n] != lv.get(n)]
                diffs.append(RowDifference(key, "changed", cols,
                                           {n: sv[n] for n in cols}, {n: lv.get(n) for n in cols}))
    return diffs, len(changed - everything)


__all__ = ["verify", "verify_table", "verify_tables", "narrow", "source_sums", "VerifyOptions",
           "VerifyError"]
