"""DDL parsing and its effect on the model, statement by statement."""
from __future__ import annotations

import pytest

from binlake.errors import SchemaError
from binlake.schema import ddl
from binlake.schema.ddl import ApplyContext, DdlParseError, UnknownTableError
from binlake.schema.model import Catalog, DatabaseDef


def apply_all(cat: Catalog, *statements: str, schema: str = "db", mode: int = 0,
              tracked=lambda s, t: True) -> list[ddl.TableChange]:
    changes = []
    for sql in statements:
        for st in ddl.parse(sql, mode):
            changes += ddl.apply(st, cat, ApplyContext(schema, tracked))
    return changes


def shape(cat: Catalog, table: str, schema: str = "db") -> str:
    t = cat.table(schema, table)
    assert t is not None, f"{schema}.{table} missing"
    return t.describe().split("(", 1)[1][:-1]


@pytest.fixture
def cat() -> Catalog:
    return Catalog(databases={"db": DatabaseDef("db", "utf8mb4", "utf8mb4_general_ci")})


def test_versioned_comments_are_executed_and_strings_left_alone() -> None:
    sql = "CREATE TABLE t (a INT COMMENT '/*!99 not code */') /*!50100 PARTITION BY HASH(a) */ /*M!100100 COMMENT='x' */"
    out = ddl.unwrap_versioned_comments(sql)
    assert "'/*!99 not code */'" in out and "PARTITION BY HASH(a)" in out and "COMMENT='x'" in out
    assert "/*!50100" not in out and "*/ " not in out.split("'")[-1]


def test_statements_split_but_routine_bodies_do_not() -> None:
    stmts = ddl.parse("ALTER TABLE a ADD x INT; ALTER TABLE b ADD y INT;")
    assert [type(s).__name__ for s in stmts] == ["AlterTable", "AlterTable"]
    body = "CREATE PROCEDURE p() BEGIN ALTER TABLE a ADD z INT; DROP TABLE b; END"
    assert [type(s).__name__ for s in ddl.parse(body)] == ["Ignored"]


def test_sql_mode_changes_how_text_reads(cat: Catalog) -> None:
    apply_all(cat, 'CREATE TABLE "q" ("a" REAL, b VARCHAR(2))', mode=ddl.MODE_ANSI_QUOTES | ddl.MODE_REAL_AS_FLOAT)
    assert shape(cat, "q") == "a float, b varchar(2)"
    apply_all(cat, r"CREATE TABLE e (x ENUM('a\'b', 'c'))")
    assert shape(cat, "e") == "x enum('a''b','c')"
    apply_all(cat, r"CREATE TABLE e2 (x ENUM('a\', 'c'))", mode=ddl.MODE_NO_BACKSLASH_ESCAPES)
    assert shape(cat, "e2") == r"x enum('a\','c')"


def test_swapping_column_names_keeps_keys_on_the_right_columns(cat: Catalog) -> None:
    apply_all(cat, "CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, PRIMARY KEY (a), UNIQUE KEY (b))",
              "ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a")
    t = cat.table("db", "t")
    assert t.primary_key == ("b",) and t.key_indexes() == (0,)
    assert [ix.columns for ix in t.indexes] == [("b",), ("a",)]


def test_change_and_after_refer_to_old_and_new_names(cat: Catalog) -> None:
    apply_all(cat, "CREATE TABLE t (a INT, b INT, c INT)",
              "ALTER TABLE t CHANGE a x BIGINT, MODIFY c INT FIRST, ADD d INT AFTER x")
    assert shape(cat, "t") == "c int, x bigint, d int, b int"


def test_dropping_a_column_shrinks_or_removes_its_keys(cat: Catalog) -> None:
    apply_all(cat, "CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, c INT, PRIMARY KEY (a, b), KEY kc (c))",
              "ALTER TABLE t DROP COLUMN b, DROP COLUMN c")
    t = cat.table("db", "t")
    assert [(ix.name, ix.columns) for ix in t.indexes] == [("PRIMARY", ("a",))]


def test_primary_key_columns_become_not_null(cat: Catalog) -> None:
    apply_all(cat, "CREATE TABLE t (a INT, b INT)", "ALTER TABLE t ADD PRIMARY KEY (b)")
    t = cat.table("db", "t")
    assert [c.nullable for c in t.columns] == [True, False] and t.key_indexes() == (1,)


def test_database_defaults_reach_new_tables(cat: Catalog) -> None:
    apply_all(cat, "CREATE DATABASE d2 CHARACTER SET latin1", "CREATE TABLE d2.t (a VARCHAR(3), b TEXT CHARSET utf8mb4)")
    t = cat.table("d2", "t")
    assert [(c.charset, c.collation) for c in t.columns] == [
        ("latin1", "latin1_swedish_ci"), ("utf8mb4", "utf8mb4_general_ci")]
    changes = apply_all(cat, "DROP DATABASE d2")
    assert [(c.kind, c.key) for c in changes] == [("drop", ("d2", "t"))] and "d2" not in cat.databases


def test_column_charset_rules(cat: Catalog) -> None:
    apply_all(cat, "CREATE TABLE t (a CHAR(2) BINARY, b VARCHAR(2) CHARSET latin1 COLLATE latin1_bin, "
                   "c TEXT CHARACTER SET binary, d VARCHAR(2) COLLATE utf8mb3_unicode_ci, e ENUM('x') ASCII) "
                   "COLLATE utf8mb4_unicode_ci")
    t = cat.table("db", "t")
    assert [(c.type, c.charset, c.collation) for c in t.columns] == [
        ("char", "utf8mb4", "utf8mb4_bin"), ("varchar", "latin1", "latin1_bin"),
        ("blob", None, None), ("varchar", "utf8mb3", "utf8mb3_unicode_ci"),
        ("enum", "latin1", "latin1_swedish_ci")]
    assert t.collation == "utf8mb4_unicode_ci"


def test_unknown_tracked_tables_are_errors_untracked_ones_are_not(cat: Catalog) -> None:
    with pytest.raises(UnknownTableError):
        apply_all(cat, "ALTER TABLE nowhere ADD x INT")
    assert apply_all(cat, "ALTER TABLE nowhere ADD x INT", tracked=lambda s, t: t != "nowhere") == []
    with pytest.raises(UnknownTableError):
        apply_all(cat, "CREATE TABLE t2 LIKE nowhere")
    assert apply_all(cat, "DROP TABLE IF EXISTS nowhere") == []


@pytest.mark.parametrize("sql", [
    "ALTER TABLE t ADD x INT WHATEVER",
    "CREATE TABLE t (a INT) FOO BAR",
    "ALTER TABLE t MODIFY a NOTATYPE",
    "ALTER TABLE t ADD COLUMN (a INT",
    "CREATE TABLE t (a ENUM(1, 2))",
    "CRAETE TABLE t (a INT)",
])
def test_what_is_not_understood_is_refused(sql: str) -> None:
    with pytest.raises(DdlParseError) as err:
        ddl.parse(sql)
    assert sql.split()[0] in str(err.value)


def test_failed_statement_leaves_the_catalog_untouched(cat: Catalog) -> None:
    apply_all(cat, "CREATE TABLE t (a INT)")
    work = cat.copy()
    with pytest.raises(SchemaError):
        apply_all(work, "ALTER TABLE t ADD b INT, DROP COLUMN nope")
    assert shape(cat, "t") == "a int"


def test_guess_tables_for_unparseable_text() -> None:
    refs = ddl.guess_tables("ALTER TABLE `s`.`t` FROBNICATE; CREATE INDEX i ON u (a)")
    assert [(r.schema, r.name) for r in refs] == [("s", "t"), (None, "u")]


@pytest.mark.parametrize("text,expected", [
    ("int(10) unsigned zerofill", ("int", None, True, True)),
    ("tinyint(1)", ("tinyint", 1, False, False)),
    ("varchar(191)", ("varchar", 191, False, False)),
    ("enum('a','b''c')", ("enum", None, False, False)),
    ("decimal(65,30) unsigned", ("decimal", None, True, False)),
    ("bit(64)", ("bit", 64, False, False)),
    ("geomcollection", ("geometrycollection", None, False, False)),
])
def test_information_schema_column_types(text: str, expected: tuple) -> None:
    spec = ddl.parse_column_type(text)
    assert (spec.type, spec.length, spec.unsigned, spec.zerofill) == expected


def test_sequences_and_typed_sequences(cat: Catalog) -> None:
    apply_all(cat, "CREATE SEQUENCE s", "CREATE SEQUENCE s2 AS INT UNSIGNED START WITH 5")
    assert cat.table("db", "s").kind == "sequence"
    assert shape(cat, "s2").startswith("next_not_cached_value int unsigned, minimum_value int unsigned")
    apply_all(cat, "DROP SEQUENCE s, s2")
    assert cat.table("db", "s") is None


def test_alter_table_rename_moves_between_databases(cat: Catalog) -> None:
    apply_all(cat, "CREATE DATABASE other", "CREATE TABLE t (a INT)")
    changes = apply_all(cat, "ALTER TABLE t ADD b INT, RENAME TO other.t2")
    assert [(c.kind, c.key, c.old_key) for c in changes] == [("rename", ("other", "t2"), ("db", "t"))]
    assert shape(cat, "t2", "other") == "a int, b int"


def test_lower_case_table_names() -> None:
    cat = Catalog(lower_case_table_names=1)
    apply_all(cat, "CREATE TABLE Orders (Id INT)", schema="Shop")
    assert cat.table("shop", "orders") is not None and cat.table("SHOP", "ORDERS") is not None
    assert list(cat.tables) == [("shop", "orders")]


def test_json_checks_mark_columns(cat: Catalog) -> None:
    apply_all(cat, "CREATE TABLE t (a LONGTEXT, b LONGTEXT CHECK (json_valid(`b`)), c TEXT, "
                   "CONSTRAINT ck CHECK (json_valid(a)))",
              "ALTER TABLE t ADD CONSTRAINT ck2 CHECK (json_valid(`c`))")
    t = cat.table("db", "t")
    assert t.json_columns() == {"a", "b", "c"} and [c.is_json for c in t.columns] == [False, True, False]
    apply_all(cat, "ALTER TABLE t DROP CONSTRAINT ck2, DROP CONSTRAINT b")
    assert cat.table("db", "t").json_columns() == {"a"}
    apply_all(cat, "ALTER TABLE t ADD CHECK (json_valid(c))")
    assert cat.table("db", "t").json_checks == (("ck", "a"), ("CONSTRAINT_1", "c"))
