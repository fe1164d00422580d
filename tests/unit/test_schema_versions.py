"""Versions by position, DDL records, compaction and the JSON file beside a checkpoint."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from binlake.errors import SchemaError
from binlake.schema.history import BinlogPos, DdlRecord, SchemaHistory, history_path
from binlake.schema.model import Catalog, Column, TableDef


def table(*cols: str) -> TableDef:
    return TableDef("db", "t", tuple(Column(c, "int") for c in cols))


def test_positions_order_by_file_number_then_offset() -> None:
    assert BinlogPos("bin.000009", 900) < BinlogPos("bin.000010", 4)
    assert BinlogPos("bin.000010", 4) < BinlogPos("bin.000010", 5)
    assert max([BinlogPos("bin.999999", 1), BinlogPos("bin.1000000", 1)]).file == "bin.1000000"


def history_with_versions() -> SchemaHistory:
    cat = Catalog()
    cat.tables[("db", "t")] = table("a")
    h = SchemaHistory.from_catalog(cat, BinlogPos("bin.000001", 100), "0-1-5")
    h.record(DdlRecord("bin.000001", 500, 600, "ALTER TABLE t ADD b INT", "db", "alter_table", "0-1-6",
                       [("alter", ("db", "t"), None)]), {("db", "t"): table("a", "b")})
    h.record(DdlRecord("bin.000002", 300, 400, "DROP TABLE t", "db", "drop_table", "0-1-7",
                       [("drop", ("db", "t"), None)]), {("db", "t"): None})
    return h


def test_table_at_answers_with_the_version_of_that_time() -> None:
    h = history_with_versions()
    key = ("db", "t")
    assert h.table_at(key, BinlogPos("bin.000001", 100)).describe() == "db.t(a int)"
    assert h.table_at(key, BinlogPos("bin.000001", 599)).describe() == "db.t(a int)"
    assert h.table_at(key, BinlogPos("bin.000001", 600)).describe() == "db.t(a int, b int)"
    assert h.table_at(key, BinlogPos("bin.000002", 4)).describe() == "db.t(a int, b int)"
    assert h.table_at(key, BinlogPos("bin.000002", 400)) is None
    assert h.table_at(key) is None and ("db", "t") not in h.head_catalog().tables
    with pytest.raises(SchemaError, match="before the start"):
        h.table_at(key, BinlogPos("bin.000001", 50))
    assert h.find_record("bin.000001", 500).statement == "ALTER TABLE t ADD b INT"
    assert h.find_record("bin.000001", 501) is None


def test_nothing_is_recorded_behind_the_head() -> None:
    h = history_with_versions()
    with pytest.raises(SchemaError, match="already extends"):
        h.record(DdlRecord("bin.000001", 700, 800, "x", "db", "alter_table", None, []), {})
    with pytest.raises(SchemaError):
        h.put(("db", "u"), table("z"), BinlogPos("bin.000001", 900))


def test_compaction_keeps_what_the_oldest_checkpoint_needs() -> None:
    h = history_with_versions()
    h.record(DdlRecord("bin.000003", 10, 50, "CREATE TABLE u (z INT)", "db", "create_table", None,
                       [("create", ("db", "u"), None)]), {("db", "u"): table("z")})
    assert h.compact(BinlogPos("bin.000001", 700)) == 1
    assert [v.table.describe() if v.table else None for v in h.versions[("db", "t")]] == [
        "db.t(a int, b int)", None]
    assert h.start == BinlogPos("bin.000001", 700) and len(h.log) == 2
    # once the drop is older than every checkpoint, the table is forgotten entirely
    h.compact(BinlogPos("bin.000002", 500))
    assert ("db", "t") not in h.versions and ("db", "u") in h.versions
    assert [r.statement for r in h.log] == ["CREATE TABLE u (z INT)"]


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    h = history_with_versions()
    path = history_path(tmp_path / "run" / "checkpoint.json")
    assert path.name == "checkpoint.json.schema.json"
    h.save(path)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind
    loaded = SchemaHistory.load(path)
    assert loaded.to_dict() == h.to_dict()
    assert loaded.start_gtid == "0-1-5" and loaded.log[0].gtid == "0-1-6"
    assert loaded.table_at(("db", "t"), BinlogPos("bin.000001", 650)).describe() == "db.t(a int, b int)"


def test_foreign_and_future_files_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(SchemaError, match="not a binlake schema history"):
        SchemaHistory.load(p)
    p.write_text(json.dumps({"format": "binlake-schema-history", "version": 99}))
    with pytest.raises(SchemaError, match="newer"):
        SchemaHistory.load(p)
