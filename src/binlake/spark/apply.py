"""Apply a micro-batch of CDC records to Delta tables (one per source table), exactly once.

Semantics follow Lakeflow/DLT AUTO CDC so a later move to it changes nothing for readers:

* keys: the primary key (or configured keys); an insert or update upserts, a delete deletes.
* order: `seq` (binlog position). Per key the newest change wins; a change not newer than
  what the target already holds is ignored, so replays and overlaps converge.
* tombstones: deleted keys are remembered (an auxiliary Delta table) with the delete's seq,
  so a late, older change never resurrects a deleted row. TRUNCATE leaves one table-wide
  marker that does the same for every key.
* primary-key changes: an update whose key changes deletes the old key and upserts the new.
* minimal row images: columns absent from an image keep their old values (a key-changing
  update under MINIMAL images carries only the columns its images hold).
* duplicates: rows with the same `seq` in one batch count once (at-least-once inputs).
* SCD type 1 (current state, with `_binlake_seq`/`_binlake_ts`) or type 2 (history rows with
  `__START_AT`/`__END_AT`; only changes to tracked columns open a new version).
* one Delta commit per batch and table: a single MERGE carrying Delta's `txnAppId` /
  `txnVersion`, so re-running a batch id commits nothing. Table creation and new columns
  are separate, idempotent commits.
* small files: every batch leaves a small file or two per table, and a MERGE reads all of a
  table's files, so the tables binlake creates let Delta compact them (`AUTO_COMPACT`).

Tables are independent Delta logs, so a batch applies them concurrently (`parallelism`),
each in its own Spark session because the txn settings are session-wide.

Table shapes come from the `specs` resolver; columns the shape has and the target lacks are
added before the MERGE. Records with op `ddl` (the schema history's description of a DDL
statement) evolve the Delta tables in `seq` order: rows before the statement are applied in
the old shape, then the statement (add/drop/rename/retype columns with the backfill MariaDB
did, create/drop/rename tables), then the rows after it; from then on the table's shape is
the one its last DDL stored. Policies and the exactly-once protocol: the `evolve` package docstring.
"""
from __future__ import annotations

import contextlib
import fnmatch
import itertools
import logging
import os
import queue
import signal
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterator, Mapping

from ..cdc.net import (
    BatchTable, NetChanges, batch_stats as net_stats, foldable, net_scd1, present_columns,
    table_rows,
)
from ..schema.spec import BINARY_TYPES, TableSpec
from .tables import (
    END_AT, KNOWN as _KNOWN, ROW_OPS, SEQ_COL, START_AT, TS_COL, ApplyError, Plan as _Plan,
    create_empty, delta_ref as _delta, is_delta as _is_delta, plan_table as _plan, quote_name as _q,
    seq_lit as _seq_lit, seq_sql as _seq_sql, table_path, target_schema, tombstone_path,
)
from .typing import (
    ZERO_DATE_POLICIES, arrow_schema, image_schema, spark_type, typed_value,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

TRUNCATE_COL = "_binlake_truncate"
BATCH_COL = "_binlake_batch"
SEQ_DDL = "struct<file_index: int, pos: bigint, inner: int, row: int>"

AUTO_COMPACT = {"delta.autoOptimize.autoCompact": "true"}
"""Table properties of the Delta tables binlake creates (with `ApplyConfig.auto_compact`).

Why: each micro-batch commits a small file or two per table, and a MERGE reads every file of
its target, so without compaction a sync running for days would slow down batch by batch.
Delta's auto compaction rewrites a table's small files (below
`spark.databricks.delta.autoCompact.minFileSize`, 16 MiB in binlake's sessions) after a
commit, as a commit of its own that carries no txn: replaying a batch still commits
nothing. Turn it off for one table with
`ALTER TABLE delta.`path` SET TBLPROPERTIES ('delta.autoOptimize.autoCompact' = 'false')`.
"""

CHECKPOINT_INTERVAL = 100
"""`delta.checkpointInterval` of the Delta tables binlake creates (Delta's default: 10).

Why: a sync commits to each table every micro-batch, and the commit that reaches the interval
also writes a Parquet checkpoint of the whole log before the batch returns: at 10, every tenth
batch of a busy table took a second or more longer, which set the lag's tail. At 100 readers
replay at most 99 small JSON commits after the last checkpoint. `ApplyConfig.checkpoint_interval`
sets it (None: Delta's default); tables that exist keep their own setting.
"""

log = logging.getLogger("binlake.apply")

_KILL_IN_MERGE = int(os.environ.get("BINLAKE_FAULT_KILL_IN_DRIVER_MERGE", "0") or 0)
"""Tests only: SIGKILL the job at the Nth MERGE in the driver, after its tombstones went in
and before the MERGE commits."""
_DRIVER_MERGES = itertools.count(1)

SpecSource = Mapping[tuple[str, str], TableSpec] | Callable[[str, str], "TableSpec | None"]


@dataclass(frozen=True)
class TableOptions:
    """How one source table lands in Delta."""

    keys: tuple[str, ...] | None = None
    """Merge keys; default the table's primary key."""
    scd_type: int = 1
    track_history: tuple[str, ...] | None = None
    """SCD2: only changes to these columns open a new version (default: all columns)."""
    track_history_except: tuple[str, ...] = ()
    columns: tuple[str, ...] | None = None
    """Column selection (keys are always kept); default all."""
    except_columns: tuple[str, ...] = ()


@dataclass
class ApplyConfig:
    """Where and how a stream of batches is applied."""

    target: str
    """Root folder: tables go to <target>/<schema>/<table>."""
    app_id: str = "binlake"
    """Delta txnAppId: one per stream (e.g. its checkpoint); batch ids are its versions."""
    tables: Mapping[str, TableOptions] = field(default_factory=dict)
    """Options by 'db.table' or fnmatch pattern ('db.*'); first match wins."""
    default: TableOptions = field(default_factory=TableOptions)
    include: str | None = None
    """Only apply tables matching 'db.t,db2.*' (default: every table in the batch)."""
    tombstones: bool = True
    change_log: bool = False
    """Also append the raw batch to <target>/_binlake/changes (append-only, exactly once)."""
    zero_dates: str = "null"
    parallelism: int = 4
    """Tables applied at once (each in its own Spark session; 1 = one after another)."""
    drop_columns: str = "drop"
    """DROP COLUMN: "drop" it from the Delta table too, or "keep" it (see the evolve package)."""
    retype: str = "rewrite"
    """A type change Delta cannot widen in place: "rewrite" the table with the values
    converted as MariaDB converts them (refused when that is not exact), or "error"."""
    unknown_defaults: str = "error"
    """ADD COLUMN whose value in existing rows binlake cannot evaluate (an expression,
    CURRENT_TIMESTAMP on DATETIME, AUTO_INCREMENT): "error", or "null" (leave them NULL)."""
    inserts_only: bool = False
    """Every row record of a batch inserts a key no other record of it has (a snapshot): a
    table's first write then takes the rows as they are, without folding them per key."""
    auto_compact: bool = True
    """Create tables with Delta's auto compaction on (`AUTO_COMPACT`); tables that exist
    keep their own setting."""

    checkpoint_interval: int | None = CHECKPOINT_INTERVAL
    """`delta.checkpointInterval` of the tables this config creates (None: Delta's 10)."""
    driver_writes: bool = False
    """MERGE the folded SCD1 tables of a driver-held batch in the driver, with delta-rs
    (`lake.merge`), instead of through Spark: a local master's choice (`SyncOptions.writer`).
    A table delta-rs does not write as Spark does, or a value the driver does not type,
    takes the Spark way, which commits the same rows."""

    def table_properties(self) -> dict[str, str]:
        """Properties of the Delta tables this config creates."""
        props = dict(AUTO_COMPACT) if self.auto_compact else {}
        if self.checkpoint_interval is not None:
            props["delta.checkpointInterval"] = str(self.checkpoint_interval)
        return props

    def options_for(self, schema: str, table: str) -> TableOptions:
        name = f"{schema}.{table}"
        if name in self.tables:
            return self.tables[name]
        for pattern, opts in self.tables.items():
            if fnmatch.fnmatchcase(name, pattern):
                return opts
        return self.default

    def wants(self, schema: str, table: str) -> bool:
        if not self.include:
            return True
        name = f"{schema}.{table}"
        return any(fnmatch.fnmatchcase(name, p.strip()) for p in self.include.split(","))


@dataclass
class ApplyResult:
    batch_id: int
    tables: list[str] = field(default_factory=list)
    """'schema.table' of every table the batch touched."""
    changes: int = 0
    """Records of the batch (row changes, truncate and ddl records)."""
    newest_ts: Any = None
    """Commit time (datetime) of the newest record, for the lag."""


def change_log_path(target: str) -> str:
    return f"{target.rstrip('/')}/_binlake/changes"


# -- entry point ---------------------------------------------------------------------------

def apply_batch(spark: "SparkSession", changes: "DataFrame", batch_id: int,
                config: ApplyConfig, specs: SpecSource,
                arrow: "pa.Table | None" = None) -> ApplyResult:
    """Apply one micro-batch (CDC schema, any order, any tables) to the Delta tables.

    Call it from `foreachBatch` with Spark's batch id, or with your own increasing ids.
    `arrow`: the same batch already on the driver (CDC_SCHEMA); its tables are then folded
    here (`apply_arrow`) and `changes` is only read for a batch the fold does not take.
    """
    from pyspark.sql import functions as F

    _check_config(config)
    held: pa.Table | None = None  # a DDL batch held by the driver
    if arrow is not None:
        stats = net_stats(arrow)
        if not (config.change_log or config.inserts_only or any(s.ddl for s in stats)):
            return apply_arrow(spark, arrow, batch_id, config, specs, stats)
        log.debug("batch applied the generic way", extra={
            "batch": batch_id, "why": "change log" if config.change_log else
            "snapshot" if config.inserts_only else "DDL"})
        if not (config.change_log or config.inserts_only):
            # Its rows are on the driver already: handed to Spark from there, nothing reads
            # the batch's binlog range again, and the stats need no Spark job.
            held = arrow
            changes = spark.createDataFrame(arrow)
    resolve = _resolver(specs)
    result = ApplyResult(batch_id)
    changes = changes.persist()  # every action would otherwise re-read the source
    try:
        if config.change_log:
            _append_change_log(spark, changes, batch_id, config)
        t0 = time.monotonic()
        if held is None:
            stats = _batch_stats(changes)
        log.debug("batch read and planned", extra={"batch": batch_id,
                                                   "seconds": round(time.monotonic() - t0, 2)})
        _refuse_statements(stats, config)
        result.changes = sum(int(r["n"]) for r in stats)
        result.newest_ts = max((r["ts"] for r in stats if r["ts"] is not None), default=None)
        rows = {(r["schema"], r["table"]): r for r in stats if r["rows"]}
        jobs: list[tuple[list[tuple[str, str]], Callable[["SparkSession"], None]]] = []
        grouped: set[tuple[str, str]] = set()
        if any(r["ddl"] for r in stats):
            from . import evolve

            steps = evolve.load_steps(changes, held)  # held: no Spark job
            if steps:
                wanted = {k for k in rows if config.wants(*k)}
                groups = evolve.make_groups(changes, steps, wanted, held)
                journal = evolve.open_journal(spark, config, batch_id)
                seq_type = changes.schema["seq"].dataType
                for g in groups:
                    grouped.update(g.keys)
                    ctx = evolve.Context(config, batch_id, resolve, seq_type, journal, changes,
                                         _apply_table,
                                         _last_segment(held, batch_id, config) if held is not None
                                         else None)
                    jobs.append((g.keys, lambda session, g=g, ctx=ctx:
                                 evolve.run_group(session, g, ctx)))
                    result.tables.extend(f"{s}.{t}" for s, t in g.keys if config.wants(s, t))
        for key in sorted(rows):
            schema, table = key
            if key in grouped or not config.wants(schema, table):
                continue
            spec = _shape(resolve, schema, table)
            part = changes.where((F.col("schema") == schema) & (F.col("table") == table))
            row = rows[key]
            trunc = tuple(row["trunc"]) if row["trunc"] is not None else None

            def job(session: "SparkSession", spec: TableSpec = spec, part: "DataFrame" = part,
                    trunc: tuple[int, ...] | None = trunc, deletes: bool = bool(row["deletes"]),
                    dels: bool = bool(row["dels"])) -> None:
                _apply_table(session, part, batch_id, config, spec, trunc, deletes,
                             row_deletes=dels)

            jobs.append(([key], job))
            result.tables.append(f"{schema}.{table}")
        try:
            _run_tables(spark, jobs, config)
        except Exception:
            if grouped:
                from . import evolve

                evolve.forget_caches(config.target)
            raise
    finally:
        changes.unpersist()
    return result


def _last_segment(held: "pa.Table", batch_id: int, config: ApplyConfig
                  ) -> Callable[..., None]:
    """For `evolve.run_group`: apply a table's rows after its last DDL of a driver-held batch
    (`after`: that DDL's seq) as a plain driver-held table is (`_apply_rows`: folded here when
    it can be), under the config's own app id as the generic way would."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def apply(spark: "SparkSession", schema: str, table: str, after: tuple[int, ...] | None,
              spec: TableSpec) -> None:
        rows = table_rows(held, schema, table)
        rows = rows.filter(pc.is_in(rows.column("op"), pa.array([*ROW_OPS, "truncate"])))
        if after is not None:
            seq = rows.column("seq").combine_chunks()
            seqs = zip(*(seq.field(i).to_pylist() for i in range(seq.type.num_fields)))
            rows = rows.filter(pa.array([x > after for x in seqs], pa.bool_()))
        stats = [s for s in net_stats(rows) if s.rows]
        if stats:
            # DDL may have moved or deleted this name's tombstones: look at them again
            _NEWEST_TOMBSTONE.pop(tombstone_path(config.target, schema, table), None)
            _apply_rows(spark, rows, batch_id, config, spec, stats[0])

    return apply


def apply_arrow(spark: "SparkSession", arrow: "pa.Table", batch_id: int, config: ApplyConfig,
                specs: SpecSource, stats: list[BatchTable] | None = None) -> ApplyResult:
    """Apply a batch held by the driver (CDC_SCHEMA, no DDL, no change log).

    Per table, the way is chosen and logged: an SCD1 table whose keys fold exactly as text
    (`cdc.net.foldable`) and that no tombstone of its could filter (`_no_late_change`) is
    folded here (`cdc.net.net_scd1`) and its net rows go to the MERGE as a small local
    DataFrame; any other table (SCD2, temporal or floating point keys, geometry or vector
    columns, a tombstone after the batch's first change) takes the generic way
    (`_apply_table`) on the batch's rows handed to Spark. Both ways commit the same rows.
    """
    stats = net_stats(arrow) if stats is None else stats
    resolve = _resolver(specs)
    result = ApplyResult(batch_id)
    _refuse_statements(stats, config)
    result.changes = sum(s.n for s in stats)
    result.newest_ts = max((s.ts for s in stats if s.ts is not None), default=None)
    jobs: list[tuple[list[tuple[str, str]], Callable[["SparkSession"], None]]] = []
    for s in sorted((s for s in stats if s.rows and s.table is not None),
                    key=lambda s: (s.schema, s.table or "")):
        schema, table = s.schema, str(s.table)
        if not config.wants(schema, table):
            continue
        spec = _shape(resolve, schema, table)

        def job(session: "SparkSession", spec: TableSpec = spec, s: BatchTable = s) -> None:
            # the table's rows cut from the batch only while its job runs (a copy each)
            _apply_rows(session, table_rows(arrow, s.schema, str(s.table)), batch_id, config,
                        spec, s)

        jobs.append(([(schema, table)], job))
        result.tables.append(f"{schema}.{table}")
    _run_tables(spark, jobs, config)
    return result


def fold_choice(spec: TableSpec, config: ApplyConfig) -> str | None:
    """None when a table's rows of a driver-held batch are folded on the driver; else why
    they take the generic way."""
    opts = config.options_for(spec.schema, spec.table)
    if opts.scd_type != 1:
        return f"SCD type {opts.scd_type}"
    plan = _plan(spec, opts)
    return foldable(spec, plan.keys, plan.cols)


_NEWEST_TOMBSTONE: dict[str, Any] = {}
"""Tombstone table path -> the newest seq it holds (None: none), as this process knows it."""


def _newest_tombstone(spark: "SparkSession", path: str, driver: bool = False) -> Any:
    """The newest seq of a tombstone table (one small job per table and process; `driver`:
    read by delta-rs, without a job, where it can)."""
    from pyspark.sql import functions as F

    if path in _NEWEST_TOMBSTONE:
        return _NEWEST_TOMBSTONE[path]
    if driver:
        newest = _newest_tombstone_in_driver(path)
        if newest is not False:
            _NEWEST_TOMBSTONE[path] = newest
            return newest
    newest = None
    if _is_delta(spark, path):
        row = spark.read.format("delta").load(path).agg(F.max(SEQ_COL).alias("m")).first()
        if row is not None and row["m"] is not None:
            newest = tuple(row["m"])
    _NEWEST_TOMBSTONE[path] = newest
    return newest


def _apply_rows(spark: "SparkSession", rows: "pa.Table", batch_id: int, config: ApplyConfig,
                spec: TableSpec, st: BatchTable) -> None:
    """One table of a driver-held batch: folded here when `fold_choice` allows, else the
    generic `_apply_table` on its rows."""
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    tomb_path = tombstone_path(config.target, spec.schema, spec.table)
    why = fold_choice(spec, config)
    net = None
    if why is None:
        opts = config.options_for(spec.schema, spec.table)
        plan = _plan(spec, opts)
        t0 = time.monotonic()
        net = net_scd1(rows, plan.keys, plan.cols, st.trunc)
        log.debug("table folded", extra={"table": f"{spec.schema}.{spec.table}",
                                         "changes": rows.num_rows, "keys": net.table.num_rows,
                                         "seconds": round(time.monotonic() - t0, 2)})
        if config.tombstones and net.min_seq is not None:
            newest = _newest_tombstone(spark, tomb_path, config.driver_writes)
            if newest is not None and newest > net.min_seq:
                why = "a tombstone after the batch's first change"
    if why is not None or net is None:
        log.debug("table applied the generic way",
                  extra={"table": f"{spec.schema}.{spec.table}", "why": why})
        _NEWEST_TOMBSTONE.pop(tomb_path, None)
        _apply_table(spark, spark.createDataFrame(rows), batch_id, config, spec, st.trunc,
                     st.deletes, row_deletes=st.dels)
        return
    del rows  # folded: the table's change records are not needed during its MERGE
    if config.driver_writes and _merge_in_driver(net, plan, spec, opts, st, config, batch_id):
        return
    app_id = config.app_id
    path = table_path(config.target, spec.schema, spec.table)
    frame = spark.createDataFrame(net.table)
    seq_type = frame.schema["_seq"].dataType
    schema = target_schema(spec, plan, opts, seq_type, config.zero_dates)
    zd = config.zero_dates
    typed = frame.select(
        *[typed_value(F.col(f"_k{j}"), spec.column(k), zd).alias(f"_k{j}")
          for j, k in enumerate(plan.keys)],
        "_seq", "_ts", "_kind", "_full",
        *[c for i, name in enumerate(plan.cols)
          for c in (typed_value(F.col(f"_c{i}"), spec.column(name), zd).alias(f"_c{i}"),
                    F.col(f"_p{i}"))])
    create = path not in _KNOWN and not _is_delta(spark, path)
    tombstones = config.tombstones and (net.deletes or st.trunc is not None)
    # `take`, not `filter`: no match leaves chunkless columns, which createDataFrame refuses
    deleted = net.table.select([*plan.K, "_seq", "_kind"]).take(
        pc.indices_nonzero(pc.equal(net.table.column("_kind"), "delete")))

    def append() -> None:  # beside the MERGE, from the net deletes alone, keys typed alike
        dels = spark.createDataFrame(deleted)
        keys = [typed_value(F.col(f"_k{j}"), spec.column(k), zd).alias(f"_k{j}")
                for j, k in enumerate(plan.keys)]
        _write_tombstones(spark, dels.select(*keys, "_seq", "_kind"), plan, tomb_path,
                          seq_type, st.trunc, config, batch_id, app_id, check_empty=False)

    beside = append if tombstones else None
    try:
        if create:  # a MERGE into no rows would only insert the net upserts
            _scd1_create(typed, plan, path, schema, config.table_properties(), batch_id, app_id,
                         beside=beside)
        else:
            ensure_table(spark, path, schema, config.table_properties())
            _scd1(spark, typed, plan, path, st.trunc, batch_id, app_id, materialized=True,
                  plain=present_columns(net), beside=beside)
        if tombstones:
            _tombstones_added(tomb_path, net, st.trunc)
    except Exception:
        _NEWEST_TOMBSTONE.pop(tomb_path, None)
        raise


def _tombstones_added(tomb_path: str, net: NetChanges, trunc: tuple[int, ...] | None) -> None:
    """Keep `_NEWEST_TOMBSTONE` current after a folded batch's tombstones went in."""
    newest = max([x for x in (_NEWEST_TOMBSTONE.get(tomb_path), net.max_delete_seq, trunc)
                  if x is not None])
    _NEWEST_TOMBSTONE[tomb_path] = tuple(newest)


def _merge_in_driver(net: NetChanges, plan: _Plan, spec: TableSpec, opts: TableOptions,
                     st: BatchTable, config: ApplyConfig, batch_id: int) -> bool:
    """`_apply_rows`'s folded MERGE and tombstone append, by delta-rs in the driver
    (`ApplyConfig.driver_writes`, `lake.merge`); a new table is written with the net
    upserts, as `_scd1_create` does. False, with nothing written, when the Spark way must
    take the table: it lacks a column, delta-rs does not write it as Spark would, its
    column types are not the ones the rows take, or a value is not typed exactly by Arrow."""
    from deltalake import DeltaTable
    from pyspark.sql.pandas.types import from_arrow_type

    from ..lake import merge as lake, write_new_table
    from ..lake.values import Untyped

    name = f"{spec.schema}.{spec.table}"
    path = table_path(config.target, spec.schema, spec.table)
    tomb_path = tombstone_path(config.target, spec.schema, spec.table)
    tombstones = config.tombstones and bool(net.deletes or st.trunc is not None)
    seq_type = from_arrow_type(net.table.schema.field("_seq").type)
    wanted = arrow_schema(target_schema(spec, plan, opts, seq_type, config.zero_dates))
    merge = lake.NetMerge(
        keys=plan.keys, cols=plan.cols, plain=present_columns(net), seq_col=SEQ_COL,
        ts_col=TS_COL, truncate=st.trunc,
        key_index={c: j for c in plan.cols if (j := plan.key_index(c)) is not None})
    create = not DeltaTable.is_deltatable(path)  # its first batch writes it, as `_scd1_create`
    why = None if create else lake.unwritable(path, wanted)
    if why is None and tombstones and DeltaTable.is_deltatable(tomb_path):
        why = lake.writable(tomb_path)
    source = None
    if why is None:
        try:
            source = lake.net_source(net.table, merge, {f.name: f.type for f in wanted},
                                     {c for c in plan.cols if spec.column(c).type in BINARY_TYPES})
        except Untyped as exc:
            why = str(exc)
    if why is not None or source is None:
        log.debug("table not merged in the driver", extra={"table": name, "why": why})
        return False
    t0 = time.monotonic()
    try:
        if tombstones:
            create_tombstones(None, config, spec, seq_type)
            if not _tombstoned(None, tomb_path, config.app_id, batch_id):
                schema = arrow_schema(_tombstone_schema(plan, seq_type, config.zero_dates))
                try:
                    lake.append_tagged(tomb_path, lake.tombstone_rows(
                        source, len(plan.keys), schema, st.trunc),
                        _tomb_tag(config.app_id, batch_id))
                except Exception:
                    forget_tombstone_batches(tomb_path)
                    raise
                _TOMBSTONED[(tomb_path, config.app_id)] = batch_id
        if _KILL_IN_MERGE and next(_DRIVER_MERGES) >= _KILL_IN_MERGE:
            log.warning("fault injection: SIGKILL in a driver MERGE", extra={"table": name})
            logging.shutdown()
            os.kill(os.getpid(), signal.SIGKILL)
        if create:
            write_new_table(path, wanted, lake.inserted_rows(source, merge, wanted).to_batches(),
                            properties=config.table_properties(), app_id=config.app_id,
                            version=batch_id)
            metrics: dict[str, Any] | None = {}
        else:
            metrics = lake.merge_net(path, source, merge, config.app_id, batch_id)
        if tombstones:
            _tombstones_added(tomb_path, net, st.trunc)
    except Exception:
        _NEWEST_TOMBSTONE.pop(tomb_path, None)
        raise
    compacted = lake.compact_if_small(path)
    log.debug("table merged in the driver",
              extra={"table": name, "keys": net.table.num_rows, "replay": metrics is None,
                     "new_table": create, "compacted": compacted,
                     "seconds": round(time.monotonic() - t0, 2)})
    return True


def _newest_tombstone_in_driver(path: str) -> Any:
    """`_newest_tombstone` by delta-rs; False when delta-rs cannot read the table."""
    from deltalake import DeltaTable

    from ..lake.merge import newest_struct

    try:
        if not DeltaTable.is_deltatable(path):
            return None
        return newest_struct(path, SEQ_COL)
    except Exception as exc:  # noqa: BLE001 - Spark reads what delta-rs cannot
        log.debug("tombstones not read in the driver", extra={"path": path, "why": str(exc)})
        return False


POLICIES = {"zero_dates": ZERO_DATE_POLICIES, "drop_columns": ("drop", "keep"),
            "retype": ("rewrite", "error"), "unknown_defaults": ("error", "null")}


def _shape(resolve: Callable[[str, str], TableSpec | None], schema: str,
           table: str) -> TableSpec:
    """A table's shape, or the error that names it (a batch is never applied without it)."""
    spec = resolve(schema, table)
    if spec is None:
        raise ApplyError(f"no table shape for {schema}.{table}",
                         hint="give `specs` an entry for it (schema history or "
                              "information_schema)")
    return spec


def _check_config(config: ApplyConfig) -> None:
    for name, allowed in POLICIES.items():
        if getattr(config, name) not in allowed:
            raise ApplyError(f"{name} must be one of {allowed}, not {getattr(config, name)!r}")


def _batch_stats(changes: "DataFrame") -> list[Any]:
    """Per (schema, table): last TRUNCATE seq, whether it has updates or deletes, whether it
    has deletes, row and ddl presence, record count, newest ts, and its first
    statement-logged DML (if any).

    One Spark job for everything the driver needs to plan the batch (each job costs a
    scheduling round trip that dominates small batches).
    """
    from pyspark.sql import functions as F

    op = F.col("op")
    stmt = op == "statement"
    return (changes.where(op.isin(*ROW_OPS, "truncate", "ddl", "statement"))
            .groupBy("schema", "table")
            .agg(F.max(F.when(op == "truncate", F.col("seq"))).alias("trunc"),
                 F.max(op.isin("update", "delete")).alias("deletes"),
                 F.max(op == "delete").alias("dels"),
                 F.max(op.isin(*ROW_OPS, "truncate")).alias("rows"),
                 F.max(op == "ddl").alias("ddl"),
                 F.count(F.when(~stmt, F.lit(1))).alias("n"),
                 F.max(F.when(~stmt, F.col("ts"))).alias("ts"),
                 F.min_by(F.struct("file", "pos", "query"), F.when(stmt, F.col("seq")))
                 .alias("statement"))
            .collect())


def _refuse_statements(stats: list[Any], config: ApplyConfig) -> None:
    """Statement-logged DML carries no rows: applying around it would silently diverge."""
    for row in stats:
        st = row["statement"]
        if st is not None and config.wants(row["schema"], row["table"] or "*"):
            raise ApplyError(
                f"{row['schema']}.{row['table']} was changed by a statement-logged DML at "
                f"{st['file']}:{st['pos']} ({(st['query'] or '')[:80]!r}); its rows are not "
                "in the binlog",
                hint="use binlog_format=ROW (MariaDB: avoid transaction-precise system-versioned "
                     "tables), then re-snapshot the table")


def _run_tables(spark: "SparkSession",
                jobs: list[tuple[list[tuple[str, str]], Callable[["SparkSession"], None]]],
                config: ApplyConfig) -> None:
    """Run each job (one table, or the tables a batch's DDL links); jobs touch disjoint
    Delta logs, so they may run concurrently."""

    def one(session: "SparkSession", job: tuple[list[tuple[str, str]], Any]) -> None:
        keys, fn = job
        try:
            t0 = time.monotonic()
            fn(session)
            log.debug("tables applied", extra={"tables": [".".join(k) for k in keys],
                                               "seconds": round(time.monotonic() - t0, 2)})
        except Exception:
            for schema, table in keys:
                _KNOWN.pop(table_path(config.target, schema, table), None)
                _KNOWN.pop(tombstone_path(config.target, schema, table), None)
                forget_tombstone_batches(tombstone_path(config.target, schema, table))
            raise

    if config.parallelism <= 1 or len(jobs) <= 1:
        for job in jobs:
            one(spark, job)
        return
    from concurrent.futures import ThreadPoolExecutor

    workers = min(config.parallelism, len(jobs))
    sessions: queue.SimpleQueue[SparkSession] = queue.SimpleQueue()
    for child in _child_sessions(spark, workers):
        sessions.put(child)

    def run(job: tuple[list[tuple[str, str]], Any]) -> None:
        session = sessions.get()  # a session is used by one thread at a time
        try:
            one(session, job)
        finally:
            sessions.put(session)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for f in [pool.submit(run, job) for job in jobs]:
            f.result()


_CHILDREN: "weakref.WeakKeyDictionary[Any, list[Any]]" = weakref.WeakKeyDictionary()


def _child_sessions(spark: "SparkSession", n: int) -> list["SparkSession"]:
    """`n` sessions sharing `spark`'s context and cache, made once and reused per batch."""
    children = _CHILDREN.setdefault(spark, [])
    while len(children) < n:
        children.append(spark.newSession())
    return children[:n]


def foreach_batch(config: ApplyConfig, specs: SpecSource) -> Callable[["DataFrame", int], None]:
    """A `writeStream.foreachBatch` handler: Spark's batch id becomes the Delta txn version."""

    def handle(batch: "DataFrame", batch_id: int) -> None:
        apply_batch(batch.sparkSession, batch, batch_id, config, specs)

    return handle


def _resolver(specs: SpecSource) -> Callable[[str, str], TableSpec | None]:
    if callable(specs):
        return specs  # type: ignore[return-value]
    return lambda schema, table: specs.get((schema, table))


# -- Delta helpers -------------------------------------------------------------------------

@contextlib.contextmanager
def delta_txn(spark: "SparkSession", app_id: str, version: int) -> Iterator[None]:
    """The next Delta write in this session carries txn(app_id, version); skipped if seen."""
    spark.conf.set("spark.databricks.delta.write.txnAppId", app_id)
    spark.conf.set("spark.databricks.delta.write.txnVersion", str(version))
    try:
        yield
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")


def ensure_table(spark: "SparkSession", path: str, schema: "StructType",
                 properties: Mapping[str, str] | None = None) -> None:
    """Create the Delta table if missing (with `properties`); add columns the spec has and
    the table lacks."""
    wanted = {f.name.lower() for f in schema.fields}
    if wanted <= _KNOWN.get(path, set()):
        return
    if not _is_delta(spark, path):
        create_empty(spark, path, schema, properties)
    have = {f.name.lower() for f in spark.read.format("delta").load(path).schema.fields}
    missing = [f for f in schema.fields if f.name.lower() not in have]
    if missing:
        cols = ", ".join(f"{_q(f.name)} {f.dataType.simpleString()}" for f in missing)
        spark.sql(f"ALTER TABLE {_delta(path)} ADD COLUMNS ({cols})")
    _KNOWN[path] = have | wanted


MATERIALIZE_CONF = "spark.databricks.delta.merge.materializeSource"


Beside = Callable[[], None] | None
"""A write run at the same time as a table's MERGE (its tombstone append), or None."""


def _merge(spark: "SparkSession", source: "DataFrame", sql: str, app_id: str,
           version: int, materialized: bool = False, beside: Beside = None) -> None:
    """Run a MERGE from `source` as txn (app_id, version).

    `materialized`: `source` is already computed (a local checkpoint), so Delta need not
    copy it again before its two passes (a Spark job saved). `beside`: run at the same time
    (`together`); the MERGE then runs in a sibling session of `spark`, whose txn settings
    the other write does not see.
    """
    # A global view: `source` may belong to another session than the one running the MERGE
    # (each table's MERGE runs in its own session so the txn settings do not collide).
    session = spark if beside is None else _sibling(spark)
    view = f"_binlake_src_{uuid.uuid4().hex}"
    source.createOrReplaceGlobalTempView(view)
    views = session.conf.get("spark.sql.globalTempDatabase", "global_temp")

    def run() -> None:
        if materialized:
            session.conf.set(MATERIALIZE_CONF, "none")
        try:
            with delta_txn(session, app_id, version):
                session.sql(sql.replace("{src}", f"{_q(str(views))}.{view}"))
        finally:
            if materialized:
                session.conf.unset(MATERIALIZE_CONF)

    try:
        together(run, beside)
    finally:
        session.catalog.dropGlobalTempView(view)


def together(first: Callable[[], None], beside: Beside) -> None:
    """Run `first` here and `beside` (if any) on a worker thread at the same time; return
    when both are done, raising `first`'s failure, else `beside`'s.

    What a table's tombstone append may run beside its MERGE: neither reads what the other
    writes (the MERGE's source is computed before; `_late_filter` drops only changes older
    than a tombstone, so tombstones that land before their MERGE commits change no replay).
    """
    if beside is None:
        first()
        return
    failed: list[BaseException] = []

    def run() -> None:
        try:
            beside()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="binlake-beside", daemon=True)
    thread.start()
    try:
        first()
    finally:
        thread.join()
    if failed:
        raise failed[0]


_SIBLINGS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _sibling(spark: "SparkSession") -> "SparkSession":
    """A session sharing `spark`'s context, with SQL settings of its own (made once)."""
    with _SIBLING_LOCK:
        sibling = _SIBLINGS.get(spark)
        if sibling is None:
            sibling = _SIBLINGS[spark] = spark.newSession()
        return sibling


_SIBLING_LOCK = threading.Lock()


def _append_change_log(spark: "SparkSession", changes: "DataFrame", batch_id: int,
                       config: ApplyConfig) -> None:
    from pyspark.sql import functions as F

    (changes.withColumn(BATCH_COL, F.lit(batch_id).cast("bigint"))
     .write.format("delta").mode("append").options(**config.table_properties())
     .option("txnAppId", config.app_id).option("txnVersion", batch_id)
     .save(change_log_path(config.target)))


# -- one table -----------------------------------------------------------------------------

def _apply_table(spark: "SparkSession", part: "DataFrame", batch_id: int, config: ApplyConfig,
                 spec: TableSpec, trunc: tuple[int, ...] | None, has_deletes: bool,
                 app_id: str | None = None, row_deletes: bool = False) -> None:
    """Apply one table's rows (all in `spec`'s shape) with one MERGE committed as txn
    (app_id, batch_id); `app_id` defaults to the config's (segments between DDL use their own).
    `row_deletes`: `part` holds deletes, so its tombstones are written without looking first.

    `part` may hold the same change twice (at-least-once inputs). SCD1 folds each key to its
    newest change, which duplicates do not alter, so it skips the shuffle that would drop
    them; SCD2 turns every change into a version and drops them first.
    """
    from pyspark.sql import functions as F

    app_id = app_id or config.app_id
    opts = config.options_for(spec.schema, spec.table)
    plan = _plan(spec, opts)
    path = table_path(config.target, spec.schema, spec.table)
    tomb_path = tombstone_path(config.target, spec.schema, spec.table)
    seq_type = part.schema["seq"].dataType
    schema = target_schema(spec, plan, opts, seq_type, config.zero_dates)
    if config.inserts_only and opts.scd_type == 1 and trunc is None and path not in _KNOWN \
            and not _is_delta(spark, path):
        _create_from_inserts(part, plan, path, schema, config, batch_id, app_id)
        return
    if opts.scd_type == 2:
        part = part.dropDuplicates(["seq"])
    events = _events(part, plan, config.zero_dates)
    if config.tombstones:
        events = _late_filter(spark, events, plan, tomb_path)
    # SCD1 into a table that does not exist yet: its first write creates it (one commit, no
    # empty table to create and read back first); anything else MERGEs into the table.
    create = opts.scd_type == 1 and path not in _KNOWN and not _is_delta(spark, path)
    if not create:
        ensure_table(spark, path, schema, config.table_properties())
    tombstones = config.tombstones and (has_deletes or trunc is not None)

    def append(net: "DataFrame") -> None:  # beside the MERGE: its source is computed by then
        _write_tombstones(spark, net, plan, tomb_path, seq_type, trunc, config, batch_id,
                          app_id, check_empty=not row_deletes)

    if opts.scd_type == 2:
        if tombstones:  # the MERGE source and the tombstones both derive from the events
            events = events.localCheckpoint()
        _scd2(spark, events, plan, path, trunc, batch_id, app_id,
              beside=append if tombstones else None)
    else:
        if trunc is not None:
            events = events.where(F.col("_seq") > _seq_lit(trunc))
        net = _scd1_net(events, plan)
        if tombstones:  # computed once for the MERGE and the tombstones
            net = net.localCheckpoint()
        beside = (lambda: append(net)) if tombstones else None
        if create:  # a MERGE into no rows would only insert the net upserts
            _scd1_create(net, plan, path, schema, config.table_properties(), batch_id, app_id,
                         beside=beside)
        else:
            _scd1(spark, net, plan, path, trunc, batch_id, app_id, materialized=tombstones,
                  beside=beside)


def _events(part: "DataFrame", plan: _Plan, zero_dates: str) -> "DataFrame":
    """Row changes -> one row per key event: (_k*, _seq, _ts, _kind, _reset, _c*, _p*).

    _kind is 'upsert' or 'delete'; a key-changing update yields a delete of the old key and
    an upsert of the new one. _p<i> says whether column i is in the image (minimal images).
    _reset marks events after which older column values no longer matter (insert, delete,
    key move).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    spec, keys, cols = plan.spec, plan.keys, plan.cols
    need = list(dict.fromkeys([*keys, *cols]))
    js = image_schema(spec, need)
    op = F.col("op")
    rows = part.where(op.isin(*ROW_OPS))
    if all(isinstance(f.dataType, StringType) for f in js.fields):
        # Every field is read as its JSON text: parse each image once, as a map, which
        # gives both the values (the same text a struct field would get) and which columns
        # the image holds (minimal images).
        text = "map<string,string>"
        x = rows.select(op, F.col("seq").alias("_seq"), F.col("ts").alias("_ts"),
                        F.from_json("before", text).alias("_b"),
                        F.from_json("after", text).alias("_a"))

        def raw(img: str, name: str) -> "Column":
            return F.col(img).getItem(name)

        def has(img: str, name: str) -> "Column":
            return F.coalesce((op == "update") & F.map_contains_key(img, name), F.lit(False))
    else:  # nested fields (geometry, vector) need the struct schema
        x = rows.select(
            op, F.col("seq").alias("_seq"), F.col("ts").alias("_ts"),
            F.from_json("before", js).alias("_b"), F.from_json("after", js).alias("_a"),
            F.when(op == "update", F.json_object_keys("before")).alias("_bk"),
            F.when(op == "update", F.json_object_keys("after")).alias("_ak"))

        def raw(img: str, name: str) -> "Column":
            return F.col(img).getField(name)

        def has(img: str, name: str) -> "Column":
            return F.coalesce(F.array_contains(f"{img}k", name), F.lit(False))

    def tv(img: str, name: str) -> "Column":
        return typed_value(raw(img, name), spec.column(name), zero_dates)

    def in_after(name: str) -> "Column":
        return has("_a", name)

    old_key = [tv("_b", k).alias(f"_k{j}") for j, k in enumerate(keys)]
    new_key = [F.when(op == "insert", tv("_a", k)).when(in_after(k), tv("_a", k))
               .otherwise(tv("_b", k)).alias(f"_k{j}") for j, k in enumerate(keys)]
    x = x.select("*", F.struct(*old_key).alias("_ok"), F.struct(*new_key).alias("_nk"))
    x = x.withColumn("_moved", (op == "update") & ~F.col("_ok").eqNullSafe(F.col("_nk")))
    kinds = (F.when(op == "delete", F.array(F.lit("delete")))
             .when(F.col("_moved"), F.array(F.lit("delete"), F.lit("upsert")))
             .otherwise(F.array(F.lit("upsert"))))
    x = x.withColumn("_kind", F.explode(kinds))
    is_del = F.col("_kind") == "delete"
    out = [F.when(is_del, F.col("_ok").getField(f"_k{j}"))
           .otherwise(F.col("_nk").getField(f"_k{j}")).alias(f"_k{j}")
           for j in range(len(keys))]
    out += [F.col("_seq"), F.col("_ts"), F.col("_kind"),
            (is_del | (op == "insert") | F.col("_moved")).alias("_reset")]
    for i, c in enumerate(cols):
        in_before = has("_b", c)
        value = F.when(F.col("_moved") & ~in_after(c), tv("_b", c)).otherwise(tv("_a", c))
        present = (op == "insert") | in_after(c) | (F.col("_moved") & in_before)
        out += [F.when(~is_del, value).alias(f"_c{i}"),
                F.when(~is_del, present).otherwise(F.lit(False)).alias(f"_p{i}")]
    return x.select(*out)


def _late_filter(spark: "SparkSession", events: "DataFrame", plan: _Plan,
                 tomb_path: str) -> "DataFrame":
    """Drop events older than their key's tombstone or the table's last TRUNCATE.

    Strictly older: an event at a tombstone's own seq is the delete that left it (or its
    duplicate), which the MERGE's seq guards make idempotent. So a batch's tombstones may land
    before its MERGE commits (`_merge`'s `beside`): its replay keeps its own deletes and
    drops only changes those deletes supersede anyway. Two anti-joins, no action: an
    equi-join on the keys and a tiny one on the markers.
    """
    from pyspark.sql import functions as F

    if not _is_delta(spark, tomb_path):
        return events
    tomb = spark.read.format("delta").load(tomb_path)
    keys = tomb.where(~F.col(TRUNCATE_COL)).select(
        *[F.col(_q(k)).alias(f"_t{j}") for j, k in enumerate(plan.keys)],
        F.col(SEQ_COL).alias("_tseq"))
    cond = [F.col(f"_k{j}") == F.col(f"_t{j}") for j in range(len(plan.keys))]
    events = events.join(keys, on=[*cond, F.col("_tseq") > F.col("_seq")], how="left_anti")
    markers = tomb.where(F.col(TRUNCATE_COL)).select(F.col(SEQ_COL).alias("_tseq"))
    return events.join(F.broadcast(markers), on=F.col("_tseq") > F.col("_seq"),
                       how="left_anti")


def create_tombstones(spark: "SparkSession | None", config: ApplyConfig, spec: TableSpec,
                      seq_type: Any) -> None:
    """Create a table's tombstone table, empty, unless it exists (or tombstones are off).

    Called where a snapshot creates the data table (beside its write), so the table's first
    deleting batch appends to it instead of creating it on its critical path: a creation
    costs a commit and Delta's first state reconstruction of the table, as much as a MERGE.
    `spark` None: created by delta-rs, beside a table the driver writes (no session needed).
    """
    if not config.tombstones:
        return
    path = tombstone_path(config.target, spec.schema, spec.table)
    if spark is None:
        from deltalake import DeltaTable

        exists = DeltaTable.is_deltatable(path)
    else:
        exists = _is_delta(spark, path)
    if path in _KNOWN or exists:
        return
    plan = _plan(spec, config.options_for(spec.schema, spec.table))
    schema = _tombstone_schema(plan, seq_type, config.zero_dates)
    if spark is None:
        from ..lake import write_new_table
        from .typing import arrow_schema

        write_new_table(path, arrow_schema(schema), [], properties=config.table_properties())
    else:
        create_empty(spark, path, schema, config.table_properties())
    _KNOWN[path] = {f.name.lower() for f in schema.fields}
    _NEWEST_TOMBSTONE[path] = None  # empty: what this process's batches would read
    _TOMBSTONED[(path, config.app_id)] = None


def _tombstone_schema(plan: _Plan, seq_type: Any, zero_dates: str) -> "StructType":
    from pyspark.sql.types import BooleanType, StructField, StructType

    return StructType([*[StructField(k, spark_type(plan.spec.column(k), zero_dates))
                         for k in plan.keys],
                       StructField(SEQ_COL, seq_type), StructField(TRUNCATE_COL, BooleanType())])


def _write_tombstones(spark: "SparkSession", net: "DataFrame", plan: _Plan, path: str,
                      seq_type: Any, trunc: tuple[int, ...] | None, config: ApplyConfig,
                      batch_id: int, app_id: str, check_empty: bool = True) -> None:
    """Append net deletes (and a TRUNCATE marker) with their seq: a blind append, one commit,
    one small file (`net` is small and usually materialized).

    `check_empty`: the batch may hold no net delete (updates only, where just a key move
    leaves one), so look first and commit nothing when there is none; without it (the batch
    deletes rows) the append goes ahead, empty at worst. The first append creates the table.
    Appending is cheaper than a MERGE; readers only ask "is there a tombstone after this
    seq", which duplicates do not change. `compact_tombstones` rewrites the table.
    The append carries no Delta txn (a txn costs every commit a snapshot job): the commit is
    tagged with the batch instead, and a replayed batch is recognised by `_tombstoned`.
    """
    from pyspark.sql import functions as F

    schema = _tombstone_schema(plan, seq_type, config.zero_dates)
    src = net.where(F.col("_kind") == "delete").select(
        *[F.col(f"_k{j}").alias(k) for j, k in enumerate(plan.keys)],
        F.col("_seq").alias(SEQ_COL), F.lit(False).alias(TRUNCATE_COL))
    if _tombstoned(spark, path, app_id, batch_id):
        return  # a replay: this batch's tombstones are in already
    if trunc is None and check_empty and src.isEmpty():
        return  # updates that moved no key and deleted nothing net: no commit at all
    if trunc is not None:
        marker = spark.range(1).select(
            *[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields[:len(plan.keys)]],
            _seq_lit(trunc).alias(SEQ_COL), F.lit(True).alias(TRUNCATE_COL))
        src = src.unionByName(marker)
    src = src.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])
    writer = src.coalesce(1).write.format("delta").mode("append")
    if path not in _KNOWN and not _is_delta(spark, path):
        # `delta.*` writer options become table properties when the write creates the table
        writer = writer.options(**config.table_properties())
    try:
        writer.option("userMetadata", _tomb_tag(app_id, batch_id)).save(path)
    except Exception:
        forget_tombstone_batches(path)  # landed or not: the history says, next time
        raise
    _TOMBSTONED[(path, app_id)] = batch_id
    _KNOWN[path] = {f.name.lower() for f in schema.fields}


_TOMBSTONED: dict[tuple[str, str], int | None] = {}
"""(tombstone table, app id) -> the newest batch id whose tombstones it holds (None: none),
as this process knows it: read from the table's history once, then kept by the appends."""

_TOMB_TAG = "binlake-tombstones"
_TOMB_HISTORY = 50
"""Commits of a tombstone table's history searched for the app's newest batch. Should they
all be other writers', the batch is appended again: duplicate tombstones change nothing."""


def forget_tombstone_batches(path: str) -> None:
    """Read a tombstone table's newest batches from its history again on its next append
    (after a failure, or to stand for a restart)."""
    for key in [k for k in _TOMBSTONED if k[0] == path]:
        _TOMBSTONED.pop(key, None)


def _tomb_tag(app_id: str, batch_id: int) -> str:
    return f"{_TOMB_TAG} {batch_id} {app_id}"


def _tombstoned(spark: "SparkSession | None", path: str, app_id: str, batch_id: int) -> bool:
    """Whether the tombstone table holds batch `batch_id` of `app_id` already (Delta's txn
    rule: a version at or below the newest one committed is a replay). `spark` None: the
    history is read by delta-rs."""
    key = (path, app_id)
    if key not in _TOMBSTONED:
        tags: list[str] = []
        if spark is None:
            from deltalake import DeltaTable as RsTable

            from ..lake.merge import user_metadata

            if path in _KNOWN or RsTable.is_deltatable(path):
                tags = user_metadata(path, _TOMB_HISTORY)
        elif path in _KNOWN or _is_delta(spark, path):
            from delta.tables import DeltaTable

            history = DeltaTable.forPath(spark, path).history(_TOMB_HISTORY)
            tags = [t for (t,) in history.select("userMetadata").collect() if t]
        _TOMBSTONED[key] = _newest_tagged(tags, app_id)
    known = _TOMBSTONED[key]
    return known is not None and batch_id <= known


def _newest_tagged(tags: list[str], app_id: str) -> int | None:
    """The newest batch id of `app_id` among tombstone commits' tags (None: none)."""
    newest = None
    for tag in tags:
        parts = tag.split(" ", 2)
        if len(parts) == 3 and parts[0] == _TOMB_TAG and parts[2] == app_id:
            newest = max(int(parts[1]), newest if newest is not None else -1)
    return newest


def compact_tombstones(spark: "SparkSession", config: ApplyConfig, schema: str,
                       table: str) -> None:
    """Rewrite a tombstone table: newest tombstone per key, none older than the last marker.

    Tombstones only guard against late events; call this from maintenance, not per batch.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    path = tombstone_path(config.target, schema, table)
    if not _is_delta(spark, path):
        return
    tomb = spark.read.format("delta").load(path)
    keys = [c for c in tomb.columns if c not in (SEQ_COL, TRUNCATE_COL)]
    last_marker = F.max(F.when(F.col(TRUNCATE_COL), F.col(SEQ_COL))).over(Window.partitionBy())
    newest = F.max(SEQ_COL).over(Window.partitionBy(*keys, TRUNCATE_COL))
    kept = (tomb.withColumn("_m", last_marker).withColumn("_n", newest)
            .where((F.col(SEQ_COL) == F.col("_n"))
                   & (F.col("_m").isNull() | (F.col(SEQ_COL) >= F.col("_m"))))
            .drop("_m", "_n").dropDuplicates())
    kept.localCheckpoint().write.format("delta").mode("overwrite").save(path)


# -- SCD type 1 ----------------------------------------------------------------------------

def _scd1_net(events: "DataFrame", plan: _Plan) -> "DataFrame":
    """Fold each key's events to its net change (the newest kind and seq, and per column
    the newest value present since the key's last reset), in one aggregation.

    Per column, the newest event that has the column or resets the key decides: a reset
    without the column (a delete, a key move whose images lack it) carries NULL and "absent",
    which is what "nothing present since the last reset" means.
    """
    from pyspark.sql import functions as F

    agg = [F.max("_seq").alias("_seq"), F.max_by("_ts", "_seq").alias("_ts"),
           F.max_by("_kind", "_seq").alias("_kind"), F.max("_reset").alias("_full")]
    for i in range(len(plan.cols)):
        order = F.when(F.col(f"_p{i}") | F.col("_reset"), F.col("_seq"))
        agg += [F.max_by(f"_c{i}", order).alias(f"_c{i}"),
                F.coalesce(F.max_by(f"_p{i}", order), F.lit(False)).alias(f"_p{i}")]
    return events.groupBy(*plan.K).agg(*agg)


def _scd1(spark: "SparkSession", net: "DataFrame", plan: _Plan, path: str,
          trunc: tuple[int, ...] | None, batch_id: int, app_id: str,
          materialized: bool = False, plain: Collection[int] = (), beside: Beside = None) -> None:
    """MERGE each key's net change (`_scd1_net`), with `beside` at the same time (`_merge`).

    `plain`: indexes of the columns that every net upsert carries (`present_columns`), so
    their UPDATE takes the source value without the per-row presence CASE.
    """
    on = " AND ".join(f"t.{_q(k)} <=> s._k{j}" for j, k in enumerate(plan.keys))
    sets, ins_cols, ins_vals = [], [], []
    for i, c in enumerate(plan.cols):
        j = plan.key_index(c)
        if j is not None:
            value = f"s._k{j}"
            sets.append(f"t.{_q(c)} = {value}")
        else:
            value = f"s._c{i}"
            sets.append(f"t.{_q(c)} = {value}" if i in plain else
                        f"t.{_q(c)} = CASE WHEN s._full OR s._p{i} THEN {value} ELSE t.{_q(c)} END")
        ins_cols.append(_q(c))
        ins_vals.append(value)
    sets += [f"t.{SEQ_COL} = s._seq", f"t.{TS_COL} = s._ts"]
    ins_cols += [SEQ_COL, TS_COL]
    ins_vals += ["s._seq", "s._ts"]
    sql = (f"MERGE INTO {_delta(path)} t USING {{src}} s ON {on} "
           f"WHEN MATCHED AND s._kind = 'delete' AND s._seq > t.{SEQ_COL} THEN DELETE "
           f"WHEN MATCHED AND s._kind = 'upsert' AND s._seq > t.{SEQ_COL} "
           f"THEN UPDATE SET {', '.join(sets)} "
           f"WHEN NOT MATCHED AND s._kind = 'upsert' "
           f"THEN INSERT ({', '.join(ins_cols)}) VALUES ({', '.join(ins_vals)})")
    if trunc is not None:
        sql += f" WHEN NOT MATCHED BY SOURCE AND t.{SEQ_COL} < {_seq_sql(trunc)} THEN DELETE"
    _merge(spark, net, sql, app_id, batch_id, materialized, beside)


def _create_from_inserts(part: "DataFrame", plan: _Plan, path: str, schema: "StructType",
                         config: ApplyConfig, batch_id: int, app_id: str) -> None:
    """A new table from inserts of distinct keys (`ApplyConfig.inserts_only`): their typed
    images, written by the commit that creates the table, and its tombstone table beside."""
    from pyspark.sql import functions as F

    js = image_schema(plan.spec, plan.cols)
    rows = part.where(F.col("op") == "insert").select(
        F.from_json("after", js).alias("_a"), F.col("seq"), F.col("ts"))
    cols = [typed_value(F.col("_a").getField(c), plan.spec.column(c), config.zero_dates)
            for c in plan.cols] + [F.col("seq"), F.col("ts")]
    out = rows.select(*[c.cast(f.dataType).alias(f.name) for c, f in zip(cols, schema.fields)])
    spark = part.sparkSession
    together(lambda: out.write.format("delta").mode("append").options(**config.table_properties())
             .option("txnAppId", app_id).option("txnVersion", batch_id).save(path),
             lambda: create_tombstones(spark, config, plan.spec, schema[SEQ_COL].dataType))
    _KNOWN[path] = {f.name.lower() for f in schema.fields}


def _scd1_create(net: "DataFrame", plan: _Plan, path: str, schema: "StructType",
                 properties: Mapping[str, str], batch_id: int, app_id: str,
                 beside: Beside = None) -> None:
    """What `_scd1` does to a table without rows, as the write that creates the table: the
    net upserts with the values its INSERT clause takes (a first snapshot, a new table).
    `beside` runs at the same time (the txn is the writer's option, not a session setting)."""
    from pyspark.sql import functions as F

    cols = []
    for i, c in enumerate(plan.cols):
        j = plan.key_index(c)
        cols.append(F.col(f"_k{j}" if j is not None else f"_c{i}"))
    cols += [F.col("_seq"), F.col("_ts")]
    out = net.where(F.col("_kind") == "upsert").select(
        *[c.cast(f.dataType).alias(f.name) for c, f in zip(cols, schema.fields)])
    # `delta.*` writer options become table properties when the write creates the table
    together(lambda: out.write.format("delta").mode("append").options(**properties)
             .option("txnAppId", app_id).option("txnVersion", batch_id).save(path), beside)
    _KNOWN[path] = {f.name.lower() for f in schema.fields}


# -- SCD type 2 ----------------------------------------------------------------------------

def _scd2(spark: "SparkSession", events: "DataFrame", plan: _Plan, path: str,
          trunc: tuple[int, ...] | None, batch_id: int, app_id: str,
          beside: Callable[["DataFrame"], None] | None = None) -> None:
    """Turn each key's events into versions and MERGE them; `beside` gets the net kinds per
    key and runs at the same time as the MERGE (`_merge`).

    The target's current version (END_AT null) is closed or updated in place (changes to
    untracked columns); every change of tracked columns inserts a new version. TRUNCATE
    closes every open version at its seq (a delete of every key).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    K, n = plan.K, len(plan.cols)
    if trunc is not None:  # a delete at the truncate's seq for every key the batch touches
        synthetic = events.select(*K).distinct().select(
            *K, _seq_lit(trunc).alias("_seq"), F.lit(None).cast("timestamp").alias("_ts"),
            F.lit("delete").alias("_kind"), F.lit(True).alias("_reset"),
            *[c for i in range(n) for c in (F.lit(None).alias(f"_c{i}"),
                                            F.lit(False).alias(f"_p{i}"))])
        synthetic = synthetic.select(*[synthetic[c].cast(events.schema[c].dataType).alias(c)
                                       for c in events.columns])
        events = events.unionByName(synthetic)
    net = events.groupBy(*K).agg(F.max("_seq").alias("_seq"),
                                 F.max_by("_kind", "_seq").alias("_kind"))

    target = spark.read.format("delta").load(path)
    current = target.where(F.col(END_AT).isNull()).select(
        *[F.col(_q(k)).alias(f"_k{j}") for j, k in enumerate(plan.keys)],
        *[F.col(_q(c)).alias(f"_cur{i}") for i, c in enumerate(plan.cols)],
        F.col(START_AT).alias("_cstart"))
    ev = (events.join(current, on=K, how="left")
          .where(F.col("_cstart").isNull() | (F.col("_seq") > F.col("_cstart"))))

    # Resolve full column values per event: newest present value since the last reset,
    # falling back to the current version when no reset happened yet in this batch.
    w_all = Window.partitionBy(*K).orderBy("_seq")
    run = w_all.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    ev = ev.withColumn("_grp", F.sum(F.col("_reset").cast("int")).over(run))
    w_grp = (Window.partitionBy(*K, "_grp").orderBy("_seq")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    for i in range(n):
        last = F.last(F.when(F.col(f"_p{i}"), F.struct(F.col(f"_c{i}").alias("v"))),
                      ignorenulls=True).over(w_grp)
        ev = ev.withColumn(f"_r{i}", F.when(last.isNotNull(), last.getField("v"))
                           .when(F.col("_grp") == 0, F.col(f"_cur{i}")))
    tracked = [plan.cols.index(c) for c in plan.tracked]
    trk = F.struct(*[F.col(f"_r{i}").alias(f"t{i}") for i in tracked])
    cur_trk = F.struct(*[F.col(f"_cur{i}").alias(f"t{i}") for i in tracked])
    prev_kind = F.lag("_kind").over(w_all)
    prev_trk = F.lag(trk).over(w_all)
    first_prev_kind = F.when(F.col("_cstart").isNotNull(), F.lit("upsert"))
    pk_ = F.coalesce(prev_kind, first_prev_kind)
    pt_ = F.when(prev_kind.isNull(), cur_trk).otherwise(prev_trk)
    is_up = F.col("_kind") == "upsert"
    ev = ev.withColumn("_new", is_up & (pk_.isNull() | (pk_ == "delete") | ~trk.eqNullSafe(pt_)))
    ev = ev.withColumn("_vid", F.sum(F.col("_new").cast("int")).over(run))

    # The target's current version: closed at the first new version or delete, and updated
    # in place by the untracked changes before that (vid 0).
    up0 = is_up & (F.col("_vid") == 0)
    close = F.when(F.col("_new") | (F.col("_kind") == "delete"), F.col("_seq"))
    updates = ev.where(F.col("_cstart").isNotNull()).groupBy(*K).agg(
        *[F.max_by(f"_r{i}", F.when(up0, F.col("_seq"))).alias(f"_r{i}") for i in range(n)],
        F.lit("update").alias("_action"), F.max(up0).alias("_has_up"),
        F.min("_cstart").alias("_start"), F.min(close).alias("_end"))
    # Every version opened in this batch: values of its last upsert, ended by the next
    # version or by a delete.
    versions = ev.where(F.col("_vid") > 0).groupBy(*K, "_vid").agg(
        *[F.max_by(f"_r{i}", F.when(is_up, F.col("_seq"))).alias(f"_r{i}") for i in range(n)],
        F.lit("insert").alias("_action"), F.lit(True).alias("_has_up"),
        F.min("_seq").alias("_start"),
        F.min(F.when(F.col("_kind") == "delete", F.col("_seq"))).alias("_del"))
    nxt = F.lead("_start").over(Window.partitionBy(*K).orderBy("_vid"))
    versions = versions.withColumn("_end", F.coalesce(F.col("_del"), nxt)).drop("_vid", "_del")
    source = updates.unionByName(versions)

    on = " AND ".join(["s._action = 'update'", f"t.{END_AT} IS NULL"]
                      + [f"t.{_q(k)} <=> s._k{j}" for j, k in enumerate(plan.keys)])
    sets, ins_cols, ins_vals = [], [], []
    for i, c in enumerate(plan.cols):
        j = plan.key_index(c)
        value = f"s._k{j}" if j is not None else f"s._r{i}"
        if j is None:
            sets.append(f"t.{_q(c)} = CASE WHEN s._has_up THEN s._r{i} ELSE t.{_q(c)} END")
        ins_cols.append(_q(c))
        ins_vals.append(value)
    sets.append(f"t.{END_AT} = s._end")
    ins_cols += [START_AT, END_AT]
    ins_vals += ["s._start", "s._end"]
    sql = (f"MERGE INTO {_delta(path)} t USING {{src}} s ON {on} "
           f"WHEN MATCHED THEN UPDATE SET {', '.join(sets)} "
           f"WHEN NOT MATCHED AND s._action = 'insert' "
           f"THEN INSERT ({', '.join(ins_cols)}) VALUES ({', '.join(ins_vals)})")
    if trunc is not None:
        sql += (f" WHEN NOT MATCHED BY SOURCE AND t.{END_AT} IS NULL "
                f"AND t.{START_AT} < {_seq_sql(trunc)} THEN UPDATE SET t.{END_AT} = {_seq_sql(trunc)}")
    _merge(spark, source, sql, app_id, batch_id,
           beside=(lambda: beside(net)) if beside is not None else None)
