"""The batch's ddl records as steps, and the groups of tables they link, split at DDL positions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..tables import ROW_OPS, seq_lit
from .shapes import parse_type

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame


Key = tuple[str, str]
Seq = tuple[int, ...]


def mark_text(mark: Seq) -> str:
    return ".".join(str(x) for x in mark)


def enum_labels(step: "DdlStep", name: str) -> tuple[str, ...]:
    for c in step.entry.get("columns") or ():
        if c["name"].lower() == name.lower():
            return tuple(parse_type(step.entry, c).values or ())
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


def load_steps(changes: "DataFrame", held: "pa.Table | None" = None) -> list[DdlStep]:
    """The batch's ddl records -> steps in seq order (only the entries of tables the
    records are for: a source's table filter applies to them as to rows). `held`: the same
    batch on the driver (CDC_SCHEMA), read there instead of by a Spark job."""
    rows: list[dict[str, Any]]
    if held is not None:
        rows = _held_ddl_rows(held)
    else:
        from pyspark.sql import functions as F

        rows = [{**r.asDict(), "seq": tuple(r["seq"])} for r in
                changes.where(F.col("op") == "ddl")
                .select("schema", "table", "seq", F.unix_timestamp("ts").alias("_epoch"),
                        "query", "ddl", "file", "pos").collect()]
    return _steps(rows)


def _held_ddl_rows(held: "pa.Table") -> list[dict[str, Any]]:
    """`load_steps`'s rows from a driver-held batch: `_epoch` as Spark's unix_timestamp
    gives it (whole seconds, rounded down)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ddl = held.filter(pc.equal(held.column("op"), "ddl"))
    micros = pc.cast(ddl.column("ts"), pa.int64()).to_pylist()
    out = []
    for r, us in zip(ddl.select(["schema", "table", "seq", "query", "ddl", "file", "pos"])
                     .to_pylist(), micros):
        seq = r["seq"]
        r["seq"] = tuple(seq.values()) if seq is not None else None
        r["_epoch"] = None if us is None else us // 1_000_000
        out.append(r)
    return out


def _steps(rows: list[dict[str, Any]]) -> list[DdlStep]:
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


def make_groups(changes: "DataFrame", steps: list[DdlStep], row_keys: set[Key],
                held: "pa.Table | None" = None) -> list[Group]:
    """Link tables through their DDL, then count rows per segment (one Spark job, or none
    for a batch `held` by the driver: the same batch in CDC_SCHEMA)."""
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
    if by_key and held is not None:
        _held_segments(held, by_key)
    elif by_key:
        seg: Any = None
        cond: Any = None
        for (schema, table), g in by_key.items():
            m = (F.col("schema") == schema) & (F.col("table") == table)
            idx = sum(((F.col("seq") > seq_lit(c)).cast("int") for c in g.cuts[(schema, table)]),
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


def _held_segments(held: "pa.Table", by_key: dict[Key, Group]) -> None:
    """`make_groups`'s segment stats from a driver-held batch: per table and segment with
    rows, the last TRUNCATE's seq and whether an update or delete is among them."""
    import bisect

    import pyarrow as pa
    import pyarrow.compute as pc

    rows = held.filter(pc.is_in(held.column("op"), pa.array([*ROW_OPS, "truncate"])))
    found: dict[tuple[Key, int], tuple[Seq | None, bool]] = {}
    for r in rows.select(["schema", "table", "op", "seq"]).to_pylist():
        key = (r["schema"], r["table"])
        g = by_key.get(key)
        if g is None:
            continue
        seq = tuple(r["seq"].values())
        seg = bisect.bisect_left(g.cuts[key], seq)  # how many of its DDL come before the row
        trunc, deletes = found.get((key, seg), (None, False))
        if r["op"] == "truncate" and (trunc is None or seq > trunc):
            trunc = seq
        found[(key, seg)] = (trunc, deletes or r["op"] in ("update", "delete"))
    for (key, seg), value in found.items():
        by_key[key].segments[(key, seg)] = value
