"""A DDL step -> the planned operations on the Delta tables (refusals happen here)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..tables import (
    END_AT, SEQ_COL, START_AT, TS_COL, ApplyError, delta_ref, plan_table, quote_name, seq_sql,
    target_schema,
)
from ...schema.spec import TEMPORAL_TYPES, TableSpec
from ..typing import spark_type
from .defaults import implicit_default, zero_date, evaluate_default
from .journal import Context, DETAILS
from .retype import check_conversions, retype_conversion, widens
from .shapes import MARK_PROP, SHAPE_PROP, col_json, shape_json
from .statement import analyze
from .steps import DdlStep, Key, Seq, enum_labels

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from ..apply import ApplyConfig


INTERNAL = (SEQ_COL, TS_COL, START_AT, END_AT)


def dropped_path(target: str, schema: str, table: str, seq: Seq) -> str:
    return f"{target.rstrip('/')}/_binlake/dropped/{schema}/{table}/{seq[0]}-{seq[1]}"


@dataclass
class State:
    """What the run knows of the Delta table at one name."""

    key: Key
    path: str
    tomb: str
    exists: bool = False
    mark: Seq | None = None
    spec: TableSpec | None = None
    """The shape this table's rows have now (stored by its last DDL, or from `specs`)."""
    resolved: bool = False


def table_props(spark: "SparkSession", path: str) -> tuple[dict[str, str], int, int]:
    """(properties, min reader version, min writer version) of a Delta table."""
    got = DETAILS.get(path)
    if got is None:
        d = spark.sql(f"DESCRIBE DETAIL {delta_ref(path)}").first()
        got = DETAILS[path] = (dict(d["properties"] or {}), int(d["minReaderVersion"]),
                                int(d["minWriterVersion"]))
    return dict(got[0]), got[1], got[2]


# -- planning ----------------------------------------------------------------------------------

def _at_or_after(mark: Seq | None, step: DdlStep) -> bool:
    return mark is not None and mark >= step.mark


def plan_step(spark: "SparkSession", step: DdlStep, new: TableSpec | None, ctx: Context,
               state: Callable[[Key], State],
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


def _archive(cfg: ApplyConfig, st: State, step: DdlStep) -> list[dict[str, Any]]:
    return [{"op": "move", "from": st.path, "to": dropped_path(cfg.target, *st.key, step.seq)},
            {"op": "delete", "path": st.tomb}]


def _create(cfg: ApplyConfig, dst: State, step: DdlStep, new: TableSpec | None,
            seq_type: Any) -> list[dict[str, Any]]:
    if new is None:
        return []
    opts = cfg.options_for(*step.key)
    try:
        plan = plan_table(new, opts)
    except ApplyError:
        return []  # no key: nothing to maintain (rows of it fail on the row path)
    ops = _archive(cfg, dst, step) if dst.exists else []
    schema = target_schema(new, plan, opts, seq_type, cfg.zero_dates)
    ops.append({"op": "create", "path": dst.path, "schema": schema.json(),
                "props": {**cfg.table_properties(), **_mark_props(step, new)}})
    return ops


def _mark_props(step: DdlStep, new: TableSpec) -> dict[str, str]:
    return {MARK_PROP: json.dumps(list(step.mark)), SHAPE_PROP: shape_json(new)}


def _columns(spark: "SparkSession", step: DdlStep, st: State, old: TableSpec | None,
             new: TableSpec | None, ctx: Context) -> list[dict[str, Any]]:
    """The operations that take the Delta table at `st` from `old` to `new` (ALTER)."""
    cfg = ctx.config
    if new is None:
        raise ApplyError(f"{step.where}: the ddl record has no shape for the table")
    opts = cfg.options_for(*step.key)
    plan = plan_table(new, opts)
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
    props, reader, writer = table_props(spark, st.path)

    def alter(sql: str) -> None:
        ops.append({"op": "sql", "path": st.path, "sql": sql})

    def rename(a: str, b: str) -> None:
        alter(f"ALTER TABLE {delta_ref(st.path)} RENAME COLUMN {quote_name(a)} TO {quote_name(b)}")
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
        alter(f"ALTER TABLE {delta_ref(st.path)} DROP COLUMNS ({', '.join(map(quote_name, dropped))})")
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
        if widens(c[1], want):
            if not widened:
                widened = True
                ops.append({"op": "props", "path": st.path,
                            "props": {"delta.enableTypeWidening": "true"}})
            alter(f"ALTER TABLE {delta_ref(st.path)} CHANGE COLUMN {quote_name(c[0])} TYPE "
                  f"{want.simpleString()}")
            continue
        what = (f"{step.where}: column {c[0]} changes type from {c[1].simpleString()} to "
                f"{want.simpleString()} ({new.column(n).type})")
        if cfg.retype == "error":
            raise ApplyError(f"{what}; Delta cannot widen that in place and retype='error'",
                             hint="set ApplyConfig(retype='rewrite') to convert the existing "
                                  "values, or re-snapshot the table")
        conv = retype_conversion(c[1], want, before, new.column(n))
        if conv is None:
            raise ApplyError(f"{what}; binlake cannot convert the existing values exactly",
                             hint="re-snapshot the table (drop its Delta folder and snapshot "
                                  "it again) after the change")
        rewrite[c[0]] = conv
        starts[c[2]] = c[0]
    if rewrite:
        check_conversions(spark, st.path, {a: rewrite[b] for a, b in starts.items()}, step)
        ops.append({"op": "rewrite", "path": st.path, "columns": rewrite})
    # 4. new columns, and what the rows before the statement hold in them
    missing = [n for n in plan.cols if n.lower() not in cur]
    if missing:
        cols = []
        for n in missing:  # placed after the column before it in the new shape (data first)
            i = plan.cols.index(n)
            where = f" AFTER {quote_name(cur[plan.cols[i - 1].lower()][0])}" if i else " FIRST"
            cols.append(f"{quote_name(n)} {spark_type(new.column(n), cfg.zero_dates).simpleString()}"
                        f"{where}")
            cur[n.lower()] = (n, spark_type(new.column(n), cfg.zero_dates), n)
        alter(f"ALTER TABLE {delta_ref(st.path)} ADD COLUMNS ({', '.join(cols)})")
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
                sets.append({"column": n, "text": text, "nulls": False, "spec": col_json(col)})
        elif old is not None and not col.nullable and origin.get(n.lower(), n) in old.names \
                and old.column(origin.get(n.lower(), n)).nullable:
            text, unknown = implicit_default(col, enum_labels(step, n))
            if unknown is None and text is not None:  # MariaDB's NULL -> NOT NULL conversion
                sets.append({"column": n, "text": text, "nulls": True, "spec": col_json(col)})
    for s in sets:
        if s["text"] is not None and new.column(s["column"]).type in TEMPORAL_TYPES \
                and cfg.zero_dates == "error" and zero_date(s["text"]):
            raise ApplyError(f"{step.where}: column {s['column']} gets the zero date "
                             f"{s['text']!r} in the existing rows and zero_dates='error'",
                             hint="choose zero_dates='null' or 'string'")
    if sets:
        seq = seq_sql(step.seq)
        where = (f"{START_AT} < {seq} AND ({END_AT} IS NULL OR {END_AT} > {seq})"
                 if opts.scd_type == 2 else f"{SEQ_COL} < {seq}")
        ops.append({"op": "backfill", "path": st.path, "where": where, "set": sets})
    # 5. a key change makes the tombstones meaningless
    old_keys = None
    if old is not None:
        try:
            old_keys = [diff.renames.get(k, k) for k in plan_table(old, opts).keys]
        except ApplyError:
            old_keys = None
    if old_keys is not None and (old_keys != plan.keys or retyped & set(plan.keys)):
        ops.append({"op": "delete", "path": st.tomb})
    ops.append({"op": "props", "path": st.path, "props": _mark_props(step, new)})
    return ops
