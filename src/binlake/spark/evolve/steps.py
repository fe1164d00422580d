"""The batch's ddl records as steps, and the groups of tables they link, split at DDL positions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..tables import ROW_OPS, seq_lit
from .shapes import parse_type

if TYPE_CHECKING:  # pragma: no cover
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
