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

import bisect
import json
from typing import TYPE_CHECKING, Any, Callable

from ..tables import KNOWN, ApplyError, is_delta, seq_lit, table_path, tombstone_path
from ...schema.spec import TableSpec
from .defaults import evaluate_default
from .journal import (
    JOURNAL_DDL, TAG_CONF, Context, DETAILS, commit_tags, forget_caches, journal_path,
    open_journal, record_item, tagged_commits,
)
from .ops import delete_path, path_exists, move_folder, run_op
from .plan import INTERNAL, plan_step, table_props, State, dropped_path
from .retype import TEXT_SOURCES
from .shapes import MARK_PROP, SHAPE_PROP, shape_from_json, shape_json, spec_from_entry
from .statement import Added, ColumnDiff, undo_first, analyze, parse_statement
from .steps import DdlStep, Group, Key, Seq, mark_text, load_steps, make_groups

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def run_group(spark: "SparkSession", group: Group, ctx: Context) -> None:
    """Apply a group's rows and DDL in seq order (see the module notes)."""
    from pyspark.sql import functions as F

    cfg = ctx.config
    states: dict[Key, State] = {}

    def state(key: Key) -> State:
        st = states.get(key)
        if st is None:
            st = states[key] = State(key, table_path(cfg.target, *key),
                                      tombstone_path(cfg.target, *key))
            if is_delta(spark, st.path):
                st.exists = True
                props = table_props(spark, st.path)[0]
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
            st.spec = undo_first(spec, group.steps, key) if spec is not None else None
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
            if end is None and ctx.apply_last is not None:
                ctx.apply_last(spark, key[0], key[1], cuts[s - 1] if s > 0 else None, spec)
                state(key).exists = True
                continue
            part = ctx.changes.where((F.col("schema") == key[0]) & (F.col("table") == key[1]))
            if s > 0:
                part = part.where(F.col("seq") > seq_lit(cuts[s - 1]))
            if end is not None:
                part = part.where(F.col("seq") < seq_lit(end))
            app = cfg.app_id if end is None else f"{cfg.app_id}@{mark_text(end)}"
            ctx.apply_rows(spark, part, ctx.batch_id, cfg, spec,
                           stats[0], stats[1], app)
            state(key).exists = True
        applied[key] = max(applied.get(key, 0), upto)

    items = ctx.journal["items"]

    def started(i: int) -> bool:
        """Step i was begun by an earlier run of this batch id (steps run in order, so a
        later step's plan means this one finished), or applied by another batch."""
        return any(f"plan:{mark_text(s.mark)}" in items or f"done:{mark_text(s.mark)}" in items
                   or mark_text(s.mark) in ctx.journal["elsewhere"] for s in group.steps[i:])

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
        mt = mark_text(step.mark)
        finished = (f"done:{mt}" in items or mt in ctx.journal["elsewhere"]
                    or started(i + 1))
        if _run_step(spark, step, ctx, state, shape, finished):
            last = step
    for key in group.keys:
        flush(key, len(group.cuts.get(key, [])) + 1)
    if last is not None:  # spares a replay the look at the tables' history
        record_item(spark, ctx, f"done:{mark_text(last.mark)}")


def _run_step(spark: "SparkSession", step: DdlStep, ctx: Context,
              state: Callable[[Key], State], shape: Callable[[Key], TableSpec | None],
              finished: bool) -> bool:
    """Plan (or resume) and execute one step; True when it ran operations."""
    items = ctx.journal["items"]
    mt = mark_text(step.mark)
    new = spec_from_entry(step.entry)
    ran = False
    if not finished:
        if f"plan:{mt}" in items:
            ops, resume = json.loads(items[f"plan:{mt}"]), True
        else:
            ops, resume = plan_step(spark, step, new, ctx, state, shape), False
            if ops:
                record_item(spark, ctx, f"plan:{mt}", json.dumps(ops))
        if ops:
            _execute(spark, step, ops, ctx, resume)
            ran = True
    # What the tables are now (each name's table moved, created or archived).
    src, dst = state(step.src), state(step.key)
    for st in ((src,) if src is dst else (src, dst)):
        KNOWN.pop(st.path, None)
        st.exists = is_delta(spark, st.path)
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


# -- executing a plan ----------------------------------------------------------------------------

def _execute(spark: "SparkSession", step: DdlStep, ops: list[dict[str, Any]], ctx: Context,
             resume: bool) -> None:
    """Run the planned operations; on a resume skip the commits already tagged and the moves
    already made."""
    tags: dict[str, set[str]] = {}
    moved: dict[str, int] = {}  # path -> index of a later move of it that is done
    if resume:
        for j, op in enumerate(ops):
            if (op["op"] == "move" and path_exists(spark, op["to"])
                    and not path_exists(spark, op["from"])):
                moved[op["from"]] = j

    def done(path: str, tag: str, i: int) -> bool:
        if not resume:
            return False
        if moved.get(path, -1) > i:
            return True  # the table was moved on after this operation: it had it
        if path not in tags:
            KNOWN.pop(path, None)
            tags[path] = commit_tags(spark, path) if is_delta(spark, path) else set()
        return tag in tags[path]

    for i, op in enumerate(ops):
        kind = op["op"]
        if kind == "move":
            move_folder(spark, op["from"], op["to"])
            continue
        if kind == "delete":
            delete_path(spark, op["path"])
            continue
        tag = f"binlake-ddl {mark_text(step.mark)} {i}"
        if done(op["path"], tag, i):
            continue
        with tagged_commits(spark, tag):
            run_op(spark, op, ctx)
        KNOWN.pop(op["path"], None)
        DETAILS.pop(op["path"], None)
