"""Table versions keyed by binlog position, persisted as JSON beside a checkpoint.

A table's shape is a list of versions, each valid from a position (the end of the DDL event
that made it, or the bootstrap position) until the next one. A reader that resumes from an old
checkpoint therefore decodes old rows with old shapes, and a DDL event seen a second time (after
a restart) is recognised by its position and not applied twice.
"""
from __future__ import annotations

import bisect
import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .._util.atomic import atomic_write_text
from ..errors import SchemaError
from .model import Catalog, Collations, DatabaseDef, TableDef

FORMAT = "binlake-schema-history"
FORMAT_VERSION = 1
_SEQ_RE = re.compile(r"(\d+)$")

TableKey = tuple[str, str]


@functools.lru_cache(maxsize=256)  # (a handful of names, compared for every TABLE_MAP)
def file_seq(name: str | None) -> int:
    """The binlog file's sequence number (`mariadb-bin.000042` -> 42); files sort by it."""
    if not name:
        return -1
    m = _SEQ_RE.search(name)
    return int(m.group(1)) if m else 0


@dataclass(frozen=True, slots=True)
class BinlogPos:
    """A point in one server's binlog: a file and a byte offset in it."""

    file: str | None
    pos: int

    @property
    def key(self) -> tuple[int, int]:
        return (file_seq(self.file), self.pos)

    def __lt__(self, other: "BinlogPos") -> bool:
        return self.key < other.key

    def __le__(self, other: "BinlogPos") -> bool:
        return self.key <= other.key

    def __gt__(self, other: "BinlogPos") -> bool:
        return self.key > other.key

    def __ge__(self, other: "BinlogPos") -> bool:
        return self.key >= other.key

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"

    def to_json(self) -> list[Any]:
        return [self.file, self.pos]

    @classmethod
    def from_json(cls, v: list[Any] | None) -> "BinlogPos | None":
        return None if v is None else cls(v[0], int(v[1]))


@dataclass(frozen=True, slots=True)
class Version:
    since: BinlogPos
    table: TableDef | None
    """None: the table does not exist from `since` on (dropped or renamed away)."""


@dataclass
class DdlRecord:
    """A DDL event that changed tracked tables, kept so a replay recognises it."""

    file: str | None
    pos: int
    end: int
    statement: str
    schema: str
    kind: str
    gtid: str | None
    changes: list[tuple[str, TableKey, TableKey | None]]
    """(change kind, table key, old key for renames)"""
    databases: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"file": self.file, "pos": self.pos, "end": self.end,
                             "statement": self.statement, "schema": self.schema, "kind": self.kind,
                             "changes": [[k, list(key), list(old) if old else None]
                                         for k, key, old in self.changes]}
        if self.gtid:
            d["gtid"] = self.gtid
        if self.databases:
            d["databases"] = self.databases
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "DdlRecord":
        return cls(d["file"], d["pos"], d["end"], d["statement"], d["schema"], d["kind"],
                   d.get("gtid"), [(k, tuple(key), tuple(old) if old else None)
                                   for k, key, old in d["changes"]], d.get("databases", []))


class SchemaHistory:
    """Every tracked table's versions from `start` on, plus the state at `head`."""

    def __init__(self, *, start: BinlogPos | None = None, start_gtid: str | None = None,
                 server: dict[str, Any] | None = None, collations: Collations | None = None) -> None:
        self.start = start
        """Earliest position this history can answer for (None: from the first binlog on)."""
        self.start_gtid = start_gtid
        self.head = start
        """Position after the newest recorded change."""
        self.server: dict[str, Any] = dict(server or {})
        self.collations = collations or Collations.builtin()
        self.versions: dict[TableKey, list[Version]] = {}
        self.databases: dict[str, DatabaseDef] = {}
        self.log: list[DdlRecord] = []
        self.opaque: dict[TableKey, str] = {}
        """Tracked tables whose shape at `start` is unknown (they existed, and DDL read after
        `start` changed them), each with why; a statement that defines the table anew (CREATE,
        DROP) takes it out. See binlake.schema.range_history."""
        self._log_index: dict[tuple[int, int], DdlRecord] = {}
        self._head_catalog: Catalog | None = None

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def from_catalog(cls, cat: Catalog, pos: BinlogPos | None, gtid: str | None = None,
                     server: dict[str, Any] | None = None) -> "SchemaHistory":
        h = cls(start=pos, start_gtid=gtid, server=server, collations=cat.collations)
        h.server.setdefault("charset", cat.server_charset)
        h.server.setdefault("collation", cat.server_collation)
        h.server.setdefault("lower_case_table_names", cat.lower_case_table_names)
        since = pos or BinlogPos(None, 0)
        for key, t in cat.tables.items():
            h.versions[key] = [Version(since, t)]
        h.databases = dict(cat.databases)
        return h

    def record(self, rec: DdlRecord, tables: dict[TableKey, TableDef | None],
               databases: dict[str, DatabaseDef] | None = None) -> None:
        """Add the versions one event produced; they are valid from the event's end."""
        since = BinlogPos(rec.file, rec.end)
        if self.head is not None and since < self.head:
            raise SchemaError(f"cannot record a change at {since}: the history already extends "
                              f"to {self.head}")
        for key, t in tables.items():
            vs = self.versions.setdefault(key, [])
            if vs and vs[-1].since == since:
                vs[-1] = Version(since, t)
            else:
                vs.append(Version(since, t))
        if databases is not None:
            self.databases = dict(databases)
        self.log.append(rec)
        self._log_index[(file_seq(rec.file), rec.pos)] = rec
        self.head = since
        self._head_catalog = None

    def put(self, key: TableKey, table: TableDef | None, since: BinlogPos) -> None:
        """A version that came from the server or the binlog rather than from DDL."""
        if self.head is not None and since < self.head:
            raise SchemaError(f"cannot add a version at {since}: the history already extends "
                              f"to {self.head}")
        vs = self.versions.setdefault(key, [])
        if vs and vs[-1].since == since:
            vs[-1] = Version(since, table)
        else:
            vs.append(Version(since, table))
        self.head = since if self.head is None or since > self.head else self.head
        self._head_catalog = None

    # -- lookups -------------------------------------------------------------------------------
    def find_record(self, file: str | None, pos: int) -> DdlRecord | None:
        return self._log_index.get((file_seq(file), pos))

    def at_or_after_head(self, file: str | None, pos: int) -> bool:
        """BinlogPos(file, pos) >= head (also when there is no head or no file), without
        building the BinlogPos: asked for every TABLE_MAP a schema resolver fills."""
        head = self.head
        if head is None or file is None:
            return True
        if file == head.file:
            return pos >= head.pos
        seq, head_seq = file_seq(file), file_seq(head.file)
        return seq > head_seq or (seq == head_seq and pos >= head.pos)

    def is_before_start(self, pos: BinlogPos) -> bool:
        return self.start is not None and pos.file is not None and pos < self.start

    def table_at(self, key: TableKey, pos: BinlogPos | None = None) -> TableDef | None:
        """The shape of a table at `pos` (None: at head); None if it did not exist."""
        vs = self.versions.get(key)
        if not vs:
            return None
        if pos is None or pos.file is None:
            return vs[-1].table
        if self.is_before_start(pos):
            raise SchemaError(f"position {pos} is before the start of the schema history "
                              f"({self.start}); bootstrap again or load an older history")
        keys = [v.since.key for v in vs]
        i = bisect.bisect_right(keys, pos.key) - 1
        return vs[i].table if i >= 0 else None

    def head_catalog(self) -> Catalog:
        """The state at head (cached; DDL is applied to a copy of it)."""
        if self._head_catalog is None:
            cat = Catalog(
                databases=dict(self.databases),
                tables={k: vs[-1].table for k, vs in self.versions.items() if vs[-1].table is not None},
                server_charset=self.server.get("charset") or "utf8mb4",
                server_collation=self.server.get("collation"),
                lower_case_table_names=int(self.server.get("lower_case_table_names") or 0),
                collations=self.collations)
            self._head_catalog = cat
        return self._head_catalog

    # -- compaction ------------------------------------------------------------------------------
    def compact(self, oldest_checkpoint: BinlogPos) -> int:
        """Forget what no reader can need: versions superseded before the oldest checkpoint.

        Keeps, per table, the version valid at the checkpoint and every later one; drops tables
        that were gone at the checkpoint and never came back. Returns the versions removed.
        """
        removed = 0
        cp = oldest_checkpoint
        for key in list(self.versions):
            vs = self.versions[key]
            keys = [v.since.key for v in vs]
            i = bisect.bisect_right(keys, cp.key) - 1
            if i > 0:
                removed += i
                vs = vs[i:]
            if len(vs) == 1 and vs[0].table is None and vs[0].since <= cp:
                removed += 1
                del self.versions[key]
            else:
                self.versions[key] = vs
        self.log = [r for r in self.log if BinlogPos(r.file, r.pos) >= cp]
        self._log_index = {(file_seq(r.file), r.pos): r for r in self.log}
        if self.start is None or cp > self.start:
            self.start = cp
            self.start_gtid = None
        return removed

    # -- persistence ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": FORMAT_VERSION,
            "server": self.server,
            "start": self.start.to_json() if self.start else None,
            "start_gtid": self.start_gtid,
            "head": self.head.to_json() if self.head else None,
            "collations": self.collations.to_dict(),
            "databases": [d.to_dict() for d in self.databases.values()],
            "tables": [
                {"schema": k[0], "name": k[1],
                 "versions": [{"since": v.since.to_json(),
                               "def": v.table.to_dict() if v.table else None} for v in vs]}
                for k, vs in sorted(self.versions.items())],
            "log": [r.to_json() for r in self.log],
            **({"opaque": [[k[0], k[1], why] for k, why in sorted(self.opaque.items())]}
               if self.opaque else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SchemaHistory":
        if d.get("format") != FORMAT:
            raise SchemaError("not a binlake schema history file")
        if d.get("version", 0) > FORMAT_VERSION:
            raise SchemaError(f"schema history format {d.get('version')} is newer than this "
                              f"binlake understands ({FORMAT_VERSION})")
        h = cls(start=BinlogPos.from_json(d.get("start")), start_gtid=d.get("start_gtid"),
                server=d.get("server"), collations=Collations.from_dict(d.get("collations")))
        h.head = BinlogPos.from_json(d.get("head"))
        h.databases = {x["name"]: DatabaseDef.from_dict(x) for x in d.get("databases", [])}
        for t in d.get("tables", []):
            key = (t["schema"], t["name"])
            h.versions[key] = [
                Version(BinlogPos.from_json(v["since"]),  # type: ignore[arg-type]
                        TableDef.from_dict(v["def"]) if v["def"] else None)
                for v in t["versions"]]
        h.log = [DdlRecord.from_json(r) for r in d.get("log", [])]
        h.opaque = {(s, n): why for s, n, why in d.get("opaque", [])}
        h._log_index = {(file_seq(r.file), r.pos): r for r in h.log}
        return h

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically (temp file + rename): a crash leaves the old file or the new one."""
        atomic_write_text(path, json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "SchemaHistory":
        """Read a saved history; SchemaError names the file and what is wrong with it."""
        hint = ("give the file binlake saved (CHECKPOINT.schema.json, or "
                "WAREHOUSE/_binlake/schema_history.json)")
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except OSError as exc:
            raise SchemaError(f"cannot read the schema history {path}: {exc.strerror}",
                              hint=hint) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SchemaError(f"the schema history {path} is not JSON ({exc})", hint=hint) from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise SchemaError(f"{path} is not a binlake schema history (no \"format\": "
                              f"\"{FORMAT}\" in it)", hint=hint)
        try:
            return cls.from_dict(d)
        except SchemaError as exc:
            raise SchemaError(f"{path}: {exc}", hint=hint) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise SchemaError(f"the schema history {path} is damaged: "
                              f"{type(exc).__name__} {exc}", hint=hint) from None

    def tables_at(self, pos: BinlogPos | None = None) -> Iterable[TableDef]:
        for key in self.versions:
            t = self.table_at(key, pos)
            if t is not None:
                yield t


def history_path(checkpoint_path: str | os.PathLike[str]) -> Path:
    """Where the schema history of a checkpoint file lives: beside it."""
    p = Path(checkpoint_path)
    return p.with_name(p.name + ".schema.json")
