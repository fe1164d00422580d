"""The table model: collation ids, the TABLE_MAP view of each column type, keys, JSON form."""
from __future__ import annotations

import pytest

from binlake.binlog.columns.charsets import charset_of
from binlake.binlog.constants import ColumnType as T
from binlake.schema.model import (
    BUILTIN_COLLATIONS, Collations, Column, Index, TableDef, binlog_shapes, column_collation_id,
)


@pytest.mark.parametrize("name,cid", [
    ("utf8mb4_general_ci", 45), ("utf8mb4_bin", 46), ("latin1_swedish_ci", 8), ("binary", 63),
    ("utf8mb4_unicode_ci", 224), ("utf8mb4_unicode_520_ci", 246), ("utf8mb3_general_ci", 33),
    ("utf8_general_ci", 33), ("UTF8MB4_GENERAL_CI", 45), ("latin1_swedish_nopad_ci", 1032),
    ("utf8mb4_nopad_bin", 1070), ("utf8mb4_unicode_520_nopad_ci", 1270),
    ("utf8mb4_croatian_ci", 608), ("ucs2_thai_520_w2", 642), ("utf8mb4_0900_ai_ci", 255),
    ("gb18030_chinese_ci", 248),
])
def test_collation_ids(name: str, cid: int) -> None:
    assert BUILTIN_COLLATIONS.id_of(name) == cid


def test_unknown_collation_falls_back_to_its_charset() -> None:
    c = BUILTIN_COLLATIONS
    assert c.charset_of("utf8mb4_uca1400_ai_ci") == "utf8mb4"
    assert c.id_of("utf8mb4_uca1400_ai_ci") == 45  # decodes the same bytes
    assert c.id_of(None, "latin1") == 8
    assert c.id_of("nonsense") is None


def test_builtin_table_agrees_with_the_decoder() -> None:
    """Every id the model hands to the decoder decodes with the charset its name says."""
    c = Collations.builtin()
    assert len(c.ids) > 300
    for name, cid in c.ids.items():
        expected = c.charset_of_name[name]
        assert charset_of(cid) in (expected, "utf8" if expected == "utf8mb3" else expected), name


def test_server_rows_overlay_the_builtin_table() -> None:
    c = Collations.builtin()
    c.load_rows([("utf8mb4_uca1400_ai_ci", "utf8mb4", 2304, True)], [("utf8mb4", "utf8mb4_uca1400_ai_ci", 4)])
    assert c.id_of("utf8mb4_uca1400_ai_ci") == 2304
    assert c.default_collation("utf8mb4") == "utf8mb4_uca1400_ai_ci"
    assert Collations.from_dict(c.to_dict()).id_of("utf8mb4_uca1400_ai_ci") == 2304


@pytest.mark.parametrize("col,shapes", [
    (Column("a", "int"), [(T.LONG, 0)]),
    (Column("a", "mediumint", unsigned=True), [(T.INT24, 0)]),
    (Column("a", "decimal", precision=12, scale=4), [(T.NEWDECIMAL, 0x0C04)]),
    (Column("a", "bit", length=10), [(T.BIT, 0x0102)]),
    (Column("a", "datetime", fsp=3), [(T.DATETIME2, 3), (T.DATETIME, 0)]),
    (Column("a", "char", length=10, charset="utf8mb4"), [(T.STRING, 0xFE28)]),
    (Column("a", "char", length=255, charset="utf8mb4"), [(T.STRING, (0xFE ^ 0x30) << 8 | 0xFC)]),
    (Column("a", "binary", length=4), [(T.STRING, 0xFE04)]),
    (Column("a", "varchar", length=100, charset="latin1"), [(T.VARCHAR, 100)]),
    (Column("a", "varchar", length=100, charset="utf8mb3"), [(T.VARCHAR, 300)]),
    (Column("a", "enum", values=("x", "y")), [(T.STRING, 0xF701)]),
    (Column("a", "set", values=tuple("abcdefghi")), [(T.STRING, 0xF802)]),
    (Column("a", "set", values=tuple(str(i) for i in range(40))), [(T.STRING, 0xF808)]),
    (Column("a", "mediumtext", charset="utf8mb4"), [(T.BLOB, 3)]),
    (Column("a", "json"), [(T.JSON, 4), (T.BLOB, 4)]),
    (Column("a", "point"), [(T.GEOMETRY, 4)]),
    (Column("a", "uuid"), [(T.STRING, 0xFE10)]),
    (Column("a", "inet4"), [(T.STRING, 0xFE04)]),
])
def test_binlog_shapes(col: Column, shapes: list) -> None:
    assert binlog_shapes(col) == shapes


def test_collation_ids_of_columns() -> None:
    assert column_collation_id(Column("a", "varbinary", length=3)) == 63
    assert column_collation_id(Column("a", "json")) == 46
    assert column_collation_id(Column("a", "varchar", length=3, charset="latin1",
                                      collation="latin1_bin")) == 47
    assert column_collation_id(Column("a", "int")) is None


def _t(cols, indexes=(), versioned=False) -> TableDef:
    return TableDef("db", "t", tuple(cols), tuple(indexes), system_versioned=versioned)


def test_key_indexes_follow_the_server_rules() -> None:
    a, b, c = Column("a", "int", nullable=False), Column("b", "int"), Column("c", "int", nullable=False)
    assert _t([a, b, c], [Index("PRIMARY", "primary", ("c", "a"))]).key_indexes() == (2, 0)
    # no primary key: the first UNIQUE key on whole NOT NULL columns stands in
    uniq = [Index("ub", "unique", ("b",)), Index("uc", "unique", ("c",)), Index("ua", "unique", ("a",))]
    assert _t([a, b, c], uniq).key_indexes() == (2,)
    assert _t([a, b, c], [Index("p", "unique", ("a",), (3,))]).key_indexes() is None
    assert _t([a, b], [Index("k", "key", ("a",))]).key_indexes() is None
    # system-versioned tables add row_end to the key
    end = Column("row_end", "timestamp", fsp=6, nullable=False, generated="row_end", implicit=True)
    assert _t([a, b, end], [Index("PRIMARY", "primary", ("a",))], versioned=True).key_indexes() == (0, 2)


def test_table_round_trips_through_json() -> None:
    t = TableDef("db", "t", (Column("id", "bigint", unsigned=True, nullable=False),
                             Column("e", "enum", values=("a", "b"), charset="latin1", collation="latin1_bin"),
                             Column("j", "longtext", charset="utf8mb4", is_json=True),
                             Column("v", "int", generated="virtual", expression="`id` + 1", invisible=True)),
                 (Index("PRIMARY", "primary", ("id",)), Index("ix", "key", ("e", None), (2, None))),
                 "utf8mb4", "utf8mb4_general_ci", json_checks=(("ck", "j"),))
    assert TableDef.from_dict(t.to_dict()) == t
    assert t.describe() == ("db.t(id bigint unsigned, e enum('a','b'), j longtext, "
                            "v int virtual invisible)")
