"""`binlake.verify.verify`: compare synced Delta tables with their source tables.

Per table: plan chunks over the primary key (on a local master from the Delta table's own
keys); the source server computes each chunk's checksum in a consistent snapshot at a known
binlog position P; once the sync has applied past P (its checkpoint says so), the same
checksums are computed over the Delta table, by the driver (`lake`) or one Spark job
(started while the server reads, and kept when the sync was already past every P).
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

import logging
import time
import queue
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeAlias

from ..replica.url import ServerURL
from .canonical import VerifyError, frame_text
from .progress import applied as applied_at
from .progress import position_key, wait_applied
from .report import RowDifference, TableReport, VerifyReport
from .source import Checksum, Chunk, Plan, Source, SourceTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 10000
DEFAULT_CONNECTIONS = 2
"""Chunk checksums read at a time on the source: the server computes each on one core,
so one connection leaves verify waiting on a single core of the primary (1 reads as
pt-table-checksum does, one chunk at a time)."""
ENGINES = ("auto", "driver", "spark")
"""Who computes the Delta tables' checksums: `auto` is the driver (Arrow, `verify.lake`) on a
local master and Spark on a cluster."""


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
    engine: str = "auto"
    """Who computes the Delta side's checksums (`ENGINES`)."""


def verify(url: str | ServerURL, tables: str, warehouse: str | Path, *,
           chunk_size: int = DEFAULT_CHUNK_SIZE, spark: "SparkSession | None" = None,
           master: str = "local[*]", rounds: int = 2, wait: float = 30.0, max_rows: int = 100,
           rate: float | None = None, timeout: float | None = 30.0, repair: bool = False,
           progress: Callable[[str, int, int], None] | None = None,
           connections: int = DEFAULT_CONNECTIONS, engine: str = "auto") -> VerifyReport:
    """Compare the Delta tables under `warehouse` with the source tables `tables`
    ('db.*,db2.t') of the server at `url`; see the module notes for the guarantee.

    `progress(table, chunks_done, chunks_total)` is called as chunks are checked. Without
    `spark`, a session on `master` is started only when Spark has work: on a local master
    the driver checksums the Delta tables (`engine`), so equal tables need no JVM.
    """
    opts = VerifyOptions(chunk_size, rounds, wait, max_rows, rate, timeout, repair, connections,
                         engine)
    if engine not in ENGINES:
        raise VerifyError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if connections < 1:
        raise VerifyError(f"connections must be at least 1, not {connections}")
    if chunk_size < 1:
        raise VerifyError(f"--chunk-size must be at least 1, not {chunk_size}")
    if rounds < 1:
        raise VerifyError(f"rounds must be at least 1, not {rounds}")
    local = str(warehouse).removeprefix("file://").removeprefix("file:")
    if "://" not in local and not Path(local).is_dir():  # before any connection or JVM
        raise VerifyError(f"--warehouse {warehouse}: no such directory",
                          hint="the warehouse binlake sync writes to")
    server = ServerURL.parse(url) if isinstance(url, str) else url
    t0 = time.monotonic()
    report = VerifyReport()
    src = Source(server, rate=rate, timeout=timeout)
    try:
        session: Spark = spark or _LazySession(master)
        bounds = lake_bounds(str(warehouse), chunk_size) if _in_driver(engine, session) \
            else None
        plans = plan_tables(src, src.select_tables(tables), chunk_size, connections, bounds)
        report.tables = verify_tables(src, session, str(warehouse), plans, opts, progress)
    finally:
        src.close()
    report.seconds = time.monotonic() - t0
    return report


class _LazySession:
    """A Spark session on `master`, started at the first call."""

    def __init__(self, master: str) -> None:
        self.master = master
        self.session: "SparkSession | None" = None

    def __call__(self) -> "SparkSession":
        if self.session is None:
            from ..spark.session import build_session

            self.session = build_session("binlake-verify", master=self.master)
        return self.session


Spark: TypeAlias = "SparkSession | Callable[[], SparkSession]"
"""A session, or a function that returns one when Spark is first needed."""


def _session(spark: Any) -> "SparkSession":
    session: "SparkSession" = spark() if callable(spark) else spark
    return session


def _in_driver(engine: str, spark: Any) -> bool:
    """Whether the driver computes the Delta side (`engine`, auto: on a local master)."""
    if engine != "auto":
        return engine == "driver"
    master = spark.master if isinstance(spark, _LazySession) else \
        str(_session(spark).conf.get("spark.master", ""))
    return master.startswith("local")


def verify_table(src: Source, spark: Spark, warehouse: str, plan: Plan,
                 opts: VerifyOptions,
                 progress: Callable[[str, int, int], None] | None = None) -> TableReport:
    """Compare one table (see `verify`)."""
    return verify_tables(src, spark, warehouse, [plan], opts, progress)[0]


def source_sums(src: Source, plans: list[Plan],
                progress: Callable[[str, int, int], None] | None = None,
                connections: int = 1) -> list[tuple[dict[int, Checksum], float]]:
    """Every chunk's source checksum (per table the sums and the seconds from the start to
    its last chunk).

    With `connections` above 1, the chunks are read that many at a time, each on a
    connection of its own (`src`'s spares, which share its rate limit): the largest table
    first, each table's chunks in key order, the next table's begun as soon as a connection
    is free (so none idles at a table's end); a hash-bucket table is one read."""
    extra = src.spares(connections - 1)
    rate = src.rate
    for s in (src, *extra):  # the rate limit shared
        s.rate = rate / connections if rate else None
    idle: queue.SimpleQueue[Source] = queue.SimpleQueue()
    for s in (src, *extra):
        idle.put(s)
    t0 = time.monotonic()
    sums: list[dict[int, Checksum]] = [{} for _ in plans]
    seconds = [0.0 for _ in plans]

    def bucketed(k: int) -> tuple[int, dict[int, Checksum]]:
        conn = idle.get()
        try:
            got: dict[int, Checksum] = {}
            for _, part in conn.checksums(plans[k]):
                got.update(part)
            return k, got
        finally:
            idle.put(conn)

    def one(k: int, chunk: Chunk) -> tuple[int, dict[int, Checksum]]:
        conn = idle.get()
        try:
            return k, {chunk.index: conn.checksum(plans[k], chunk)}
        finally:
            idle.put(conn)

    try:
        # The largest table first, on every connection: its reads (often waiting on the
        # disk) then overlap the driver's Delta side, and the CPU-bound small tables come
        # after it (measured against tables interleaved at the same pace: benchmarks/README).
        weight = src.table_bytes([p.table for p in plans]) if extra else {}
        tasks = sorted(((-weight.get(p.table.name, 0), k, c) for k, p in enumerate(plans)
                        if p.chunks for c in (p.chunks[:1] if p.buckets else p.chunks)),
                       key=lambda t: (t[0], t[1], t[2].index))
        with ThreadPoolExecutor(max(1, connections)) as pool:
            futures = [pool.submit(bucketed, k) if plans[k].buckets else pool.submit(one, k, c)
                       for _, k, c in tasks]
            for k, got in _as_completed(futures):
                sums[k].update(got)
                seconds[k] = time.monotonic() - t0
                if progress is not None:
                    progress(plans[k].table.name, len(sums[k]), len(plans[k].chunks))
    finally:
        for s in extra:
            src.timeouts += s.timeouts
            s.timeouts = 0
        src.rate = rate
    return list(zip(sums, seconds))


Bounds: TypeAlias = "Callable[[SourceTable, Source], list[tuple[str, ...]] | None]"
"""A table's range boundaries from elsewhere than a walk (None: walk it)."""


def lake_bounds(warehouse: str, chunk_size: int) -> Bounds:
    """Boundaries from the Delta tables' own keys (`lake.key_bounds`): planning then reads
    nothing on the source."""
    from .lake import key_bounds, table_path

    def bounds(t: SourceTable, conn: Source) -> list[tuple[str, ...]] | None:
        return key_bounds(table_path(warehouse, t), t, chunk_size, conn.row_estimate(t))
    return bounds


def plan_tables(src: Source, tables: list[tuple[str, str]], chunk_size: int,
                connections: int = 1, bounds: Bounds | None = None) -> list[Plan]:
    """Each table's chunk plan (`Source.plan`), range boundaries from `bounds` where it
    gives them; with `connections` above 1, that many tables planned at a time (a walk
    reads the key index and mostly waits on the server's reads)."""
    def plan(conn: Source, name: tuple[str, str]) -> Plan:
        t = conn.describe(*name)
        return conn.plan(t, chunk_size, bounds(t, conn) if bounds and t.ranged else None)

    if connections < 2 or len(tables) < 2:
        return [plan(src, name) for name in tables]
    n = min(connections, len(tables))
    idle: queue.SimpleQueue[Source] = queue.SimpleQueue()
    for s in (src, *src.spares(n - 1)):
        idle.put(s)

    def one(name: tuple[str, str]) -> Plan:
        conn = idle.get()
        try:
            return plan(conn, name)
        finally:
            idle.put(conn)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, tables))


def _as_completed(futures: list[Future[Any]]) -> Iterator[Any]:
    """The futures' results as they finish (the first error is raised, the rest cancelled)."""
    try:
        for f in as_completed(futures):
            yield f.result()
    finally:
        for f in futures:
            f.cancel()


def verify_tables(src: Source, spark: Spark, warehouse: str, plans: list[Plan],
                  opts: VerifyOptions,
                  progress: Callable[[str, int, int], None] | None = None) -> list[TableReport]:
    """Compare tables (see `verify`): the server computes every chunk's checksum (in a
    thread) while the driver (`verify.lake`) or one Spark job (all tables at once) computes
    the Delta tables'; differing chunks are then narrowed down table by table, with Spark."""
    from .lake import delta_version, lake_table_path

    reports = [TableReport(p.table.name, rows=p.rows or 0, chunks=len(p.chunks)) for p in plans]
    # Read before the Delta tables are opened (whether a DataFrame pins its version when it
    # is made or when it runs): the sync had applied up to `before` and each table was at
    # `versions` or later when the Delta job read it.
    before = applied_at(warehouse)[0]
    versions = {i: delta_version(lake_table_path(warehouse, p)) for i, p in enumerate(plans)}
    lakes: dict[int, Any] = {}
    in_driver = _in_driver(opts.engine, spark)
    for i, plan in enumerate(plans):
        rep = reports[i]
        try:
            lake = _open_lake(spark, warehouse, plan, in_driver)
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
            early = _lake_sums([lakes[i] for i in order], spark)
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
            for i in moved:
                lakes[i] = _reopened(lakes[i])
            lake_sums.update(zip(moved, _lake_sums([lakes[i] for i in moved], spark)))
    for k, i in enumerate(order):
        t1 = time.monotonic()
        reports[i] = _compare(src, spark, warehouse, plans[i], lakes[i], reports[i], sums[i],
                              lake_sums[i], applied, newest[i], opts, progress)
        reports[i].seconds = source[k][1] + time.monotonic() - t1
    return reports


def _open_lake(spark: Spark, warehouse: str, plan: Plan, in_driver: bool) -> Any:
    """The Delta table of `plan`, read by the driver (`in_driver` and `lake.open_lake` says
    it can) or by Spark."""
    from .lake import lake_table_path, open_lake

    path = lake_table_path(warehouse, plan)
    if in_driver:
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(path):
            raise VerifyError(f"{plan.table.name}: no Delta table at {path}",
                              hint="run binlake sync for it first")
        lake = open_lake(path, plan)
        if not isinstance(lake, str):
            return lake
        log.debug("verify: %s is checksummed by Spark: %s", plan.table.name, lake)
    from ..spark.verify import lake_table

    return lake_table(_session(spark), warehouse, plan)


def _reopened(lake: Any) -> Any:
    """A table's newest version (a driver-read table is pinned to the version it opened;
    Spark's reads the newest when its job runs)."""
    from .lake import DriverLake

    return DriverLake(lake.path, lake.plan) if isinstance(lake, DriverLake) else lake


def _lake_sums(lakes: list[Any], spark: Spark) -> list[dict[int, tuple[int, int]]]:
    """Each table's chunk sums: the driver's tables one by one, the rest in one Spark job."""
    from .lake import DriverLake

    out: list[dict[int, tuple[int, int]]] = [{} for _ in lakes]
    by_spark = [k for k, lk in enumerate(lakes) if not isinstance(lk, DriverLake)]
    if by_spark:
        from ..spark.verify import checksums

        for k, sums in zip(by_spark, checksums([lakes[k] for k in by_spark])):
            out[k] = sums
    for k, lk in enumerate(lakes):
        if isinstance(lk, DriverLake):
            out[k] = lk.checksums()
    return out


def _spark_lake(spark: Spark, warehouse: str, lake: Any) -> Any:
    """The Spark reader of a table, for narrowing down and repair."""
    from .lake import DriverLake

    if not isinstance(lake, DriverLake):
        return lake
    from ..spark.verify import lake_table

    return lake_table(_session(spark), warehouse, lake.plan)


def _compare(src: Source, spark: Spark, warehouse: str, plan: Plan, lake: Any,
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
        lake = _spark_lake(spark, warehouse, lake)
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


def _repair(src: Source, spark: Spark, warehouse: str, plan: Plan, lake: Any,
            diffs: list[RowDifference], opts: VerifyOptions,
            progress: Callable[[str, int, int], None] | None) -> TableReport:
    """Apply the differing rows again from the source, then verify the table again."""
    from dataclasses import replace

    from ..spark.verify import repair

    keys = {"".join(frame_text(d.key[k]) for k in plan.table.key): d.key for d in diffs}
    n = repair(_session(spark), src, warehouse, plan, lake, keys)
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


__all__ = ["verify", "verify_table", "verify_tables", "narrow", "source_sums", "plan_tables",
           "lake_bounds",
           "VerifyOptions",
           "VerifyError", "ENGINES"]
