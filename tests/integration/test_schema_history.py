"""Schema history against a real MariaDB, with binlog_row_metadata MINIMAL and FULL.

A reader that lags behind DDL must decode every row with the column names and types of the
row's own time. These tests write rows and DDL to a real server, then read the server's binlog
files afterwards from the bootstrap position, the way a lagging or restarted reader would.
"""
from __future__ import annotations

import decimal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pymysql
import pytest

from binlake.binlog.constants import EventType
from binlake.binlog.decoder import BinlogDecoder
from binlake.binlog.events import Event, QueryEvent, RowsEvent
from binlake.cdc.changes import ChangeTracker
from binlake.errors import SchemaDriftError, SchemaError
from binlake.schema import bootstrap as bs
from binlake.schema import ddl
from binlake.schema.history import BinlogPos, SchemaHistory, file_seq
from binlake.schema.model import TableDef
from binlake.schema.tracker import DdlApplyError, SchemaTracker

CORPUS = Path(__file__).resolve().parent.parent / "unit" / "ddl_corpus"


# -- servers ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minimal_server(mariadb_factory):
    return mariadb_factory(binlog_row_metadata="MINIMAL")


@pytest.fixture(params=["MINIMAL", "FULL"])
def server(request, minimal_server, mariadb):
    srv = minimal_server if request.param == "MINIMAL" else mariadb
    if not hasattr(srv, "binlog_dir") or not Path(srv.binlog_dir).is_dir():
        pytest.skip("needs the server's binlog files on this machine")
    return srv


def connector(server) -> Callable[[], Any]:
    return lambda: server.connect(database=None)


def run(server, db: str | None, *statements: str) -> None:
    conn = server.connect(database=db, client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    try:
        with conn.cursor() as cur:
            for st in statements:
                cur.execute(st)
                while cur.nextset():
                    pass
    finally:
        conn.close()


def position(server) -> BinlogPos:
    conn = server.connect(database=None)
    try:
        return bs.binlog_position(conn.cursor())
    finally:
        conn.close()


def fresh_db(server, name: str) -> BinlogPos:
    """An empty database, and a new binlog file so nothing of it precedes the returned position."""
    run(server, None, f"DROP DATABASE IF EXISTS `{name}`", f"CREATE DATABASE `{name}`",
        "FLUSH BINARY LOGS")
    return position(server)


def only(*schemas: str) -> Callable[[str, str], bool]:
    return lambda s, t: s in schemas


# -- reading the binlog from a position ----------------------------------------------------------

def binlog_files(server, start: BinlogPos) -> list[Path]:
    files = [p for p in Path(server.binlog_dir).glob("mariadb-bin.[0-9]*")]
    return sorted((p for p in files if file_seq(p.name) >= file_seq(start.file)),
                  key=lambda p: file_seq(p.name))


def events_from(server, start: BinlogPos, tracker: SchemaTracker) -> Iterator[Event]:
    """Every event from `start` on, decoded with `tracker` as the TableResolver.

    Wires the tracker the way the decoder will: on_query right after each QUERY event, before
    the next event is decoded. In the first file only the FDE is decoded before `start`.
    """
    for path in binlog_files(server, start):
        dec = BinlogDecoder(file=path.name, table_resolver=tracker)
        data = path.read_bytes()
        pos = 4
        first = path.name == start.file
        while pos + 19 <= len(data):
            size = int.from_bytes(data[pos + 9:pos + 13], "little")
            raw = data[pos:pos + size]
            if not first or pos >= start.pos or raw[4] == EventType.FORMAT_DESCRIPTION:
                for ev in dec.decode_event(raw, pos):
                    tracker.observe(ev)
                    if isinstance(ev, QueryEvent):
                        tracker.on_query(ev)
                    yield ev
            pos += size


@dataclass
class Row:
    op: str
    table: str
    values: dict[str, Any]


def rows_from(server, start: BinlogPos, tracker: SchemaTracker, db: str) -> list[Row]:
    changes = ChangeTracker(tables=lambda s, t: s == db)
    out = []
    for ev in events_from(server, start, tracker):
        for rec in changes.records(ev):
            if rec.op not in ("insert", "update", "delete"):
                continue
            image = rec.after if rec.op != "delete" else rec.before
            out.append(Row(rec.op, rec.table, dict(image)))
    return out


# -- 1. a lagging reader across every kind of DDL ----------------------------------------------------

WORKLOAD = [
    # (statements, expected rows as (op, table, {column: value}) of the rows these statements write)
    (["INSERT INTO t VALUES (1, 'one', 10)"],
     [("insert", "t", {"id": 1, "name": "one", "qty": 10})]),
    (["ALTER TABLE t ADD COLUMN price DECIMAL(8,2) AFTER id, ADD big BIGINT UNSIGNED",
      "INSERT INTO t VALUES (2, 1.50, 'two', 20, 18446744073709551615)"],
     [("insert", "t", {"id": 2, "price": decimal.Decimal("1.50"), "name": "two", "qty": 20,
                       "big": 18446744073709551615})]),
    (["ALTER TABLE t DROP COLUMN qty", "INSERT INTO t VALUES (3, 2.00, 'three', 3)"],
     [("insert", "t", {"id": 3, "price": decimal.Decimal("2.00"), "name": "three", "big": 3})]),
    (["ALTER TABLE t CHANGE name title VARCHAR(40) CHARACTER SET latin1 NOT NULL",
      "INSERT INTO t VALUES (4, 4.00, 'qu\u00e9', 4)"],
     [("insert", "t", {"id": 4, "price": decimal.Decimal("4.00"), "title": "qu\u00e9", "big": 4})]),
    (["ALTER TABLE t MODIFY big BIGINT UNSIGNED FIRST, MODIFY title VARCHAR(40) CHARACTER SET latin1 AFTER big",
      "INSERT INTO t (id, price, title, big) VALUES (5, 5.00, 'five', 5)"],
     [("insert", "t", {"big": 5, "title": "five", "id": 5, "price": decimal.Decimal("5.00")})]),
    (["ALTER TABLE t MODIFY price VARCHAR(10), RENAME COLUMN big TO size, "
      "ADD kind ENUM('small','large') NOT NULL DEFAULT 'large', ADD doc JSON",
      "INSERT INTO t (id, price, title, size, kind, doc) VALUES (6, 'cheap', 'six', 6, 'small', '{\"a\": [1]}')",
      "UPDATE t SET title = 'SIX' WHERE id = 6", "DELETE FROM t WHERE id = 1"],
     [("insert", "t", {"size": 6, "title": "six", "id": 6, "price": "cheap", "kind": "small",
                       "doc": '{"a": [1]}'}),
      ("update", "t", {"size": 6, "title": "SIX", "id": 6, "price": "cheap", "kind": "small",
                       "doc": '{"a": [1]}'}),
      ("delete", "t", {"size": None, "title": "one", "id": 1, "price": None,
                       "kind": "large", "doc": None})]),
    (["RENAME TABLE t TO t_renamed", "INSERT INTO t_renamed (id, title) VALUES (7, 'seven')"],
     [("insert", "t_renamed", {"size": None, "title": "seven", "id": 7, "price": None,
                               "kind": "large", "doc": None})]),
    (["DROP TABLE t_renamed", "CREATE TABLE t_renamed (code CHAR(3) PRIMARY KEY, n SMALLINT)",
      "INSERT INTO t_renamed VALUES ('abc', -5)"],
     [("insert", "t_renamed", {"code": "abc", "n": -5})]),
    (["CREATE TABLE t_like LIKE t_renamed", "INSERT INTO t_like VALUES ('xyz', 9)"],
     [("insert", "t_like", {"code": "xyz", "n": 9})]),
    (["CREATE TABLE brief (a INT, b VARCHAR(3))", "INSERT INTO brief VALUES (1, 'b')",
      "DROP TABLE brief"],
     [("insert", "brief", {"a": 1, "b": "b"})]),
    # multi-statement: one client round trip, several QUERY events, and multi-table DDL
    (["ALTER TABLE t_like ADD z INT FIRST; INSERT INTO t_like VALUES (1, 'mul', 2); "
      "RENAME TABLE t_like TO t_tmp, t_renamed TO t_like, t_tmp TO t_renamed; "
      "INSERT INTO t_like VALUES ('swp', 3); INSERT INTO t_renamed VALUES (2, 'old', 4)"],
     [("insert", "t_like", {"z": 1, "code": "mul", "n": 2}),
      ("insert", "t_like", {"code": "swp", "n": 3}),
      ("insert", "t_renamed", {"z": 2, "code": "old", "n": 4})]),
    (["CREATE TABLE ctas AS SELECT code AS c, n * 2 AS n2 FROM t_like",
      "INSERT INTO ctas VALUES ('new', 8)"],
     [("insert", "ctas", {"c": "abc", "n2": -10}), ("insert", "ctas", {"c": "swp", "n2": 6}),
      ("insert", "ctas", {"c": "new", "n2": 8})]),
]


def _expected_rows() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for _, rows in WORKLOAD:
        out += rows
    return out


def test_lagging_reader_sees_each_row_with_the_schema_of_its_time(server, tmp_path: Path) -> None:
    db = "sh_lag"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, name VARCHAR(20), qty INT)")
    tracker = SchemaTracker.from_server(connector(server), tables=only(db))
    start = tracker.start
    assert start is not None and tracker.history.table_at((db, "t")) is not None
    for statements, _ in WORKLOAD:
        run(server, db, *statements)

    rows = rows_from(server, start, tracker, db)
    got = [(r.op, r.table, r.values) for r in rows]
    want = _expected_rows()
    assert got == want

    # types of their own time: the JSON column is JSON, the latin1 title decoded as latin1
    assert "qu\u00e9" in [r.values.get("title") for r in rows]

    # the same history, saved and loaded, decodes the same stream again without reapplying DDL
    path = tmp_path / "checkpoint.json.schema.json"
    tracker.save(path)
    again = SchemaTracker(SchemaHistory.load(path), tables=only(db))
    assert [(r.op, r.table, r.values) for r in rows_from(server, start, again, db)] == want
    assert again.history.head == tracker.history.head
    assert not again.dirty


def test_history_versions_persist_and_compact(server, tmp_path: Path) -> None:
    db = "sh_persist"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE p (id INT PRIMARY KEY, a INT)")
    tracker = SchemaTracker.from_server(connector(server), tables=only(db))
    start = tracker.start
    run(server, db, "INSERT INTO p VALUES (1, 1)", "ALTER TABLE p ADD b INT", "INSERT INTO p VALUES (2, 2, 2)")
    checkpoint = position(server)  # a reader committed up to here
    run(server, db, "ALTER TABLE p DROP a", "INSERT INTO p VALUES (3, 3)",
        "ALTER TABLE p RENAME COLUMN b TO c", "INSERT INTO p VALUES (4, 4)")
    full = rows_from(server, start, tracker, db)
    assert [r.values for r in full] == [{"id": 1, "a": 1}, {"id": 2, "a": 2, "b": 2},
                                        {"id": 3, "b": 3}, {"id": 4, "c": 4}]
    versions = tracker.history.versions[(db, "p")]
    assert len(versions) == 4

    path = tmp_path / "ckpt.schema.json"
    tracker.save(path)
    loaded = SchemaHistory.load(path)
    removed = loaded.compact(checkpoint)
    assert removed == 1 and loaded.start == checkpoint
    assert [v.table.describe() for v in loaded.versions[(db, "p")]] == [
        f"{db}.p(id int, a int, b int)", f"{db}.p(id int, b int)", f"{db}.p(id int, c int)"]
    loaded.save(path)

    # a reader resuming at the checkpoint decodes with the versions of that time ...
    resumed = SchemaTracker(SchemaHistory.load(path), tables=only(db))
    assert [r.values for r in rows_from(server, checkpoint, resumed, db)] == \
        [{"id": 3, "b": 3}, {"id": 4, "c": 4}]
    # ... and one that goes back before it is refused, not decoded with a wrong shape
    with pytest.raises(SchemaError, match="before the start of the schema history"):
        rows_from(server, start, SchemaTracker(SchemaHistory.load(path), tables=only(db)), db)


# -- 2. drift: a change the binlog never saw --------------------------------------------------------

def test_change_outside_the_binlog_is_a_drift_error(server) -> None:
    db = "sh_drift"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE d (id INT PRIMARY KEY, v VARCHAR(10))")
    tracker = SchemaTracker.from_server(connector(server), tables=only(db))
    start = tracker.start
    saved = tracker.history.to_dict()
    run(server, db, "INSERT INTO d VALUES (1, 'a')",
        "SET sql_log_bin = 0; ALTER TABLE d ADD COLUMN secret INT; SET sql_log_bin = 1",
        "INSERT INTO d VALUES (2, 'b', 42)")
    seen: list[Row] = []
    changes = ChangeTracker()
    with pytest.raises(SchemaDriftError) as err:
        for ev in events_from(server, start, tracker):
            seen += [Row(r.op, r.table, r.after) for r in changes.records(ev) if r.op == "insert"]
    msg = str(err.value)
    tm_file = binlog_files(server, start)[-1].name
    assert f"{db}.d at {tm_file}:" in msg and "3 columns in the binlog, 2 in the history" in msg
    assert [r.values for r in seen] == [{"id": 1, "v": "a"}]  # the good row, nothing wrong

    # with a server connection the tracker may re-read the table, because the binlog shows no
    # later change to it (the re-read is only used when it matches the TABLE_MAP)
    healing = SchemaTracker(SchemaHistory.from_dict(saved), tables=only(db),
                            on_drift="rebootstrap", connect=connector(server))
    rows = rows_from(server, start, healing, db)
    assert [r.values for r in rows] == [{"id": 1, "v": "a"}, {"id": 2, "v": "b", "secret": 42}]


def test_retype_outside_the_binlog_is_caught(server) -> None:
    db = "sh_drift2"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE d (id INT PRIMARY KEY, v VARCHAR(10), n INT)")
    tracker = SchemaTracker.from_server(connector(server), tables=only(db))
    start = tracker.start
    run(server, db, "SET sql_log_bin = 0; ALTER TABLE d MODIFY n BIGINT, CHANGE v w VARCHAR(10); "
                    "SET sql_log_bin = 1", "INSERT INTO d VALUES (1, 'a', 2)")
    with pytest.raises(SchemaDriftError, match=r"column 3 \(n\): binlog LONGLONG/0, history int"):
        rows_from(server, start, tracker, db)


# -- 3. DDL that cannot be parsed --------------------------------------------------------------------

def test_unparseable_ddl_is_refetched_only_when_safe(server, monkeypatch) -> None:
    db = "sh_unparsed"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE u (id INT PRIMARY KEY, a INT)", "CREATE TABLE other (x INT)")
    history = SchemaTracker.from_server(connector(server), tables=only(db)).history
    start = history.start
    run(server, db, "ALTER TABLE u ADD COLUMN b VARCHAR(5) AFTER id", "INSERT INTO u VALUES (1, 'b', 2)")
    real_parse = ddl.parse

    def parse(sql: str, sql_mode: int = 0):
        if "ADD COLUMN b" in sql:
            raise ddl.DdlParseError("pretend this syntax is new", sql)
        return real_parse(sql, sql_mode)

    monkeypatch.setattr(ddl, "parse", parse)
    # no server to ask: an error naming the statement and its position, no rows under wrong names
    offline = SchemaTracker(SchemaHistory.from_dict(history.to_dict()), tables=only(db))
    with pytest.raises(DdlApplyError) as err:
        rows_from(server, start, offline, db)
    assert "ADD COLUMN b" in err.value.statement and err.value.pos > 0 and err.value.file

    # with a connection, and no later DDL on the table: re-read from information_schema
    online = SchemaTracker(SchemaHistory.from_dict(history.to_dict()), tables=only(db),
                           connect=connector(server))
    assert [r.values for r in rows_from(server, start, online, db)] == [{"id": 1, "b": "b", "a": 2}]

    # a later DDL on the same table makes the current shape useless for the old position
    run(server, db, "ALTER TABLE u DROP COLUMN a")
    later = SchemaTracker(SchemaHistory.from_dict(history.to_dict()), tables=only(db),
                          connect=connector(server))
    with pytest.raises(DdlApplyError):
        rows_from(server, start, later, db)


def test_unparseable_ddl_on_untracked_tables_is_ignored(server, monkeypatch) -> None:
    db = "sh_unparsed2"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE keep (id INT PRIMARY KEY)")
    tracker = SchemaTracker.from_server(connector(server), tables=lambda s, t: s == db and t == "keep")
    start = tracker.start
    run(server, db, "CREATE TABLE skip_me (a INT)", "ALTER TABLE skip_me ADD b INT",
        "INSERT INTO keep VALUES (1)")
    real_parse = ddl.parse

    def parse(sql: str, sql_mode: int = 0):
        if "skip_me" in sql:
            raise ddl.DdlParseError("pretend this syntax is new", sql)
        return real_parse(sql, sql_mode)

    monkeypatch.setattr(ddl, "parse", parse)
    assert [r.values for r in rows_from(server, start, tracker, db)] == [{"id": 1}]


# -- 4. server features ----------------------------------------------------------------------------

def test_two_phase_alter_applies_at_commit(server) -> None:
    db = "sh_2pa"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE a2 (id INT PRIMARY KEY)")
    tracker = SchemaTracker.from_server(connector(server), tables=only(db))
    start = tracker.start
    run(server, db, "SET SESSION binlog_alter_two_phase = 1; ALTER TABLE a2 ADD COLUMN v INT",
        "INSERT INTO a2 VALUES (1, 2)")
    assert [r.values for r in rows_from(server, start, tracker, db)] == [{"id": 1, "v": 2}]
    assert len(tracker.history.versions[(db, "a2")]) == 2  # the START ALTER did not apply it twice


def test_virtual_invisible_and_versioned_columns_are_in_mariadb_row_images(server) -> None:
    """Verified against MariaDB 10.11: VIRTUAL generated columns, INVISIBLE columns and the
    implicit row_start/row_end of system-versioned tables are all in the TABLE_MAP and carry
    values in every row image (MySQL leaves VIRTUAL values out of the after image only when
    binlog_row_value_options says so; its TABLE_MAP still lists them)."""
    db = "sh_gen"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE g (id INT PRIMARY KEY, v INT AS (id * 10) VIRTUAL, "
                    "s INT AS (id + 1) STORED, h INT INVISIBLE DEFAULT 7, j JSON)")
    tracker = SchemaTracker.from_server(connector(server), tables=only(db))
    start = tracker.start
    run(server, db, "INSERT INTO g (id, j) VALUES (1, '[1, 2]')",
        "CREATE TABLE vers (id INT PRIMARY KEY, x INT) WITH SYSTEM VERSIONING",
        "INSERT INTO vers VALUES (1, 1)", "UPDATE vers SET x = 2")
    rows = rows_from(server, start, tracker, db)
    assert rows[0].values == {"id": 1, "v": 10, "s": 2, "h": 7, "j": "[1, 2]"}  # MariaDB JSON: the stored text
    assert rows[0].table == "g"
    assert [list(r.values) for r in rows[1:]] == [["id", "x", "row_start", "row_end"]] * 3
    tm = next(ev.table for ev in events_from(server, start, SchemaTracker(
        SchemaHistory.from_dict(tracker.history.to_dict()), tables=only(db)))
        if isinstance(ev, RowsEvent) and ev.table.table == "g")
    assert [c.is_json for c in tm.columns] == [False, False, False, False, True]
    assert [c.visible for c in tm.columns] == [True, True, True, False, True]


# -- 5. the corpus, executed by the server and compared with information_schema ------------------

@dataclass
class Snapshot:
    case: str
    pos: BinlogPos
    tables: dict[tuple[str, str], TableDef] = field(default_factory=dict)


def _load_corpus(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("schema_corpus", CORPUS.parent / "test_schema_corpus.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules.setdefault("schema_corpus", mod)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.load_cases(path)


def _normal(t: TableDef) -> dict[str, Any]:
    """What decoding depends on, in a form the DDL model and information_schema share."""
    cols = []
    json_cols = t.json_columns()
    for c in t.columns:
        ctype, is_json = c.type, c.key in json_cols
        if ctype == "json":  # MariaDB stores JSON as LONGTEXT + CHECK (json_valid(col))
            ctype, is_json = "longtext", True
        cols.append((c.name, ctype, c.length if ctype != "tinyint" else None, c.precision, c.scale,
                     c.fsp, c.unsigned, c.zerofill, c.charset, c.collation, c.values, c.nullable,
                     c.generated, c.invisible, is_json))
    keys = sorted((ix.kind, tuple(ix.columns)) for ix in t.indexes if ix.is_unique)
    return {"columns": cols, "unique_keys": keys, "versioned": t.system_versioned,
            "json_checks": sorted((n, c.lower()) for n, c in t.json_checks),
            "kind": t.kind, "key_indexes": t.key_indexes()}


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.sql")), ids=lambda p: p.stem)
def test_corpus_matches_the_server(server, path: Path) -> None:
    db = "corpus"
    extra = "corpus_extra"
    start = fresh_db(server, db)
    run(server, None, f"DROP DATABASE IF EXISTS {extra}", "DROP USER IF EXISTS 'corpus_reader'@'localhost'")
    start = position(server)
    snapshots: list[Snapshot] = []
    conn = server.connect(database=db)
    try:
        cur = conn.cursor()
        for case in _load_corpus(path):
            if not case.server:
                continue
            try:
                if case.sql_mode:
                    cur.execute(f"SET SESSION sql_mode = CONCAT(@@GLOBAL.sql_mode, ',{case.sql_mode}')")
                cur.execute(case.sql)
                if case.sql_mode:
                    cur.execute("SET SESSION sql_mode = DEFAULT")
            except pymysql.MySQLError as exc:
                if case.expect == "error":
                    continue
                raise AssertionError(f"{path.name}: {case.title}: the server refused it: {exc}")
            snap = Snapshot(case.title, bs.binlog_position(cur))
            cat = bs.read_catalog(cur, tables=only(db))
            snap.tables = {k: v for k, v in cat.tables.items()}
            snapshots.append(snap)
            for key in snap.tables:  # rows, so every TABLE_MAP is cross-checked too
                for dml in (f"INSERT IGNORE INTO `{key[1]}` () VALUES ()", f"DELETE FROM `{key[1]}`"):
                    try:
                        cur.execute(dml)
                    except pymysql.MySQLError:
                        pass
    finally:
        conn.close()

    tracker = SchemaTracker(tables=only(db, extra))  # DDL-only: no bootstrap at all
    pending = list(snapshots)
    rows = compared = 0
    for ev in events_from(server, start, tracker):
        rows += isinstance(ev, RowsEvent)
        here = BinlogPos(ev.file, ev.end)
        while pending and here >= pending[0].pos:
            snap = pending.pop(0)
            compared += len(snap.tables)
            model = {k: v for k, v in tracker.history.head_catalog().tables.items() if k[0] == db}
            assert sorted(model) == sorted(snap.tables), snap.case
            for key, table in snap.tables.items():
                mine, theirs = _normal(model[key]), _normal(table)
                diff = [(a, b) for a, b in zip(mine["columns"], theirs["columns"]) if a != b]
                other = {k: (mine[k], theirs[k]) for k in mine if k != "columns" and mine[k] != theirs[k]}
                assert not diff and not other, f"{path.name}: {snap.case}: {key[1]}: {diff} {other}"
    assert not pending, [s.case for s in pending]
    assert rows > 0 and compared >= len(snapshots)


# -- 6. bootstrap ----------------------------------------------------------------------------------

def test_bootstrap_repeats_the_read_when_ddl_lands_in_between(server, monkeypatch) -> None:
    db = "sh_boot"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE b (id INT PRIMARY KEY, v INT)")
    real = bs.read_catalog
    calls = []

    def racing_read(cur, **kw):
        calls.append(1)
        if len(calls) == 1:  # another session alters the table while we read
            run(server, db, "ALTER TABLE b ADD w INT")
        return real(cur, **kw)

    monkeypatch.setattr(bs, "read_catalog", racing_read)
    conn = server.connect(database=None)
    try:
        history = bs.bootstrap(conn, tables=only(db))
    finally:
        conn.close()
    assert len(calls) == 2
    assert history.table_at((db, "b")).describe() == f"{db}.b(id int, v int, w int)"
    assert history.start == position(server) and history.start_gtid


def test_bootstrap_under_lock_and_with_a_consistent_snapshot(server) -> None:
    db = "sh_boot2"
    fresh_db(server, db)
    run(server, db, "CREATE TABLE c (id INT PRIMARY KEY, v JSON, e ENUM('x') CHARACTER SET latin1)",
        "INSERT INTO c VALUES (1, '{}', 'x')")
    locked = SchemaTracker.from_server(connector(server), tables=only(db), lock=True)
    assert locked.start == position(server)
    conn = server.connect(database=db)
    try:
        history = bs.bootstrap(conn, tables=only(db), consistent_snapshot=True)
        run(server, db, "INSERT INTO c VALUES (2, '[]', 'x')")
        with conn.cursor() as cur:  # the snapshot transaction is still open: row 2 is invisible
            cur.execute("SELECT COUNT(*) FROM c")
            assert cur.fetchone()[0] == 1
        conn.rollback()
    finally:
        conn.close()
    t = history.table_at((db, "c"))
    assert t.json_columns() == {"v"} and t.columns[2].collation == "latin1_swedish_ci"
    assert history.start < position(server)
    rows = rows_from(server, history.start, SchemaTracker(history, tables=only(db)), db)
    assert [r.values for r in rows] == [{"id": 2, "v": "[]", "e": "x"}]  # MariaDB JSON: the stored text
