"""Schema evolution of the Delta tables, driven by the batch's `op = 'ddl'` records.

A ddl record carries the schema history's description of one statement (`DdlChange.to_json`:
per table the change and the new shape); the statement's text says what the shape alone
cannot: which column became which, and the DEFAULT of new columns. `apply_batch` hands every
table a batch's DDL touches (with the tables renames link to it) to `run_group`, which works
through them in `seq` order: the rows before a statement (read in the shape they had), the
statement, the rows after it (in the new shape).

Policies (`ApplyConfig` fields in brackets):

* ADD COLUMN: the column is added. Rows already in Delta that were last written before the
  statement get what MariaDB gave the existing rows: the DEFAULT literal, the implicit default
  of a NOT NULL column without one (0, '', the first ENUM label, a zero date -- which then
  follows `zero_dates`), else NULL. SCD1: rows whose `_binlake_seq` is older than the
  statement. SCD2: every version alive at the statement (started before it, not ended
  before it); versions that ended earlier keep NULL, the column did not exist in their time.
  Rows written after the statement keep their binlog values (NULL included). A default binlake
  cannot evaluate exactly -- an expression, CURRENT_TIMESTAMP on a DATETIME (its time zone is
  not in the binlog) or with fractional seconds, AUTO_INCREMENT, a generated column, a
  statement it cannot parse -- stops the batch with an ApplyError [unknown_defaults="error"] or
  leaves the existing rows NULL ["null"]. A column changed to NOT NULL gets the implicit
  default in rows that held NULL (MariaDB's conversion, when strict mode let it run).
* DROP COLUMN: the column is dropped from the Delta table [drop_columns="drop"]. With "keep" it
  stays with the values it had (rows written later hold NULL or their old value); when a later
  column takes its name, the kept one is first renamed `<name>__dropped_<file>_<pos>`.
* RENAME COLUMN / CHANGE old new: renamed, values kept.
  DROP and RENAME need Delta column mapping: the first time a table needs it, it gets
  `delta.columnMapping.mode = name` (protocol reader 2 / writer 5); its readers must support it.
* Type changes: what Delta's type widening allows (integers to wider integers, DECIMAL or
  DOUBLE; FLOAT to DOUBLE; DECIMAL to a wider DECIMAL; DATE to DATETIME) is changed in place
  (`delta.enableTypeWidening`). Anything else rewrites the table once with the values converted
  as MariaDB converts them [retype="rewrite"]: numbers to numbers (half up, never wrapping),
  numbers, DATEs and DATETIMEs to text, text to numbers, DATE, DATETIME or bytes. Conversions
  binlake cannot do exactly (TIMESTAMP to or from anything else: time zones; floating point to
  exact numbers; bytes to text; ENUM/SET/BIT to anything else) and values that would not
  convert fail with an ApplyError naming the table, the statement's position and the column,
  before anything is written. retype="error" refuses every change that is not a widening.
* CREATE TABLE: the Delta table is created at once, empty, in the statement's shape (tables
  without a key are left to the row path, which refuses them). CREATE OR REPLACE of a table
  the lake has archives the old one first, as DROP does.
* DROP TABLE: the Delta folder moves to `<target>/_binlake/dropped/<schema>/<table>/<file
  index>-<pos>` and its tombstones are deleted: the live path mirrors the source (no table),
  the data stays readable there, and a later CREATE of the name starts a new table.
* RENAME TABLE / ALTER TABLE ... RENAME: the Delta folder and its tombstones move to the new
  name. Renamed out of the applied tables (`include`) counts as a drop, renamed into them as
  a create. Folder moves use the Hadoop FileSystem rename: atomic on local disks, HDFS, ABFS
  and GCS; not on S3, where a crash mid-move needs a manual look.
* A change of the key (its columns, their names or types) deletes the table's tombstones:
  late changes from before it are no longer filtered out.

Shapes: rows before a table's first DDL are read in the shape `specs` gives (when that is
already the statement's result, the statement's renames and added columns are undone for
them). Every DDL stores the table's new MySQL shape in the Delta table (`binlake.ddl.shape`,
with `binlake.ddl.position` = the statement's seq and index), and from then on that stored
shape is used instead of `specs`: exact as long as every DDL reaches the apply step.

Exactly once: the rows between two DDL of a table form a segment, MERGEd with its own Delta
txnAppId `<app_id>@<position of the DDL ending it>` (the last segment uses `app_id`). A DDL is
first planned into a list of operations (Delta commits and folder moves); any refusal happens
while planning, so nothing is written. The plan goes to the journal
(`<target>/_binlake/ddl_journal`: app_id, batch_id, item, payload), every commit of an
operation is tagged (commitInfo.userMetadata `binlake-ddl <position> <n>`) and folder moves
check both ends, so a replay of the batch id skips what is done and resumes a half-done DDL
after its last operation (a later DDL's plan, or a final `done` record, says a DDL is
complete). Segments ending at a DDL that was started are skipped. A late batch (a new batch
id carrying older DDL) changes nothing: a DDL the journal shows planned by another batch is
not applied again, and each table's stored position says which DDL it already has.
"""
from __future__ import annotations

import base64
import bisect
import contextlib
import datetime as dt
import json
import re
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..schema import ddl as sqlddl
from .apply import (
    END_AT, ROW_OPS, SEQ_COL, START_AT, TS_COL, ApplyConfig, ApplyError, _delta, _is_delta,
    _KNOWN, _plan, _q, _seq_lit, _seq_sql, table_path, target_schema, tombstone_path,
)
from .typing import (
    BINARY_TYPES, INTEGER_TYPES, TEMPORAL_TYPES, TEXT_TYPES, ColumnSpec, TableSpec, spark_type,
    typed_value,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType

MARK_PROP = "binlake.ddl.position"
SHAPE_PROP = "binlake.ddl.shape"
TAG_CONF = "spark.databricks.delta.commitInfo.userMetadata"
INTERNAL = (SEQ_COL, TS_COL, START_AT, END_AT)
JOURNAL_DDL = "app_id string, batch_id bigint, item string, payload string, at timestamp"

Key = tuple[str, str]
Seq = tuple[int, ...]


def journal_path(target: str) -> str:
    return f"{target.rstrip('/')}/_binlake/ddl_journal"


def dropped_path(target: str, schema: str, table: str, seq: Seq) -> str:
    return f"{target.rstrip('/')}/_binlake/dropped/{schema}/{table}/{seq[0]}-{seq[1]}"


def _text(mark: Seq) -> str:
    return ".".join(str(x) for x in mark)


# -- shapes ----------------------------------------------------------------------------------

def _col_json(c: ColumnSpec) -> dict[str, Any]:
    d: dict[str, Any] = {"name": c.name, "type": c.type}
    if c.unsigned:
        d["unsigned"] = True
    if c.precision is not None:
        d["precision"] = c.precision
    if c.scale is not None:
        d["scale"] = c.scale
    if c.fsp:
        d["fsp"] = c.fsp
    if not c.nullable:
        d["nullable"] = False
    return d


def _col_from_json(c: dict[str, Any]) -> ColumnSpec:
    return ColumnSpec(c["name"], c["type"], bool(c.get("unsigned")), c.get("precision"),
                      c.get("scale"), int(c.get("fsp") or 0), bool(c.get("nullable", True)))


def shape_json(spec: TableSpec) -> str:
    """A TableSpec as JSON (what `binlake.ddl.shape` holds)."""
    return json.dumps({"schema": spec.schema, "table": spec.table,
                       "columns": [_col_json(c) for c in spec.columns],
                       "primary_key": list(spec.primary_key)},
                      ensure_ascii=False, separators=(",", ":"))


def shape_from_json(text: str) -> TableSpec:
    d = json.loads(text)
    return TableSpec(d["schema"], d["table"], tuple(_col_from_json(c) for c in d["columns"]),
                     tuple(d.get("primary_key") or ()))


def spec_from_entry(entry: dict[str, Any]) -> TableSpec | None:
    """A ddl record's table entry (`_change_json`) -> the table's new shape (None: dropped)."""
    if entry.get("columns") is None:
        return None
    cols = []
    for c in entry["columns"]:
        parsed = _parse_type(entry, c)
        kind = "json" if c.get("json") else parsed.type
        if kind in TEXT_TYPES and str(c.get("charset") or "").lower() == "binary":
            kind = {"char": "binary", "varchar": "varbinary"}.get(kind, "blob")
        if kind in ("uuid", "inet6", "inet4"):
            kind = "binary"
        precision = parsed.length if kind == "bit" else parsed.precision
        cols.append(ColumnSpec(c["name"], kind, bool(parsed.unsigned), precision, parsed.scale,
                               parsed.fsp or 0, bool(c.get("nullable", True))))
    return TableSpec(entry["schema"], entry["table"], tuple(cols),
                     tuple(entry.get("primary_key") or ()))


def _parse_type(entry: dict[str, Any], c: dict[str, Any]) -> sqlddl.ColumnSpec:
    try:
        return sqlddl.parse_column_type(c["type"], c["name"])
    except sqlddl.DdlParseError as exc:
        raise ApplyError(f"{entry['schema']}.{entry['table']}: a ddl record gives column "
                         f"{c['name']!r} the type {c['type']!r}, which binlake cannot read: "
                         f"{exc}") from None


def _labels(step: "DdlStep", name: str) -> tuple[str, ...]:
    for c in step.entry.get("columns") or ():
        if c["name"].lower() == name.lower():
            return tuple(_parse_type(step.entry, c).values or ())
    return ()


# -- ddl records -> steps ----------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DdlStep:
    """One table entry of one DDL statement."""

    seq: Seq
    k: int
    """The entry's index in the statement's `tables` (a statement may touch several)."""
    kind: str
    """The statement kind (alter_table, create_table, rename_table, ...)."""
    change: str
    """create | alter | drop | rename | refetch | drift"""
    key: Key
    old_key: Key | None
    entry: dict[str, Any]
    statement: str
    default_schema: str
    ts: int | None
    """The statement's time (epoch seconds)."""
    file: str | None
    pos: int

    @property
    def mark(self) -> Seq:
        return (*self.seq, self.k)

    @property
    def src(self) -> Key:
        return self.old_key or self.key

    @property
    def where(self) -> str:
        return f"{self.key[0]}.{self.key[1]} at {self.file}:{self.pos} ({_clip(self.statement)})"


def _clip(s: str, n: int = 100) -> str:
    s = " ".join(s.split())
    return repr(s if len(s) <= n else s[:n] + "...")


def load_steps(changes: "DataFrame") -> list[DdlStep]:
    """The batch's ddl records -> steps in seq order (only the entries of tables the
    records are for: a source's table filter applies to them as to rows)."""
    from pyspark.sql import functions as F

    rows = (changes.where(F.col("op") == "ddl")
            .select("schema", "table", "seq", F.unix_timestamp("ts").alias("_epoch"), "query",
                    "ddl", "file", "pos").collect())
    keys: dict[Seq, set[Key]] = {}
    docs: dict[Seq, tuple[Any, dict[str, Any]]] = {}
    for r in rows:
        if r["ddl"] is None:
            continue
        seq = tuple(r["seq"])
        keys.setdefault(seq, set()).add((r["schema"], r["table"]))
        if seq not in docs:
            docs[seq] = (r, json.loads(r["ddl"]))
    steps = []
    for seq, (r, doc) in docs.items():
        if doc.get("kind") in ("create_sequence", "drop_sequence"):
            continue
        for k, e in enumerate(doc.get("tables") or ()):
            if e.get("change") not in ("create", "alter", "drop", "rename", "refetch", "drift"):
                continue  # truncate: its rows come as op 'truncate'
            key = (e["schema"], e["table"])
            old = (e["old_schema"], e["old_table"]) if e.get("old_table") is not None else None
            if old == key:
                old = None
            if key not in keys[seq] and (old is None or old not in keys[seq]):
                continue
            steps.append(DdlStep(seq, k, str(doc.get("kind") or ""), e["change"], key, old, e,
                                 doc.get("statement") or r["query"] or "",
                                 doc.get("schema") or r["schema"], r["_epoch"], r["file"],
                                 r["pos"]))
    steps.sort(key=lambda s: s.mark)
    return steps


@dataclass
class Group:
    """Tables a batch's DDL links (renames join two), applied together in seq order."""

    keys: list[Key]
    steps: list[DdlStep]
    cuts: dict[Key, list[Seq]]
    """Per table: the seqs of its DDL; rows between two cuts form one segment."""
    segments: dict[tuple[Key, int], tuple[Seq | None, bool]] = field(default_factory=dict)
    """(table, segment) -> (last TRUNCATE seq, has deletes), for segments with rows."""


def make_groups(changes: "DataFrame", steps: list[DdlStep], row_keys: set[Key]) -> list[Group]:
    """Link tables through their DDL, then count rows per segment (one Spark job)."""
    from pyspark.sql import functions as F

    parent: dict[Key, Key] = {}

    def find(k: Key) -> Key:
        while parent.setdefault(k, k) != k:
            k = parent[k]
        return k

    for s in steps:
        parent[find(s.src)] = find(s.key)
    members: dict[Key, list[Key]] = {}
    for k in sorted(parent):
        members.setdefault(find(k), []).append(k)
    groups = []
    for keys in members.values():
        kset = set(keys)
        gsteps = [s for s in steps if s.key in kset]
        cuts = {k: sorted({s.seq for s in gsteps if k in (s.src, s.key)}) for k in keys}
        groups.append(Group(keys, gsteps, cuts))
    by_key = {k: g for g in groups for k in g.keys if k in row_keys}
    if by_key:
        seg: Any = None
        cond: Any = None
        for (schema, table), g in by_key.items():
            m = (F.col("schema") == schema) & (F.col("table") == table)
            idx = sum(((F.col("seq") > _seq_lit(c)).cast("int") for c in g.cuts[(schema, table)]),
                      F.lit(0))
            seg = F.when(m, idx) if seg is None else seg.when(m, idx)
            cond = m if cond is None else cond | m
        op = F.col("op")
        for r in (changes.where(op.isin(*ROW_OPS, "truncate") & cond)
                  .groupBy("schema", "table", seg.alias("_seg"))
                  .agg(F.max(F.when(op == "truncate", F.col("seq"))).alias("trunc"),
                       F.max(op.isin("update", "delete")).alias("deletes"))
                  .collect()):
            key = (r["schema"], r["table"])
            trunc = tuple(r["trunc"]) if r["trunc"] is not None else None
            by_key[key].segments[(key, r["_seg"])] = (trunc, bool(r["deletes"]))
    return groups


# -- the journal -------------------------------------------------------------------------------

_JOURNALS: dict[str, list[tuple[str, int, str, str | None]]] = {}
"""Journal rows this process read or wrote, by journal path (one writer per target, as for
`_KNOWN`); dropped when a batch fails."""
_DETAILS: dict[str, tuple[dict[str, str], int, int]] = {}
"""DESCRIBE DETAIL of tables this process read, until it changes them."""


def open_journal(spark: "SparkSession", config: ApplyConfig, batch_id: int) -> dict[str, Any]:
    """What earlier runs of this batch id recorded (`items`: item -> payload), and the DDL
    other batches applied (`elsewhere`: positions); creates the journal."""
    path = journal_path(config.target)
    rows = _JOURNALS.get(path)
    if rows is None:
        if not _is_delta(spark, path):
            spark.createDataFrame([], JOURNAL_DDL).write.format("delta").mode("ignore").save(path)
            _KNOWN[path] = set()
            rows = []
        else:
            rows = [(r[0], r[1], r[2], r[3]) for r in spark.read.format("delta").load(path)
                    .select("app_id", "batch_id", "item", "payload").collect()]
        _JOURNALS[path] = rows
    own = [r for r in rows if (r[0], r[1]) == (config.app_id, batch_id)]
    return {"path": path, "items": {r[2]: r[3] for r in own},
            "elsewhere": {r[2][5:] for r in rows if r[2].startswith("plan:")
                          and (r[0], r[1]) != (config.app_id, batch_id)}}


def _record(spark: "SparkSession", ctx: "Context", item: str, payload: str | None = None) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    row = (ctx.config.app_id, ctx.batch_id, item, payload)
    (spark.createDataFrame([(*row, now)], JOURNAL_DDL)
     .write.format("delta").mode("append").save(ctx.journal["path"]))
    ctx.journal["items"][item] = payload
    _JOURNALS.setdefault(ctx.journal["path"], []).append(row)


def forget_caches(target: str) -> None:
    """After a failure: read the journal and the tables' details again next time."""
    _JOURNALS.pop(journal_path(target), None)
    _DETAILS.clear()


# -- one group ---------------------------------------------------------------------------------

@dataclass
class Context:
    config: ApplyConfig
    batch_id: int
    resolve: Callable[[str, str], TableSpec | None]
    seq_type: Any
    journal: dict[str, Any]
    changes: "DataFrame"
    apply_rows: Callable[..., None]
    """apply._apply_table(spark, part, batch_id, config, spec, trunc, deletes, app_id)"""


@dataclass
class _State:
    """What the run knows of the Delta table at one name."""

    key: Key
    path: str
    tomb: str
    exists: bool = False
    mark: Seq | None = None
    spec: TableSpec | None = None
    """The shape this table's rows have now (stored by its last DDL, or from `specs`)."""
    resolved: bool = False


def _props(spark: "SparkSession", path: str) -> tuple[dict[str, str], int, int]:
    """(properties, min reader version, min writer version) of a Delta table."""
    got = _DETAILS.get(path)
    if got is None:
        d = spark.sql(f"DESCRIBE DETAIL {_delta(path)}").first()
        got = _DETAILS[path] = (dict(d["properties"] or {}), int(d["minReaderVersion"]),
                                int(d["minWriterVersion"]))
    return dict(got[0]), got[1], got[2]


def run_group(spark: "SparkSession", group: Group, ctx: Context) -> None:
    """Apply a group's rows and DDL in seq order (see the module notes)."""
    from pyspark.sql import functions as F

    cfg = ctx.config
    states: dict[Key, _State] = {}

    def state(key: Key) -> _State:
        st = states.get(key)
        if st is None:
            st = states[key] = _State(key, table_path(cfg.target, *key),
                                      tombstone_path(cfg.target, *key))
            if _is_delta(spark, st.path):
                st.exists = True
                props = _props(spark, st.path)[0]
                if MARK_PROP in props:
                    st.mark = tuple(json.loads(props[MARK_PROP]))
                if SHAPE_PROP in props:
                    st.spec, st.resolved = shape_from_json(props[SHAPE_PROP]), True
        return st

    def shape(key: Key) -> TableSpec | None:
        st = state(key)
        if not st.resolved:
            st.resolved = True
            spec = ctx.resolve(*key)
            st.spec = _undo_first(spec, group.steps, key) if spec is not None else None
        return st.spec

    applied: dict[Key, int] = {}

    def flush(key: Key, upto: int) -> None:
        """Apply the key's segments below `upto` not applied yet."""
        cuts = group.cuts.get(key, [])
        for s in range(applied.get(key, 0), upto):
            stats = group.segments.get((key, s))
            if stats is None:
                continue
            end = cuts[s] if s < len(cuts) else None
            if end is not None and _segment_done(key, end):
                continue
            spec = shape(key)
            if spec is None:
                raise ApplyError(f"no table shape for {key[0]}.{key[1]}",
                                 hint="give `specs` an entry for it (schema history or "
                                      "information_schema)")
            part = ctx.changes.where((F.col("schema") == key[0]) & (F.col("table") == key[1]))
            if s > 0:
                part = part.where(F.col("seq") > _seq_lit(cuts[s - 1]))
            if end is not None:
                part = part.where(F.col("seq") < _seq_lit(end))
            app = cfg.app_id if end is None else f"{cfg.app_id}@{_text(end)}"
            ctx.apply_rows(spark, part.dropDuplicates(["seq"]), ctx.batch_id, cfg, spec,
                           stats[0], stats[1], app)
            state(key).exists = True
        applied[key] = max(applied.get(key, 0), upto)

    items = ctx.journal["items"]

    def started(i: int) -> bool:
        """Step i was begun by an earlier run of this batch id (steps run in order, so a
        later step's plan means this one finished), or applied by another batch."""
        return any(f"plan:{_text(s.mark)}" in items or f"done:{_text(s.mark)}" in items
                   or _text(s.mark) in ctx.journal["elsewhere"] for s in group.steps[i:])

    def _segment_done(key: Key, end: Seq) -> bool:
        for i, s in enumerate(group.steps):
            if s.seq == end and key in (s.src, s.key) and started(i):
                return True
        mark = state(key).mark
        return mark is not None and mark >= (*end, 0)

    last = None
    for i, step in enumerate(group.steps):
        for key in dict.fromkeys((step.src, step.key)):
            flush(key, bisect.bisect_left(group.cuts[key], step.seq) + 1)
        mt = _text(step.mark)
        finished = (f"done:{mt}" in items or mt in ctx.journal["elsewhere"]
                    or started(i + 1))
        if _run_step(spark, step, ctx, state, shape, finished):
            last = step
    for key in group.keys:
        flush(key, len(group.cuts.get(key, [])) + 1)
    if last is not None:  # spares a replay the look at the tables' history
        _record(spark, ctx, f"done:{_text(last.mark)}")


def _undo_first(spec: TableSpec, steps: list[DdlStep], key: Key) -> TableSpec:
    """`specs` may give the shape after the batch's first DDL of the table (information_schema
    read later): then undo that statement's renames and added columns for the rows before it."""
    first = next((s for s in steps if key in (s.src, s.key)), None)
    if first is None or first.src != key or first.change not in ("alter", "rename"):
        return spec
    new = spec_from_entry(first.entry)
    if new is None or [n.lower() for n in spec.names] != [n.lower() for n in new.names]:
        return spec
    parsed = _alter_actions(first)
    if parsed is None:
        return spec
    names = {c.name.lower(): c.name for c in spec.columns}  # post name -> name before
    gone: set[str] = set()
    for action in reversed(parsed[0]):
        op = action[0]
        if op == "add_columns":
            gone.update(s.name.lower() for s in action[1])
        elif op in ("change", "rename_column"):
            old, new_name = (action[1], action[2].name) if op == "change" else action[1:3]
            for post, cur in names.items():
                if cur.lower() == new_name.lower():
                    names[post] = old
    cols = tuple(replace(c, name=names[c.name.lower()]) for c in spec.columns
                 if c.name.lower() not in gone)
    pk = tuple(names.get(k.lower(), k) for k in spec.primary_key)
    return TableSpec(spec.schema, spec.table, cols, pk)


def _run_step(spark: "SparkSession", step: DdlStep, ctx: Context,
              state: Callable[[Key], _State], shape: Callable[[Key], TableSpec | None],
              finished: bool) -> bool:
    """Plan (or resume) and execute one step; True when it ran operations."""
    items = ctx.journal["items"]
    mt = _text(step.mark)
    new = spec_from_entry(step.entry)
    ran = False
    if not finished:
        if f"plan:{mt}" in items:
            ops, resume = json.loads(items[f"plan:{mt}"]), True
        else:
            ops, resume = _plan_step(spark, step, new, ctx, state, shape), False
            if ops:
                _record(spark, ctx, f"plan:{mt}", json.dumps(ops))
        if ops:
            _execute(spark, step, ops, ctx, resume)
            ran = True
    # What the tables are now (each name's table moved, created or archived).
    src, dst = state(step.src), state(step.key)
    for st in ((src,) if src is dst else (src, dst)):
        _KNOWN.pop(st.path, None)
        st.exists = _is_delta(spark, st.path)
    if step.src != step.key:
        src.spec, src.resolved, src.mark = None, True, None
    if step.change == "drop":
        dst.spec, dst.resolved, dst.mark = None, True, None
        return ran
    if new is not None:
        dst.spec, dst.resolved = new, True
        if dst.exists and (dst.mark is None or dst.mark < step.mark):
            dst.mark = step.mark
    return ran


# -- planning ----------------------------------------------------------------------------------

def _at_or_after(mark: Seq | None, step: DdlStep) -> bool:
    return mark is not None and mark >= step.mark


def _plan_step(spark: "SparkSession", step: DdlStep, new: TableSpec | None, ctx: Context,
               state: Callable[[Key], _State],
               shape: Callable[[Key], TableSpec | None]) -> list[dict[str, Any]]:
    cfg = ctx.config
    src, dst = state(step.src), state(step.key)
    want_src, want_dst = cfg.wants(*step.src), cfg.wants(*step.key)
    moved = step.src != step.key
    if step.change == "drop" or (moved and want_src and not want_dst):
        if not want_src or not src.exists or _at_or_after(src.mark, step):
            return []
        return _archive(cfg, src, step)
    if not want_dst:
        return []
    if step.change == "create" or not want_src or not src.exists:
        if dst.exists and _at_or_after(dst.mark, step):
            return []  # created (or moved here) by an earlier batch
        return _create(cfg, dst, step, new, ctx.seq_type)
    if _at_or_after(src.mark, step):
        return []  # a late batch: the table has this DDL already
    ops = _columns(spark, step, src, shape(step.src), new, ctx)
    if moved:
        if dst.exists:
            ops += _archive(cfg, dst, step)
        ops += [{"op": "move", "from": src.path, "to": dst.path},
                {"op": "move", "from": src.tomb, "to": dst.tomb}]
    return ops


def _archive(cfg: ApplyConfig, st: _State, step: DdlStep) -> list[dict[str, Any]]:
    return [{"op": "move", "from": st.path, "to": dropped_path(cfg.target, *st.key, step.seq)},
            {"op": "delete", "path": st.tomb}]


def _create(cfg: ApplyConfig, dst: _State, step: DdlStep, new: TableSpec | None,
            seq_type: Any) -> list[dict[str, Any]]:
    if new is None:
        return []
    opts = cfg.options_for(*step.key)
    try:
        plan = _plan(new, opts)
    except ApplyError:
        return []  # no key: nothing to maintain (rows of it fail on the row path)
    ops = _archive(cfg, dst, step) if dst.exists else []
    schema = target_schema(new, plan, opts, seq_type, cfg.zero_dates)
    ops.append({"op": "create", "path": dst.path, "schema": schema.json(),
                "props": _mark_props(step, new)})
    return ops


def _mark_props(step: DdlStep, new: TableSpec) -> dict[str, str]:
    return {MARK_PROP: json.dumps(list(step.mark)), SHAPE_PROP: shape_json(new)}


@dataclass
class Added:
    """A column the statement adds, as written (None: not known from the statement)."""

    name: str
    spec: sqlddl.ColumnSpec | None = None
    default: list[sqlddl.Tok] | None = None
    """The DEFAULT clause's tokens; None when there is none."""


@dataclass
class ColumnDiff:
    renames: dict[str, str] = field(default_factory=dict)
    """Name before -> name after, for columns that keep their values."""
    dropped: list[str] = field(default_factory=list)
    added: dict[str, Added] = field(default_factory=dict)
    """By the new name."""


def analyze(step: DdlStep, old_names: list[str], new: TableSpec) -> ColumnDiff:
    """Which old column became which new one: the statement's ALTER actions replayed on the
    old names (as the schema tracker applied them), else by name."""
    actions = _alter_actions(step) if step.kind == "alter_table" else None
    fresh = [[o.lower(), o, o, None] for o in old_names]  # [orig key, orig name, name, Added]
    cols = [list(e) for e in fresh]
    if actions is not None:
        stmt_actions, defaults = actions

        def find_old(name: str) -> int | None:
            k = name.lower()
            for i, e in enumerate(cols):
                if e[0] == k:
                    return i
            for i, e in enumerate(cols):
                if e[2].lower() == k:
                    return i
            return None

        for action in stmt_actions:
            op = action[0]
            if op == "add_columns":
                for spec in action[1]:
                    if any(e[2].lower() == spec.name.lower() for e in cols):
                        continue  # IF NOT EXISTS
                    cols.append([None, None, spec.name,
                                 Added(spec.name, spec, defaults.get(id(spec)))])
            elif op == "change":
                i = find_old(action[1])
                if i is not None:
                    spec = action[2]
                    cols[i][2] = spec.name
                    if cols[i][0] is None:
                        cols[i][3] = Added(spec.name, spec, defaults.get(id(spec)))
            elif op == "drop_column":
                i = find_old(action[1])
                if i is not None:
                    del cols[i]
            elif op == "rename_column":
                i = find_old(action[1])
                if i is not None:
                    cols[i][2] = action[2]
        if sorted(e[2].lower() for e in cols) != sorted(n.lower() for n in new.names):
            cols = [list(e) for e in fresh]  # the replay disagrees with the tracker: by name
    by_name = {e[2].lower(): e for e in cols}
    diff = ColumnDiff()
    kept = set()
    for n in new.names:
        e = by_name.get(n.lower())
        if e is None:
            diff.added[n] = Added(n)
        elif e[0] is None:
            diff.added[n] = replace(e[3], name=n) if e[3] is not None else Added(n)
        else:
            kept.add(e[0])
            if e[1] != n:
                diff.renames[e[1]] = n
    diff.dropped = [o for o in old_names if o.lower() not in kept]
    return diff


class _Parser(sqlddl._Parser):
    """The DDL parser, also keeping each column's DEFAULT clause (tokens)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.defaults: dict[int, list[sqlddl.Tok]] = {}
        self._column: sqlddl.ColumnSpec | None = None

    def column_attributes(self, spec: sqlddl.ColumnSpec) -> None:
        outer, self._column = self._column, spec
        try:
            super().column_attributes(spec)
        finally:
            self._column = outer

    def skip_expr(self) -> None:
        start = self.i
        super().skip_expr()
        if self._column is not None and start > 0 and self.t[start - 1].up == "DEFAULT":
            self.defaults[id(self._column)] = self.t[start:self.i]


def parse_statement(text: str) -> tuple[list[sqlddl.Statement], dict[int, list[sqlddl.Tok]]] | None:
    """`ddl.parse` with DEFAULT clauses kept; None when the text does not parse (sql_mode is
    not in the record: plain first, then ANSI_QUOTES)."""
    body = sqlddl.unwrap_versioned_comments(text)
    for mode in (0, sqlddl.MODE_ANSI_QUOTES):
        try:
            stmts, defaults = [], {}
            for toks in sqlddl.split_statements(sqlddl.tokenize(body, mode)):
                span = body[toks[0].start:toks[-1].end]
                at = toks[0].start
                rebased = [sqlddl.Tok(t.kind, t.text, t.start - at, t.end - at) for t in toks]
                p = _Parser(rebased, span, mode)
                stmts.append(p.statement())
                defaults.update(p.defaults)
            return stmts, defaults
        except sqlddl.DdlParseError:
            continue
    return None


def _alter_actions(step: DdlStep) -> tuple[list[tuple], dict[int, list[sqlddl.Tok]]] | None:
    parsed = parse_statement(step.statement)
    if parsed is None:
        return None
    stmts, defaults = parsed
    want = (step.src[0].lower(), step.src[1].lower())
    for st in stmts:
        if isinstance(st, sqlddl.AlterTable):
            ref = ((st.table.schema or step.default_schema).lower(), st.table.name.lower())
            if ref == want:
                return st.actions, defaults
    return None


def _columns(spark: "SparkSession", step: DdlStep, st: _State, old: TableSpec | None,
             new: TableSpec | None, ctx: Context) -> list[dict[str, Any]]:
    """The operations that take the Delta table at `st` from `old` to `new` (ALTER)."""
    cfg = ctx.config
    if new is None:
        raise ApplyError(f"{step.where}: the ddl record has no shape for the table")
    opts = cfg.options_for(*step.key)
    plan = _plan(new, opts)
    fields = [f for f in spark.read.format("delta").load(st.path).schema.fields
              if f.name not in INTERNAL]
    # lower name -> (name, type, name when planning started)
    cur: dict[str, tuple[str, Any, str]] = {f.name.lower(): (f.name, f.dataType, f.name)
                                            for f in fields}
    diff = analyze(step, old.names if old is not None else [f.name for f in fields], new)
    origin = {new_name.lower(): old_name for old_name, new_name in diff.renames.items()}
    keep = cfg.drop_columns == "keep"
    suffix = f"__dropped_{step.seq[0]}_{step.seq[1]}"
    ops: list[dict[str, Any]] = []
    props, reader, writer = _props(spark, st.path)

    def alter(sql: str) -> None:
        ops.append({"op": "sql", "path": st.path, "sql": sql})

    def rename(a: str, b: str) -> None:
        alter(f"ALTER TABLE {_delta(st.path)} RENAME COLUMN {_q(a)} TO {_q(b)}")
        _, dtype, start = cur.pop(a.lower())
        cur[b.lower()] = (b, dtype, start)

    # 1. drops, and (keep) columns standing where a renamed or new column goes
    mapped = props.get("delta.columnMapping.mode") == "name"

    def mapping() -> None:
        nonlocal mapped
        if not mapped:
            mapped = True
            extra = {}
            if reader < 2 or writer < 5:
                extra = {"delta.minReaderVersion": str(max(reader, 2)),
                         "delta.minWriterVersion": str(max(writer, 5))}
            ops.append({"op": "props", "path": st.path,
                        "props": {"delta.columnMapping.mode": "name", **extra}})

    dropped = [cur[o.lower()][0] for o in diff.dropped if o.lower() in cur]
    if dropped and not keep:
        mapping()
        alter(f"ALTER TABLE {_delta(st.path)} DROP COLUMNS ({', '.join(map(_q, dropped))})")
        for d in dropped:
            cur.pop(d.lower())
    renames = [(cur[o.lower()][0], n) for o, n in diff.renames.items()
               if o.lower() in cur and n in plan.cols]
    sources = {a.lower() for a, _ in renames}
    arriving = [n for _, n in renames] + [n for n in diff.added if n in plan.cols]
    for n in arriving:
        c = cur.get(n.lower())
        if c is not None and c[0].lower() not in sources and (keep or n not in diff.added):
            mapping()
            rename(c[0], c[0] + suffix)
    # 2. renames (through temporary names when they swap or only change case)
    if renames:
        mapping()
        if any(n.lower() in cur for _, n in renames):
            for i, (a, _) in enumerate(renames):
                rename(a, f"__binlake_{step.seq[0]}_{step.seq[1]}_{i}")
            for i, (_, n) in enumerate(renames):
                rename(f"__binlake_{step.seq[0]}_{step.seq[1]}_{i}", n)
        else:
            for a, n in renames:
                rename(a, n)
    # 3. type changes
    rewrite: dict[str, dict[str, Any]] = {}
    starts: dict[str, str] = {}
    widened = props.get("delta.enableTypeWidening") == "true"
    retyped = set()
    for n in plan.cols:
        c = cur.get(n.lower())
        if c is None:
            continue
        want = spark_type(new.column(n), cfg.zero_dates)
        if c[1] == want:
            continue
        retyped.add(n)
        before = old.column(origin.get(n.lower(), n)) if old is not None and \
            origin.get(n.lower(), n) in old.names else None
        if _widens(c[1], want):
            if not widened:
                widened = True
                ops.append({"op": "props", "path": st.path,
                            "props": {"delta.enableTypeWidening": "true"}})
            alter(f"ALTER TABLE {_delta(st.path)} CHANGE COLUMN {_q(c[0])} TYPE "
                  f"{want.simpleString()}")
            continue
        what = (f"{step.where}: column {c[0]} changes type from {c[1].simpleString()} to "
                f"{want.simpleString()} ({new.column(n).type})")
        if cfg.retype == "error":
            raise ApplyError(f"{what}; Delta cannot widen that in place and retype='error'",
                             hint="set ApplyConfig(retype='rewrite') to convert the existing "
                                  "values, or re-snapshot the table")
        conv = _conversion(c[1], want, before, new.column(n))
        if conv is None:
            raise ApplyError(f"{what}; binlake cannot convert the existing values exactly",
                             hint="re-snapshot the table (drop its Delta folder and snapshot "
                                  "it again) after the change")
        rewrite[c[0]] = conv
        starts[c[2]] = c[0]
    if rewrite:
        _check_conversions(spark, st.path, {a: rewrite[b] for a, b in starts.items()}, step)
        ops.append({"op": "rewrite", "path": st.path, "columns": rewrite})
    # 4. new columns, and what the rows before the statement hold in them
    missing = [n for n in plan.cols if n.lower() not in cur]
    if missing:
        cols = []
        for n in missing:  # placed after the column before it in the new shape (data first)
            i = plan.cols.index(n)
            where = f" AFTER {_q(cur[plan.cols[i - 1].lower()][0])}" if i else " FIRST"
            cols.append(f"{_q(n)} {spark_type(new.column(n), cfg.zero_dates).simpleString()}"
                        f"{where}")
            cur[n.lower()] = (n, spark_type(new.column(n), cfg.zero_dates), n)
        alter(f"ALTER TABLE {_delta(st.path)} ADD COLUMNS ({', '.join(cols)})")
    sets = []
    for n in plan.cols:
        col = new.column(n)
        if n in diff.added:
            text, unknown = evaluate_default(diff.added[n], col, step.ts)
            if unknown is not None:
                if cfg.unknown_defaults == "error":
                    raise ApplyError(
                        f"{step.where}: column {n} is added, and the value MariaDB gave the "
                        f"existing rows is not known to binlake: {unknown}",
                        hint="set ApplyConfig(unknown_defaults='null') to leave them NULL, or "
                             "re-snapshot the table after the change")
                continue
            if text is not None:
                sets.append({"column": n, "text": text, "nulls": False, "spec": _col_json(col)})
        elif old is not None and not col.nullable and origin.get(n.lower(), n) in old.names \
                and old.column(origin.get(n.lower(), n)).nullable:
            text, unknown = _implicit(col, _labels(step, n))
            if unknown is None and text is not None:  # MariaDB's NULL -> NOT NULL conversion
                sets.append({"column": n, "text": text, "nulls": True, "spec": _col_json(col)})
    for s in sets:
        if s["text"] is not None and new.column(s["column"]).type in TEMPORAL_TYPES \
                and cfg.zero_dates == "error" and _zero_date(s["text"]):
            raise ApplyError(f"{step.where}: column {s['column']} gets the zero date "
                             f"{s['text']!r} in the existing rows and zero_dates='error'",
                             hint="choose zero_dates='null' or 'string'")
    if sets:
        seq = _seq_sql(step.seq)
        where = (f"{START_AT} < {seq} AND ({END_AT} IS NULL OR {END_AT} > {seq})"
                 if opts.scd_type == 2 else f"{SEQ_COL} < {seq}")
        ops.append({"op": "backfill", "path": st.path, "where": where, "set": sets})
    # 5. a key change makes the tombstones meaningless
    old_keys = None
    if old is not None:
        try:
            old_keys = [diff.renames.get(k, k) for k in _plan(old, opts).keys]
        except ApplyError:
            old_keys = None
    if old_keys is not None and (old_keys != plan.keys or retyped & set(plan.keys)):
        ops.append({"op": "delete", "path": st.tomb})
    ops.append({"op": "props", "path": st.path, "props": _mark_props(step, new)})
    return ops


def _widens(have: "DataType", want: "DataType") -> bool:
    """Delta 4 type widening: byte/short/int -> wider int, decimal, double; long -> decimal;
    float -> double; decimal -> decimal(p + k1, s + k2) with k1 >= k2 >= 0; date -> ts_ntz."""
    from pyspark.sql import types as T

    order = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}
    digits = {T.ByteType: 3, T.ShortType: 5, T.IntegerType: 10, T.LongType: 20}
    h, w = type(have), type(want)
    if h in order and w in order:
        return order[w] > order[h]
    if h in order and w is T.DoubleType:
        return h is not T.LongType
    if h in order and w is T.DecimalType:
        return want.precision - want.scale >= digits[h]
    if h is T.FloatType and w is T.DoubleType:
        return True
    if h is T.DecimalType and w is T.DecimalType:
        k1, k2 = want.precision - have.precision, want.scale - have.scale
        return k1 >= k2 >= 0
    return h is T.DateType and w is T.TimestampNTZType


def _conversion(have: "DataType", want: "DataType", before: ColumnSpec | None,
                after: ColumnSpec) -> dict[str, Any] | None:
    """How to convert existing values like MariaDB does, or None when binlake cannot."""
    from pyspark.sql import types as T

    exact = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)
    floating = (T.FloatType, T.DoubleType)
    to = want.simpleString()
    if before is not None and before.type in ("enum", "set", "bit") and before.type != after.type:
        return None  # ENUM/SET convert to their index or bits, BIT to its bytes
    if after.type == "year" and (before is None or before.type != "year"):
        return None  # two-digit years
    if isinstance(have, T.TimestampType) or isinstance(want, T.TimestampType):
        return None  # needs the session time zone of the statement
    if isinstance(have, exact) and isinstance(want, exact):
        rounds = isinstance(have, T.DecimalType) and have.scale > 0 and (
            not isinstance(want, T.DecimalType) or want.scale < have.scale)
        return {"how": "round" if rounds else "cast", "to": to,
                "scale": want.scale if isinstance(want, T.DecimalType) else 0}
    if isinstance(have, exact + floating) and isinstance(want, floating):
        return {"how": "cast", "to": to}
    if isinstance(want, T.StringType):
        if isinstance(have, exact) or isinstance(have, T.DateType):
            return {"how": "cast", "to": to}
        if isinstance(have, T.TimestampNTZType) and before is not None:
            return {"how": "format", "to": to, "fsp": before.fsp}
        return None  # floating point text differs; bytes need their charset
    if isinstance(have, T.StringType) and before is not None and before.type in TEXT_SOURCES and \
            isinstance(want, exact + floating + (T.DateType, T.TimestampNTZType, T.BinaryType)):
        return {"how": "cast", "to": to}
    if isinstance(have, T.DateType) and isinstance(want, T.TimestampNTZType):
        return {"how": "cast", "to": to}
    return None


def _converted(col: "Column", conv: dict[str, Any]) -> "Column":
    from pyspark.sql import functions as F

    if conv["how"] == "round":
        return F.round(col, conv["scale"]).try_cast(conv["to"])
    if conv["how"] == "format":
        fsp = int(conv["fsp"] or 0)
        return F.date_format(col, "yyyy-MM-dd HH:mm:ss" + ("." + "S" * fsp if fsp else ""))
    return col.try_cast(conv["to"])


def _check_conversions(spark: "SparkSession", path: str, convs: dict[str, dict[str, Any]],
                       step: DdlStep) -> None:
    """Refuse (before writing) when an existing value would not convert."""
    from pyspark.sql import functions as F

    df = spark.read.format("delta").load(path)
    for name, conv in convs.items():
        c = F.col(_q(name))
        bad = df.where(c.isNotNull() & _converted(c, conv).isNull()).select(c).limit(1).collect()
        if bad:
            raise ApplyError(f"{step.where}: column {name} holds {bad[0][0]!r}, which does not "
                             f"convert to {conv['to']}",
                             hint="MariaDB accepted it (non-strict mode?): re-snapshot the table")


# -- defaults --------------------------------------------------------------------------------

TEXT_SOURCES = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "decimal")
"""Text columns whose values MariaDB converts to numbers/dates by reading them (not TIME,
JSON, ENUM, SET: those convert by other rules)."""

_TIME = re.compile(r"^(-?)(\d{1,3}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6}))?$")
_DATETIME = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2}):(\d{1,2})"
                       r"(?:\.(\d{1,6}))?)?$")
_NOW = ("CURRENT_TIMESTAMP", "NOW", "LOCALTIMESTAMP", "LOCALTIME")


def _zero_date(text: str) -> bool:
    m = _DATETIME.match(text)
    return bool(m) and (int(m.group(2)) == 0 or int(m.group(3)) == 0)


def evaluate_default(added: Added, col: ColumnSpec, ts: int | None
                     ) -> tuple[str | None, str | None]:
    """What MariaDB put into the existing rows for a new column, as image text (the JSON
    text the binlog would carry; None = NULL), or (None, why binlake cannot tell)."""
    p = added.spec
    if p is None:
        return None, "the statement was not understood (or the change came without one)"
    if p.generated:
        return None, f"it is a {p.generated} generated column"
    if p.auto_increment:
        return None, "AUTO_INCREMENT numbers the existing rows"
    if added.default is None:
        if col.nullable:
            return None, None
        return _implicit(col, p.values or ())
    return _literal(list(added.default), col, p, ts)


def _implicit(col: ColumnSpec, labels: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The implicit default of a NOT NULL column (what existing rows get without DEFAULT)."""
    t = col.type
    if t in INTEGER_TYPES or t in ("decimal", "float", "double", "bit", "year"):
        return "0", None
    if t == "enum":
        return (labels[0] if labels else ""), None
    if t in TEXT_TYPES or t == "json":
        return "", None
    if t in BINARY_TYPES and t != "binary":
        return "", None
    frac = "." + "0" * col.fsp if col.fsp else ""
    if t == "date":
        return "0000-00-00", None
    if t == "datetime":
        return "0000-00-00 00:00:00" + frac, None
    if t == "time":
        return "00:00:00" + frac, None
    return None, f"the implicit default of a NOT NULL {t} column is not known to binlake"


def _literal(toks: list[sqlddl.Tok], col: ColumnSpec, p: sqlddl.ColumnSpec, ts: int | None
             ) -> tuple[str | None, str | None]:
    text = " ".join(t.text for t in toks)
    unknown = (None, f"its DEFAULT {text} is an expression binlake does not evaluate")
    while len(toks) >= 2 and toks[0].kind == "op" and toks[0].text == "(" \
            and toks[-1].kind == "op" and toks[-1].text == ")":
        toks = toks[1:-1]
    negative = False
    while toks and toks[0].kind == "op" and toks[0].text in ("-", "+"):
        negative ^= toks[0].text == "-"
        toks = toks[1:]
    if not toks:
        return unknown
    first, t = toks[0], col.type
    if first.kind == "word" and first.up in _NOW and (
            len(toks) == 1 or [x.text for x in toks[1:]] in (["(", ")"], ["(", str(col.fsp), ")"])):
        if t == "timestamp" and col.fsp == 0 and ts is not None:
            when = dt.datetime.fromtimestamp(ts, dt.timezone.utc)
            return when.strftime("%Y-%m-%dT%H:%M:%SZ"), None
        return None, (f"its DEFAULT {text} is the statement's time, which the binlog gives in "
                      "whole seconds and (for DATETIME) without its time zone")
    if len(toks) == 1 and first.kind == "word" and first.up == "NULL" and not negative:
        return None, None
    kind: str
    if len(toks) == 1 and first.kind == "word" and first.up in ("TRUE", "FALSE"):
        kind, value = "num", "1" if first.up == "TRUE" else "0"
    elif all(x.kind == "str" for x in toks) or (
            first.kind == "word" and first.text.startswith("_") and len(toks) > 1
            and all(x.kind == "str" for x in toks[1:])):
        kind, value = "str", "".join(x.text for x in toks if x.kind == "str")
    elif len(toks) == 1 and first.kind in ("num", "hex", "bit"):
        kind, value = first.kind, first.text
    else:
        return unknown
    if negative and kind != "num":
        return unknown
    number: Decimal | None = None
    try:
        if kind == "num":
            number = Decimal(("-" if negative else "") + value)
        elif kind == "hex" and t not in TEXT_TYPES and t not in BINARY_TYPES:
            number = Decimal(int(value, 16))
        elif kind == "bit":
            number = Decimal(int(value, 2))
        elif kind == "str" and (t in INTEGER_TYPES or t in ("decimal", "float", "double", "year")):
            number = Decimal(value.strip())
    except (InvalidOperation, ValueError):
        return unknown
    if t in INTEGER_TYPES or t in ("bit", "year"):
        if number is None:
            return unknown
        n = int(number.quantize(Decimal(1), rounding=ROUND_HALF_UP))
        if t == "year" and not (n == 0 or 1901 <= n <= 2155):
            return unknown  # two-digit years
        return str(n), None
    if t in ("decimal", "float", "double"):
        return (format(number, "f"), None) if number is not None else unknown
    if t == "enum":
        labels = p.values or ()
        if kind == "str":
            match = [label for label in labels if label.lower() == value.lower()]
            return (match[0], None) if match else unknown
        if number is not None and number == int(number) and 1 <= int(number) <= len(labels):
            return labels[int(number) - 1], None
        return unknown
    if t == "set":
        labels = p.values or ()
        if kind != "str":
            return unknown
        parts = {v.lower() for v in value.split(",") if v}
        if not parts <= {label.lower() for label in labels}:
            return unknown
        return ",".join(label for label in labels if label.lower() in parts), None
    if t in TEXT_TYPES or t == "json":
        if kind == "str":
            return (value.rstrip(" ") if t == "char" else value), None
        if kind == "num" and "e" not in value.lower():
            return ("-" if negative else "") + value, None
        if kind == "hex":
            try:
                return bytes.fromhex(value).decode("utf-8"), None
            except ValueError:
                return unknown
        return unknown
    if t in BINARY_TYPES and t != "binary":
        if kind == "str":
            return base64.b64encode(value.encode("utf-8")).decode("ascii"), None
        if kind == "hex":
            return base64.b64encode(bytes.fromhex(value)).decode("ascii"), None
        return unknown
    if kind != "str":
        return unknown
    if t == "time":
        m = _TIME.match(value.strip())
        if not m or len(m.group(5) or "") > col.fsp:
            return unknown
        frac = "." + (m.group(5) or "").ljust(col.fsp, "0") if col.fsp else ""
        return (f"{m.group(1)}{int(m.group(2)):02d}:{int(m.group(3)):02d}:"
                f"{int(m.group(4)):02d}{frac}"), None
    if t in TEMPORAL_TYPES:
        m = _DATETIME.match(value.strip())
        if not m or len(m.group(7) or "") > col.fsp:
            return unknown
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        date = f"{y:04d}-{mo:02d}-{d:02d}"
        if t == "date":
            return (date, None) if m.group(4) is None else unknown
        hh, mi, ss = (int(m.group(i) or 0) for i in (4, 5, 6))
        frac = "." + (m.group(7) or "").ljust(col.fsp, "0") if col.fsp else ""
        if _zero_date(date):
            return f"{date} {hh:02d}:{mi:02d}:{ss:02d}{frac}", None
        if t == "timestamp":
            return None, (f"its DEFAULT {text} is a TIMESTAMP in the statement's session time "
                          "zone, which the binlog does not carry")
        return f"{date}T{hh:02d}:{mi:02d}:{ss:02d}{frac}", None
    return unknown


# -- executing a plan ----------------------------------------------------------------------------

def _execute(spark: "SparkSession", step: DdlStep, ops: list[dict[str, Any]], ctx: Context,
             resume: bool) -> None:
    """Run the planned operations; on a resume skip the commits already tagged and the moves
    already made."""
    tags: dict[str, set[str]] = {}
    moved: dict[str, int] = {}  # path -> index of a later move of it that is done
    if resume:
        for j, op in enumerate(ops):
            if op["op"] == "move" and _exists(spark, op["to"]) and not _exists(spark, op["from"]):
                moved[op["from"]] = j

    def done(path: str, tag: str, i: int) -> bool:
        if not resume:
            return False
        if moved.get(path, -1) > i:
            return True  # the table was moved on after this operation: it had it
        if path not in tags:
            _KNOWN.pop(path, None)
            tags[path] = _tags(spark, path) if _is_delta(spark, path) else set()
        return tag in tags[path]

    for i, op in enumerate(ops):
        kind = op["op"]
        if kind == "move":
            _move(spark, op["from"], op["to"])
            continue
        if kind == "delete":
            _delete(spark, op["path"])
            continue
        tag = f"binlake-ddl {_text(step.mark)} {i}"
        if done(op["path"], tag, i):
            continue
        with _tagged(spark, tag):
            _run_op(spark, op, ctx)
        _KNOWN.pop(op["path"], None)
        _DETAILS.pop(op["path"], None)


def _tags(spark: "SparkSession", path: str) -> set[str]:
    from delta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, path).history(1000).select("userMetadata").collect()
    return {r[0] for r in rows if r[0]}


@contextlib.contextmanager
def _tagged(spark: "SparkSession", tag: str) -> Iterator[None]:
    """Commits made inside carry `tag` as their commitInfo.userMetadata."""
    spark.conf.set(TAG_CONF, tag)
    try:
        yield
    finally:
        spark.conf.unset(TAG_CONF)


def _run_op(spark: "SparkSession", op: dict[str, Any], ctx: Context) -> None:
    from pyspark.sql import functions as F

    kind, path = op["op"], op["path"]
    if kind == "sql":
        spark.sql(op["sql"])
    elif kind == "props":
        pairs = ", ".join(f"{_sql_str(k)} = {_sql_str(v)}" for k, v in op["props"].items())
        spark.sql(f"ALTER TABLE {_delta(path)} SET TBLPROPERTIES ({pairs})")
    elif kind == "create":
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(op["schema"]))
        cols = ", ".join(f"{_q(f.name)} {f.dataType.simpleString()}" for f in schema.fields)
        pairs = ", ".join(f"{_sql_str(k)} = {_sql_str(v)}" for k, v in op["props"].items())
        spark.sql(f"CREATE TABLE {_delta(path)} ({cols}) USING delta TBLPROPERTIES ({pairs})")
    elif kind == "rewrite":
        df = spark.read.format("delta").load(path)
        convs = op["columns"]
        out = [_converted(F.col(_q(f.name)), convs[f.name]).alias(f.name) if f.name in convs
               else F.col(_q(f.name)) for f in df.schema.fields]
        (df.select(*out).write.format("delta").mode("overwrite")
         .option("overwriteSchema", "true").save(path))
    elif kind == "backfill":
        from delta.tables import DeltaTable

        sets = {}
        for s in op["set"]:
            value = typed_value(F.lit(s["text"]), _col_from_json(s["spec"]),
                                ctx.config.zero_dates)
            c = F.col(_q(s["column"]))
            sets[_q(s["column"])] = F.when(c.isNull(), value).otherwise(c) if s["nulls"] else value
        DeltaTable.forPath(spark, path).update(condition=F.expr(op["where"]), set=sets)
    else:  # pragma: no cover - planner and executor disagree
        raise ApplyError(f"unknown evolution operation {kind!r}")


def _sql_str(v: str) -> str:
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fs(spark: "SparkSession", path: str) -> tuple[Any, Any]:
    jvm = spark._jvm  # type: ignore[attr-defined]
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark._jsc.hadoopConfiguration()), p  # type: ignore[attr-defined]


def _forget(spark: "SparkSession", *paths: str) -> None:
    """Drop what this process and Delta cached about tables at `paths` (moved or deleted)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    for path in paths:
        _KNOWN.pop(path, None)
        _DETAILS.pop(path, None)
        jvm.org.apache.spark.sql.delta.DeltaLog.invalidateCache(
            spark._jsparkSession, jvm.org.apache.hadoop.fs.Path(path))  # type: ignore[attr-defined]


def _move(spark: "SparkSession", src: str, dst: str) -> None:
    """Move a folder; done when `dst` exists (a resumed move), nothing when `src` does not."""
    fs, s = _fs(spark, src)
    d = _fs(spark, dst)[1]
    if fs.exists(d) or not fs.exists(s):
        return
    fs.mkdirs(d.getParent())
    if not fs.rename(s, d):
        raise ApplyError(f"could not move {src} to {dst}")
    _forget(spark, src, dst)


def _exists(spark: "SparkSession", path: str) -> bool:
    fs, p = _fs(spark, path)
    return bool(fs.exists(p))


def _delete(spark: "SparkSession", path: str) -> None:
    fs, p = _fs(spark, path)
    if fs.exists(p):
        fs.delete(p, True)
    _forget(spark, path)
