"""Schema evolution in the Delta apply step, driven by `op = 'ddl'` records.

The CDC batches are built by hand, with the ddl records' JSON made by the real schema tracker
from the DDL text (as the binlog reader would attach it), so the apply step sees exactly what
a tracked stream carries. Each batch mixes rows before and after its DDL.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.binlog.events import QueryEvent
from binlake.binlog.header import EventHeader
from binlake.schema.tracker import SchemaTracker
from binlake.spark import evolve
from binlake.spark.apply import ApplyConfig, ApplyError, TableOptions, apply_batch, table_path
from binlake.cdc.arrow import CDC_DDL

pytestmark = pytest.mark.spark

DB = "evo"
FILE = "mariadb-bin.000003"
TS = dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc)


class Binlog:
    """Builds CDC batches: row changes, and DDL described by a real SchemaTracker."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.tracker = SchemaTracker()
        self.pos = 1000
        self.records: list[tuple[Any, ...]] = []

    def _next(self) -> int:
        self.pos += 100
        return self.pos

    def ddl(self, sql: str) -> tuple[int, ...]:
        pos = self._next()
        header = EventHeader(timestamp=int(TS.timestamp()), type_code=2, server_id=1,
                             event_size=50, log_pos=pos + 50, flags=0)
        ev = QueryEvent(header=header, file=FILE, offset=pos, end=pos + 50, thread_id=1,
                        exec_time=0, error_code=0, schema=DB, query=sql,
                        status_vars={"charset": {"client": 45, "connection": 45, "server": 45}})
        change = self.tracker.on_query(ev)
        assert change is not None, sql
        doc = json.dumps(change.to_json())
        seq = (3, pos, -1, 0)
        for schema, table in change.tables:
            self.records.append(("ddl", schema, table, FILE, pos, pos + 50, 0, None, None, TS,
                                 seq, None, None, sql, doc))
        return seq

    def row(self, op: str, table: str, before: dict | None = None,
            after: dict | None = None) -> None:
        pos = self._next()
        self.records.append((op, DB, table, FILE, pos, pos + 50, 0, None, None, TS,
                             (3, pos, -1, 0), json.dumps(before) if before is not None else None,
                             json.dumps(after) if after is not None else None, None, None))

    def insert(self, table: str, **after: Any) -> None:
        self.row("insert", table, None, after)

    def update(self, table: str, before: dict, **changes: Any) -> dict:
        self.row("update", table, before, {**before, **changes})
        return {**before, **changes}

    def batch(self) -> Any:
        df = self.spark.createDataFrame(self.records, CDC_DDL)
        self.records = []
        return df


def read(spark: Any, target: str, table: str, order: str = "id") -> list[dict[str, Any]]:
    df = spark.read.format("delta").load(table_path(target, DB, table))
    return [r.asDict() for r in df.orderBy(*order.split(",")).collect()]


def types(spark: Any, target: str, table: str) -> dict[str, str]:
    df = spark.read.format("delta").load(table_path(target, DB, table))
    return {f.name: f.dataType.simpleString() for f in df.schema.fields}


def versions(path: str) -> int:
    return len(list(Path(path, "_delta_log").glob("*.json")))


def props(spark: Any, path: str) -> dict[str, str]:
    return dict(spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["properties"])


DATA = ("id", "a", "b", "new", "c", "s", "n")


# -- without Spark: what a statement did to the columns, and the defaults --------------------

def test_column_diff_and_defaults_from_the_statement() -> None:
    log = Binlog(None)
    log.ddl("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10), old INT, e ENUM('x','y'), "
            "bin VARBINARY(4), doc JSON)")
    before = evolve.spec_from_entry(json.loads(log.records[-1][-1])["tables"][0])
    log.ddl("ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT -7, ADD n VARCHAR(5) NOT NULL, "
            "ADD z DATE DEFAULT '2024-1-2', CHANGE old new BIGINT, DROP COLUMN b, "
            "ADD q TIMESTAMP NULL DEFAULT CURRENT_TIMESTAMP, ADD w ENUM('p','q') NOT NULL, "
            "ADD v INT DEFAULT (1+1), ADD dt DATETIME DEFAULT NOW(), ADD h BLOB DEFAULT x'4142', "
            "ADD k INT NULL, ADD y TIME(2) NOT NULL DEFAULT '1:2:3.5', ADD tx TEXT DEFAULT 1.50")
    rec = log.records[-1]
    doc = json.loads(rec[-1])
    entry = doc["tables"][0]
    after = evolve.spec_from_entry(entry)
    assert before is not None and after is not None
    assert after.column("doc").type == "json" and after.column("new").type == "bigint"
    step = evolve.DdlStep(rec[10], 0, doc["kind"], entry["change"], (DB, "t"), None, entry,
                          doc["statement"], DB, int(TS.timestamp()), FILE, rec[4])
    diff = evolve.analyze(step, before.names, after)
    assert diff.renames == {"old": "new"} and diff.dropped == ["b"]
    assert list(diff.added) == ["c", "n", "z", "q", "w", "v", "dt", "h", "k", "y", "tx"]
    got = {n: evolve.evaluate_default(a, after.column(n), step.ts) for n, a in diff.added.items()}
    assert got["c"] == ("-7", None)
    assert got["n"] == ("", None)               # NOT NULL without DEFAULT: implicit ''
    assert got["z"] == ("2024-01-02", None)
    assert got["q"] == ("2023-11-14T22:13:20Z", None)  # CURRENT_TIMESTAMP: the statement's time
    assert got["w"] == ("p", None)              # NOT NULL ENUM: its first label
    assert got["h"] == ("QUI=", None)           # bytes travel as base64
    assert got["k"] == (None, None)             # NULL
    assert got["y"] == ("01:02:03.50", None)
    assert got["tx"] == ("1.50", None)
    assert got["v"][0] is None and "expression" in got["v"][1]
    assert got["dt"][0] is None and "time zone" in got["dt"][1]
    # The shape before the statement, from the shape after it (a resolver read too late).
    undone = evolve.undo_first(after, [step], (DB, "t"))
    assert undone.names == ["id", "a", "old", "e", "bin", "doc"]


def test_defaults_of_uuid_and_inet_columns_are_the_servers_text() -> None:
    """What a live 10.11 put into existing rows for these added columns (SELECT after the
    ALTER): the implicit zero values, and literals in the server's text."""
    log = Binlog(None)
    log.ddl("CREATE TABLE t (id INT PRIMARY KEY)")
    before = evolve.spec_from_entry(json.loads(log.records[-1][-1])["tables"][0])
    log.ddl("ALTER TABLE t ADD u UUID NOT NULL, ADD a INET6 NOT NULL, ADD b INET4 NOT NULL, "
            "ADD u2 UUID DEFAULT 'A0EEBC99-9C0B4EF8-BB6D-6BB9BD380A11', "
            "ADD a2 INET6 DEFAULT '::FFFF:1.2.3.4', ADD b2 INET4 DEFAULT '001.2.3.4', "
            "ADD a3 INET6 DEFAULT '0:0::1', ADD b3 INET4 DEFAULT '1.2.3'")
    rec = log.records[-1]
    doc = json.loads(rec[-1])
    entry = doc["tables"][0]
    after = evolve.spec_from_entry(entry)
    assert before is not None and after is not None and after.column("u").type == "uuid"
    step = evolve.DdlStep(rec[10], 0, doc["kind"], entry["change"], (DB, "t"), None, entry,
                          doc["statement"], DB, int(TS.timestamp()), FILE, rec[4])
    diff = evolve.analyze(step, before.names, after)
    got = {n: evolve.evaluate_default(a, after.column(n), step.ts) for n, a in diff.added.items()}
    assert got["u"] == ("00000000-0000-0000-0000-000000000000", None)
    assert got["a"] == ("::", None) and got["b"] == ("0.0.0.0", None)
    assert got["u2"] == ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", None)
    assert got["a2"] == ("::ffff:1.2.3.4", None) and got["b2"] == ("1.2.3.4", None)
    assert got["a3"] == ("::1", None)
    assert got["b3"][0] is None  # not a value the server accepts: not guessed


def test_shapes_round_trip_through_table_properties() -> None:
    log = Binlog(None)
    log.ddl("CREATE TABLE t (id BIGINT UNSIGNED PRIMARY KEY, d DECIMAL(12,3), ts DATETIME(6) "
            "NOT NULL, raw VARCHAR(3) CHARACTER SET binary, bits BIT(5), "
            "doc LONGTEXT CHECK (json_valid(doc)))")
    log.ddl("ALTER TABLE t ADD g INT AS (id + 1) VIRTUAL, ADD ai INT UNIQUE AUTO_INCREMENT")
    first, second = (json.loads(r[-1]) for r in log.records)
    columns = {c["name"]: c for c in second["tables"][0]["columns"]}
    assert columns["doc"]["json"] is True and columns["doc"]["type"] == "longtext"
    assert columns["g"]["generated"] == "virtual" and columns["ai"]["auto_increment"] is True
    assert "charset" not in columns["id"] and "json" not in columns["id"]
    spec = evolve.spec_from_entry(first["tables"][0])
    assert spec is not None
    assert [(c.name, c.type) for c in spec.columns] == [
        ("id", "bigint"), ("d", "decimal"), ("ts", "datetime"), ("raw", "varbinary"),
        ("bits", "bit"), ("doc", "json")]
    assert (spec.column("id").unsigned, spec.column("d").scale, spec.column("ts").fsp,
            spec.column("bits").precision, spec.column("ts").nullable) == (True, 3, 6, 5, False)
    assert evolve.shape_from_json(evolve.shape_json(spec)) == spec
    # Values MariaDB computed for the existing rows are not binlake's to guess.
    after = evolve.spec_from_entry(second["tables"][0])
    assert after is not None
    rec = log.records[-1]
    step = evolve.DdlStep(rec[10], 0, second["kind"], "alter", (DB, "t"), None,
                          second["tables"][0], second["statement"], DB, None, FILE, rec[4])
    diff = evolve.analyze(step, spec.names, after)
    assert "generated" in evolve.evaluate_default(diff.added["g"], after.column("g"), None)[1]
    assert "AUTO_INCREMENT" in evolve.evaluate_default(diff.added["ai"], after.column("ai"),
                                                       None)[1]


# -- SCD1: rows around an ALTER, a crash in the middle of it, replays, retypes ----------------

def test_alter_between_rows_scd1_with_crash_and_replay(spark: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    target = str(tmp_path / "lake")
    config = ApplyConfig(target=target, app_id="evo")
    path = table_path(target, DB, "t1")
    log = Binlog(spark)
    log.ddl("CREATE TABLE t1 (id INT PRIMARY KEY, a INT, b VARCHAR(10), gone INT, old INT)")
    rows = {i: {"id": i, "a": 10 * i, "b": "xyz"[i - 1], "gone": i, "old": 100 * i}
            for i in (1, 2, 3)}
    for r in rows.values():
        log.insert("t1", **r)
    log.update("t1", rows[2], a=21)
    alter = log.ddl("ALTER TABLE t1 ADD COLUMN c INT NOT NULL DEFAULT 7, ADD COLUMN s VARCHAR(5) "
                    "NOT NULL, ADD COLUMN n INT DEFAULT 9, DROP COLUMN gone, "
                    "RENAME COLUMN old TO new, MODIFY a BIGINT")
    log.insert("t1", id=4, a=40, b="w", new=400, c=1, s="s4", n=None)  # explicit NULL stays
    log.update("t1", {"id": 1, "a": 10, "b": "x", "new": 100, "c": 7, "s": "", "n": 9}, a=11, n=3)
    batch1 = log.batch()

    # A crash in the middle of the ALTER (its backfill): the batch fails half done ...
    real = evolve.run_op

    def crash(spark_: Any, op: dict, ctx: Any) -> None:
        if op["op"] == "backfill":
            raise RuntimeError("simulated crash")
        real(spark_, op, ctx)

    monkeypatch.setattr(evolve, "run_op", crash)
    with pytest.raises(RuntimeError, match="simulated crash"):
        apply_batch(spark, batch1, 1, config, {})
    assert "gone" not in types(spark, target, "t1")  # the ALTER was under way
    monkeypatch.setattr(evolve, "run_op", real)
    # ... and running the batch id again finishes it exactly once.
    result = apply_batch(spark, batch1, 1, config, {})
    assert result.tables == [f"{DB}.t1"]
    want = [
        {"id": 1, "a": 11, "b": "x", "new": 100, "c": 7, "s": "", "n": 3},
        {"id": 2, "a": 21, "b": "y", "new": 200, "c": 7, "s": "", "n": 9},  # backfilled
        {"id": 3, "a": 30, "b": "z", "new": 300, "c": 7, "s": "", "n": 9},  # backfilled
        {"id": 4, "a": 40, "b": "w", "new": 400, "c": 1, "s": "s4", "n": None},
    ]
    assert [{k: r[k] for k in DATA} for r in read(spark, target, "t1")] == want
    t = types(spark, target, "t1")
    assert list(t) == [*DATA, "_binlake_seq", "_binlake_ts"]
    assert t["a"] == "bigint"  # widened in place
    p = props(spark, path)
    assert p["delta.columnMapping.mode"] == "name" and p["delta.enableTypeWidening"] == "true"
    assert json.loads(p[evolve.MARK_PROP]) == [*alter, 0]
    assert evolve.shape_from_json(p[evolve.SHAPE_PROP]).names == list(DATA)
    hist = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("operation").collect()
    assert sum(r[0] == "UPDATE" for r in hist) == 1  # the backfill ran once
    assert sum(r[0] == "DROP COLUMNS" for r in hist) == 1

    # Replaying the batch id changes nothing anywhere.
    journal = evolve.journal_path(target)
    before = (versions(path), versions(journal))
    apply_batch(spark, batch1, 1, config, {})
    assert (versions(path), versions(journal)) == before


def test_retype_swap_and_refusals(spark: Any, tmp_path: Path) -> None:
    target = str(tmp_path / "lake")
    config = ApplyConfig(target=target, app_id="evo4")
    path = table_path(target, DB, "t2")
    log = Binlog(spark)
    log.ddl("CREATE TABLE t2 (id INT PRIMARY KEY, a BIGINT, b VARCHAR(10), new INT)")
    for i in (1, 2, 3):
        log.insert("t2", id=i, a=10 * i, b="xyz"[i - 1], new=100 * i)
    apply_batch(spark, log.batch(), 1, config, {})

    # A type change Delta cannot widen rewrites the values as MariaDB converts them; two
    # columns that swap names keep their values.
    log.ddl("ALTER TABLE t2 MODIFY a VARCHAR(20)")
    log.update("t2", {"id": 3, "a": "30", "b": "z", "new": 300}, a="x3")
    log.ddl("ALTER TABLE t2 RENAME COLUMN b TO new, RENAME COLUMN new TO b")
    log.insert("t2", id=5, a="50", new="v", b=500)
    apply_batch(spark, log.batch(), 2, config, {})
    got = read(spark, target, "t2")
    assert [(r["id"], r["a"], r["b"], r["new"]) for r in got] == [
        (1, "10", 100, "x"), (2, "20", 200, "y"), (3, "x3", 300, "z"), (5, "50", 500, "v")]
    t = types(spark, target, "t2")
    assert (t["a"], t["b"], t["new"]) == ("string", "int", "string")

    # Refusals happen before anything is written.
    journal = evolve.journal_path(target)
    before = (versions(path), versions(journal))
    log.ddl("ALTER TABLE t2 ADD COLUMN v INT DEFAULT (1+1)")
    with pytest.raises(ApplyError, match="is an expression"):
        apply_batch(spark, log.batch(), 3, config, {})
    log.ddl("ALTER TABLE t2 DROP COLUMN v, MODIFY a INT")
    refused = log.batch()
    with pytest.raises(ApplyError, match=r"retype='error'") as err:
        apply_batch(spark, refused, 4, ApplyConfig(target=target, app_id="evo4", retype="error"),
                    {})
    assert f"{FILE}:" in str(err.value) and "column a" in str(err.value)
    with pytest.raises(ApplyError, match=r"holds 'x3', which does not convert to int"):
        apply_batch(spark, refused, 4, config, {})
    assert (versions(path), versions(journal)) == before


# -- SCD2: the default reaches every version alive at the ALTER -------------------------------

def test_add_column_default_scd2_and_kept_dropped_column(spark: Any, tmp_path: Path) -> None:
    target = str(tmp_path / "lake")
    config = ApplyConfig(target=target, app_id="evo2", drop_columns="keep",
                         tables={f"{DB}.h": TableOptions(scd_type=2)})
    log = Binlog(spark)
    log.ddl("CREATE TABLE h (id INT PRIMARY KEY, v INT, w VARCHAR(5))")
    log.insert("h", id=1, v=1, w="a")
    log.insert("h", id=2, v=1, w="b")
    log.update("h", {"id": 1, "v": 1, "w": "a"}, v=2)       # closes id 1's first version
    log.ddl("ALTER TABLE h ADD COLUMN c INT DEFAULT 5, DROP COLUMN w")
    log.update("h", {"id": 2, "v": 1, "c": 5}, v=3)         # after: the image has c = 5
    log.insert("h", id=3, v=3, c=None)
    batch = log.batch()
    apply_batch(spark, batch, 1, config, {})
    got = [(r["id"], r["v"], r["c"], r["w"], r["__END_AT"] is None)
           for r in read(spark, target, "h", "id,__START_AT")]
    assert got == [
        (1, 1, None, "a", False),  # ended before the ALTER: the column did not exist then
        (1, 2, 5, "a", True),      # current at the ALTER: backfilled
        (2, 1, 5, "b", False),     # alive at the ALTER, ended after it: backfilled
        (2, 3, 5, None, True),     # w is kept (drop_columns="keep"): old versions keep it
        (3, 3, None, None, True),  # written after the ALTER: its own NULL, no w
    ]
    assert "delta.columnMapping.mode" not in props(spark, table_path(target, DB, "h"))
    path = table_path(target, DB, "h")
    before = versions(path)
    apply_batch(spark, batch, 1, config, {})
    assert versions(path) == before


# -- tables: CREATE before any row, RENAME moves, DROP archives ------------------------------

def test_create_rename_and_drop_tables(spark: Any, tmp_path: Path) -> None:
    target = str(tmp_path / "lake")
    config = ApplyConfig(target=target, app_id="evo3")
    log = Binlog(spark)
    log.ddl("CREATE TABLE empty_t (id INT PRIMARY KEY, note VARCHAR(10), d DECIMAL(8,2))")
    log.ddl("CREATE TABLE r1 (id INT PRIMARY KEY, v VARCHAR(10))")
    log.insert("r1", id=1, v="before")
    log.update("r1", {"id": 1, "v": "before"}, v="before2")
    log.ddl("RENAME TABLE r1 TO r2")
    log.insert("r2", id=2, v="after")
    log.ddl("CREATE TABLE d1 (id INT PRIMARY KEY, v INT)")
    log.insert("d1", id=1, v=1)
    drop = log.ddl("DROP TABLE d1")
    log.ddl("CREATE TABLE d1 (x INT PRIMARY KEY)")
    log.insert("d1", x=7)
    batch = log.batch()
    result = apply_batch(spark, batch, 1, config, {})
    assert sorted(result.tables) == [f"{DB}.d1", f"{DB}.empty_t", f"{DB}.r1", f"{DB}.r2"]

    assert read(spark, target, "empty_t") == []
    assert types(spark, target, "empty_t") == {"id": "int", "note": "string",
                                               "d": "decimal(8,2)", "_binlake_seq": SEQ_TYPE,
                                               "_binlake_ts": "timestamp"}
    assert not Path(table_path(target, DB, "r1")).exists()
    assert [(r["id"], r["v"]) for r in read(spark, target, "r2")] == [(1, "before2"), (2, "after")]
    archived = evolve.dropped_path(target, DB, "d1", drop)
    old = spark.read.format("delta").load(archived).collect()
    assert [(r["id"], r["v"]) for r in old] == [(1, 1)]
    assert [r["x"] for r in read(spark, target, "d1", "x")] == [7]
    assert list(types(spark, target, "d1"))[0] == "x"
    # Tables created by a CREATE TABLE compact their small files, as the others do.
    assert props(spark, table_path(target, DB, "empty_t"))["delta.autoOptimize.autoCompact"] == "true"

    paths = [table_path(target, DB, t) for t in ("empty_t", "r2", "d1")]
    paths += [archived, evolve.journal_path(target)]
    before = [versions(p) for p in paths]
    apply_batch(spark, batch, 1, config, {})
    assert [versions(p) for p in paths] == before
    assert not Path(table_path(target, DB, "r1")).exists()

    # The same changes again under a new batch id (a late, overlapping delivery): no DDL runs
    # again (r1 is not re-created, nothing is archived again), no row goes back in time.
    apply_batch(spark, batch, 2, config, {})
    assert not Path(table_path(target, DB, "r1")).exists()
    assert [(r["id"], r["v"]) for r in read(spark, target, "r2")] == [(1, "before2"), (2, "after")]
    assert [r["x"] for r in read(spark, target, "d1", "x")] == [7]
    assert read(spark, target, "empty_t") == []
    assert versions(archived) == before[3]
    assert len(list(Path(archived).parent.iterdir())) == 1


SEQ_TYPE = "struct<file_index:int,pos:bigint,inner:int,row:int>"


# -- a batch held by the driver: the rows after the DDL are folded there -----------------------

def test_driver_held_ddl_batch_commits_what_the_generic_way_commits(
        spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from binlake.spark.apply import tombstone_path

    log = Binlog(spark)
    log.ddl("CREATE TABLE f (id INT PRIMARY KEY, v VARCHAR(10), n INT)")
    log.insert("f", id=1, v="a", n=1)
    log.insert("f", id=2, v="b", n=2)
    log.update("f", {"id": 1, "v": "a", "n": 1}, n=10)
    log.ddl("ALTER TABLE f ADD COLUMN c INT DEFAULT 7, RENAME COLUMN n TO m")
    log.update("f", {"id": 2, "v": "b", "m": 2, "c": 7}, v="b2")
    log.row("delete", "f", {"id": 1, "v": "a", "m": 10, "c": 7})
    log.insert("f", id=3, v="c", m=3, c=None)
    log.update("f", {"id": 3, "v": "c", "m": 3, "c": None}, id=4)  # a key change
    batch = log.batch()
    arrow = batch.toArrow()
    # the steps and segments read from the driver-held batch are those Spark's jobs find
    steps, held_steps = evolve.load_steps(batch), evolve.load_steps(batch, arrow)
    assert [(s.mark, s.change, s.key, s.old_key, s.ts, s.file, s.pos, s.statement)
            for s in held_steps] == [
        (s.mark, s.change, s.key, s.old_key, s.ts, s.file, s.pos, s.statement) for s in steps]
    assert [s.change for s in steps] == ["create", "alter"] and steps[0].ts == int(TS.timestamp())
    groups = evolve.make_groups(batch, steps, {(DB, "f")})
    held_groups = evolve.make_groups(batch, held_steps, {(DB, "f")}, arrow)
    assert [(g.keys, g.cuts, g.segments) for g in held_groups] == [
        (g.keys, g.cuts, g.segments) for g in groups]
    assert groups[0].segments == {((DB, "f"), 1): (None, True), ((DB, "f"), 2): (None, True)}
    generic = ApplyConfig(target=str(tmp_path / "generic"), app_id="g")
    held = ApplyConfig(target=str(tmp_path / "held"), app_id="g")
    apply_batch(spark, batch, 1, generic, {})
    caplog.set_level(logging.DEBUG, logger="binlake.apply")
    apply_batch(spark, batch, 1, held, {}, arrow=arrow)
    assert any(r.msg == "table folded" for r in caplog.records)
    want = read(spark, generic.target, "f")
    assert [(r["id"], r["v"], r["m"], r["c"]) for r in want] == [(2, "b2", 2, 7), (4, "c", 3, None)]
    assert read(spark, held.target, "f") == want
    tombs = [sorted(r[0] for r in spark.read.format("delta").load(tombstone_path(t, DB, "f"))
                    .select("id").collect()) for t in (generic.target, held.target)]
    assert tombs[0] == tombs[1] == [1, 3]
    # a replay of the batch id changes nothing
    path = table_path(held.target, DB, "f")
    before = versions(path)
    apply_batch(spark, batch, 1, held, {}, arrow=arrow)
    assert versions(path) == before and read(spark, held.target, "f") == want
