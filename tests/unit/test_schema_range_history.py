"""A schema history for a past start (schema/range_history.py) and the tracker's opaque tables:
which tables' shapes at the start the range's DDL leaves known, and what their rows get."""
from __future__ import annotations

import pytest

from binlake.errors import SchemaError
from binlake.schema.history import BinlogPos, SchemaHistory
from binlake.schema.range_history import LoggedQuery, classify, range_history
from binlake.schema.tracker import ShapeUnknownError, SchemaTracker

from test_schema_corpus import query_event
from test_schema_tracker import tm_for

F = "binlog.000001"
BEFORE = [(10, "CREATE TABLE u (id INT UNSIGNED PRIMARY KEY)"), (20, "CREATE TABLE a (id INT)"),
          (30, "CREATE TABLE r (id INT)"), (40, "CREATE TABLE d (id INT)")]
RANGE = [(1100, "CREATE TABLE n (id BIGINT UNSIGNED PRIMARY KEY)"),
         (1200, "ALTER TABLE n ADD c INT"),
         (1300, "ALTER TABLE a ADD b INT"),
         (1400, "RENAME TABLE r TO r2"),
         (1500, "DROP TABLE d"),
         (1600, "CREATE TABLE d (x VARCHAR(3))"),
         (1700, "INSERT INTO u VALUES (1)")]


def _replay(tr: SchemaTracker, stmts: list[tuple[int, str]]) -> None:
    for pos, sql in stmts:
        tr.on_query(query_event(sql, pos, schema="db"))


@pytest.fixture
def now() -> SchemaTracker:
    """Every statement applied: the server's state at the end (what information_schema shows)."""
    tr = SchemaTracker()
    _replay(tr, BEFORE + RANGE)
    return tr


def _start(now: SchemaTracker) -> tuple[SchemaTracker, object]:
    found = classify([LoggedQuery(BinlogPos(F, p), "db", q) for p, q in RANGE],
                     now.history.head_catalog(), lambda s, t: True)
    bootstrap = SchemaHistory.from_catalog(now.history.head_catalog(), BinlogPos(F, 9000))
    tr = SchemaTracker(range_history(bootstrap, found, BinlogPos(F, 1000)))
    return tr, found


def test_classify_sorts_tables_by_what_is_known_at_the_start(now: SchemaTracker) -> None:
    _, found = _start(now)
    assert found.created == {("db", "n"), ("db", "r2")}
    assert set(found.opaque) == {("db", "a"), ("db", "d")}
    assert found.moved == {("db", "r"): ("db", "r2")}  # r2 now is r at the start
    assert found.opaque[("db", "a")] == f"ALTER TABLE a ADD b INT at {F}:1300"
    assert found.redefined == {("db", "d")}


def test_replay_names_created_and_untouched_tables_and_refuses_opaque_ones(now: SchemaTracker) -> None:
    tr, _ = _start(now)
    cat = now.history.head_catalog()
    # untouched: information_schema's shape, valid from the start
    assert tr.resolve(tm_for(cat.table("db", "u"), offset=1050)).columns[0].unsigned is True
    _replay(tr, RANGE)
    n = tr.resolve(tm_for(cat.table("db", "n"), offset=1350))
    assert n.column_names == ["id", "c"] and n.columns[0].unsigned is True
    assert tr.resolve(tm_for(cat.table("db", "d"), offset=1750)).column_names == ["x"]
    # an opaque table's map: named as the binlog has it; its rows are refused when decoded
    a = tr.resolve(tm_for(cat.table("db", "a"), offset=1350))
    assert a.column_names == ["@1", "@2"]
    with pytest.raises(ShapeUnknownError, match=r"db\.a, rows after its TABLE_MAP at binlog\."
                                                 r"000001:1350: .*first: ALTER TABLE a ADD b INT "
                                                 r"at binlog\.000001:1300"):
        a.row_decoders.get((30, b"\x03", False))
    assert tr.resolve(tm_for(cat.table("db", "r2"), offset=1550)).column_names == ["id"]
    # a FULL TABLE_MAP names its own columns: passed through
    full = tm_for(cat.table("db", "a"), offset=1350, full=True)
    assert tr.resolve(full).column_names == ["id", "b"]
    # a table left out of the stream is never refused (the decoder asks for every map)
    tr.tables = lambda s, t: t != "a"
    assert tr.resolve(tm_for(cat.table("db", "a"), offset=1350)).row_decoders == {}
    tr.tables = lambda s, t: True
    # what stays opaque is kept with the history (a restart refuses the same rows)
    assert set(tr.history.opaque) == {("db", "a")}
    again = SchemaHistory.from_dict(tr.history.to_dict())
    assert again.opaque == tr.history.opaque


def test_a_ddl_without_table_names_makes_every_table_opaque(now: SchemaTracker) -> None:
    found = classify([LoggedQuery(BinlogPos(F, 1100), "db", "CREATE ??? nonsense")],
                     now.history.head_catalog(), lambda s, t: True)
    assert found.everything is not None
    bootstrap = SchemaHistory.from_catalog(now.history.head_catalog(), BinlogPos(F, 9000))
    h = range_history(bootstrap, found, BinlogPos(F, 1000))
    assert ("db", "u") in h.opaque and not h.versions


@pytest.mark.parametrize("sql, created", [
    ("CREATE TABLE IF NOT EXISTS u (id INT)", False),  # logged even when u existed
    ("CREATE OR REPLACE TABLE u (id INT)", False),
    ("CREATE TABLE u2 LIKE u", True),
    ("DROP DATABASE db", False),
    ("TRUNCATE TABLE u", None),  # no shape change: untouched
    ("CREATE TEMPORARY TABLE u (id INT)", None),
    ("/* gh-ost */ ALTER TABLE u ADD COLUMN z INT", False),
    ("GRANT SELECT ON db.u TO 'x'@'%'", None),
    ("ANALYZE TABLE u", None),
])
def test_first_statements(now: SchemaTracker, sql: str, created: bool | None) -> None:
    found = classify([LoggedQuery(BinlogPos(F, 1100), "db", sql)], now.history.head_catalog(),
                     lambda s, t: t != "a")
    key = ("db", "u2") if "u2" in sql else ("db", "u")
    if created is None:
        assert not found.touched
    else:
        assert (key in found.created) is created and (key in found.opaque) is not created
    assert ("db", "a") not in found.opaque  # untracked tables are never marked


def test_schema_error_is_what_the_cli_reports() -> None:
    assert issubclass(ShapeUnknownError, SchemaError)


def test_the_swap_of_an_online_schema_change_keeps_the_table_known() -> None:
    """gh-ost's cut-over: the old table renamed away (and kept), the altered copy renamed in."""
    before = [(10, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")]
    swap = [(1100, "CREATE TABLE _t_gho LIKE t"),
            (1200, "ALTER TABLE _t_gho ADD COLUMN w INT"),
            (1300, "RENAME TABLE t TO _t_del, _t_gho TO t")]
    now = SchemaTracker()
    _replay(now, before + swap)
    cat = now.history.head_catalog()
    found = classify([LoggedQuery(BinlogPos(F, p), "db", q) for p, q in swap], cat,
                     lambda s, t: True)
    assert found.moved == {("db", "t"): ("db", "_t_del")} and not found.opaque
    tr = SchemaTracker(range_history(SchemaHistory.from_catalog(cat, BinlogPos(F, 9000)), found,
                                     BinlogPos(F, 1000)))
    old = tr.resolve(tm_for(cat.table("db", "_t_del").renamed("db", "t"), offset=1050))
    assert (old.table, old.column_names) == ("t", ["id", "v"])
    _replay(tr, swap)
    assert tr.resolve(tm_for(cat.table("db", "t"), offset=1450)).column_names == ["id", "v", "w"]
    # dropped afterwards, the old table leaves nothing to take the shape from
    found = classify([LoggedQuery(BinlogPos(F, p), "db", q)
                      for p, q in swap + [(1400, "DROP TABLE _t_del")]], cat, lambda s, t: True)
    assert not found.moved and set(found.opaque) == {("db", "t")}
