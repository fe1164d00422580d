"""`binlake.lake.merge` and `binlake.lake.values`: the driver's net MERGE by delta-rs (seq
guards, presence, deletes, TRUNCATE, the txn and its replay, tagged appends, compaction) and
image texts typed as Arrow (what fails goes to Spark, never typed another way)."""
from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("deltalake")

from binlake.lake import merge as lake  # noqa: E402
from binlake.lake.values import Untyped, typed_column  # noqa: E402

SEQ = pa.struct([("file_index", pa.int32()), ("pos", pa.int64()), ("inner", pa.int32()),
                 ("row", pa.int32())])
TS = pa.timestamp("us", tz="UTC")


def seq(fi: int, pos: int, inner: int = 0, row: int = 0) -> dict[str, int]:
    return {"file_index": fi, "pos": pos, "inner": inner, "row": row}


def _target(path: Path) -> str:
    from deltalake import write_deltalake

    t = pa.table({"Id": pa.array([1, 2, 3, 4], pa.int32()), "v": ["a", "b", "c", "d"],
                  "n": pa.array([10, 20, 30, 40], pa.int64()),
                  "_binlake_seq": pa.array([seq(1, 10), seq(2, 5), seq(1, 20), seq(1, 30)], SEQ),
                  "_binlake_ts": pa.array([None] * 4, TS)})
    write_deltalake(str(path), t, configuration={"delta.autoOptimize.autoCompact": "true"})
    return str(path)


def _source(rows: list[tuple[Any, ...]]) -> pa.Table:
    k, sq, kind, full, c1, p1, c2, p2 = zip(*rows)
    return pa.table({"_k0": pa.array(k, pa.int32()), "_seq": pa.array(sq, SEQ),
                     "_ts": pa.array([None] * len(rows), TS), "_kind": list(kind),
                     "_full": list(full), "_c1": pa.array(c1, pa.string()), "_p1": list(p1),
                     "_c2": pa.array(c2, pa.int64()), "_p2": list(p2)})


def _rows(path: str) -> dict[int, tuple[Any, ...]]:
    from deltalake import DeltaTable

    t = DeltaTable(path).to_pyarrow_table()
    return {r["Id"]: (r["v"], r["n"], tuple(r["_binlake_seq"].values()))
            for r in t.to_pylist()}


SPEC = lake.NetMerge(keys=["Id"], cols=["Id", "v", "n"], key_index={"Id": 0}, plain=(),
                     seq_col="_binlake_seq", ts_col="_binlake_ts")


def test_net_merge_guards_presence_deletes_and_replay(tmp_path: Path) -> None:
    path = _target(tmp_path / "t")
    src = _source([
        (1, seq(1, 50), "upsert", False, None, False, 11, True),    # minimal: v kept
        (2, seq(1, 50), "upsert", True, "B", True, 21, True),       # older than the row
        (3, seq(1, 50), "delete", False, None, False, None, False),
        (4, seq(1, 25), "delete", False, None, False, None, False),  # older: row stays
        (5, seq(1, 50), "upsert", True, "e", True, 50, True),       # insert
        (6, seq(1, 50), "delete", False, None, False, None, False),  # nothing to delete
    ])
    metrics = lake.merge_net(path, src, SPEC, "app", 7)
    assert metrics is not None
    assert _rows(path) == {1: ("a", 11, (1, 50, 0, 0)), 2: ("b", 20, (2, 5, 0, 0)),
                           4: ("d", 40, (1, 30, 0, 0)), 5: ("e", 50, (1, 50, 0, 0))}
    assert lake.committed(path, "app", 7) and lake.committed(path, "app", 3)
    assert not lake.committed(path, "app", 8) and not lake.committed(path, "other", 0)
    # a replay (same or older batch id) commits nothing, even with other rows
    again = _source([(9, seq(9, 9), "upsert", True, "z", True, 9, True)])
    assert lake.merge_net(path, again, SPEC, "app", 7) is None
    assert lake.merge_net(path, again, SPEC, "app", 6) is None
    assert 9 not in _rows(path)


def test_net_merge_plain_columns_and_truncate(tmp_path: Path) -> None:
    path = _target(tmp_path / "t")
    plain = lake.NetMerge(**{**SPEC.__dict__, "plain": {1, 2}, "truncate": (1, 25, 0, 0)})
    src = _source([(1, seq(1, 60), "upsert", False, None, True, 12, True)])
    lake.merge_net(path, src, plain, "app", 1)
    # the TRUNCATE removes the unmatched rows older than it (2 at (2,5) is newer by file)
    assert _rows(path) == {1: (None, 12, (1, 60, 0, 0)), 2: ("b", 20, (2, 5, 0, 0)),
                           4: ("d", 40, (1, 30, 0, 0))}


def test_tagged_append_newest_struct_and_compaction(tmp_path: Path) -> None:
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "tomb")
    schema = pa.schema([("Id", pa.int32()), ("_binlake_seq", SEQ)])
    write_deltalake(path, pa.table({"Id": pa.array([], pa.int32()),
                                    "_binlake_seq": pa.array([], SEQ)}, schema=schema),
                    configuration={"delta.autoOptimize.autoCompact": "true"})
    assert lake.newest_struct(path, "_binlake_seq") is None
    for i, s in enumerate([seq(2, 1), seq(1, 99), seq(2, 1, 0, 3), seq(2, 0, 9, 9)]):
        lake.append_tagged(path, pa.table({"Id": pa.array([i], pa.int32()),
                                           "_binlake_seq": pa.array([s], SEQ)}), f"tag {i}")
    assert lake.newest_struct(path, "_binlake_seq") == (2, 1, 0, 3)
    assert lake.user_metadata(path, 2) == ["tag 3", "tag 2"]
    assert not lake.compact_if_small(path)  # 4 files: below COMPACT_FILES
    for i in range(lake.COMPACT_FILES):
        lake.append_tagged(path, pa.table({"Id": pa.array([i], pa.int32()),
                                           "_binlake_seq": pa.array([seq(3, i)], SEQ)}), "x")
    assert lake.compact_if_small(path)
    dt = DeltaTable(path)
    assert len(dt.file_uris()) == 1 and dt.to_pyarrow_table().num_rows == 4 + lake.COMPACT_FILES


def test_writable_refuses_features_delta_rs_does_not_write(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    ok = str(tmp_path / "ok")
    write_deltalake(ok, pa.table({"a": [1]}))
    assert lake.writable(ok) is None
    cdf = str(tmp_path / "cdf")
    write_deltalake(cdf, pa.table({"a": [1]}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    assert lake.writable(cdf) is not None


@pytest.mark.parametrize("texts,target,expect", [
    (["-128", "127", None], pa.int8(), [-128, 127, None]),
    (["18446744073709551615"], pa.decimal128(20, 0), [decimal.Decimal(18446744073709551615)]),
    (["-12345678.91", "0.00"], pa.decimal128(10, 2),
     [decimal.Decimal("-12345678.91"), decimal.Decimal("0.00")]),
    (["2.200000047683716", "-2.5e+300"], pa.float64(), [2.200000047683716, -2.5e300]),
    (["2024-02-29"], pa.date32(), ["2024-02-29"]),
    (["2024-01-02T03:04:05.123456"], pa.timestamp("us"), ["2024-01-02 03:04:05.123456"]),
    (["2024-01-02T03:04:05.123Z"], TS, ["2024-01-02 03:04:05.123000+00:00"]),
    (["héllo ✓", None], pa.string(), ["héllo ✓", None]),
])
def test_values_typed_as_spark_types_them(texts: list[Any], target: pa.DataType,
                                          expect: list[Any]) -> None:
    got = typed_column(pa.array(texts, pa.string()), target, binary=False, name="c")
    assert got.type == target
    if pa.types.is_temporal(target):
        assert [None if v is None else str(v) for v in got.to_pylist()] == expect
    else:
        assert got.to_pylist() == expect


def test_binary_texts_are_base64() -> None:
    got = typed_column(pa.array(["AP8Q", None, ""]), pa.binary(), binary=True, name="b")
    assert got.to_pylist() == [b"\x00\xff\x10", None, b""]


@pytest.mark.parametrize("texts,target,binary", [
    (["0000-00-00"], pa.date32(), False),             # zero dates: Spark's policy decides
    (["2024-02-30"], pa.date32(), False),
    (["2024-02-00T00:00:00"], pa.timestamp("us"), False),
    (["1.555"], pa.decimal128(10, 2), False),          # more digits than the scale
    (["128"], pa.int8(), False),
    (["not base64!"], pa.binary(), True),
    (["1"], pa.list_(pa.float32()), False),            # nested: never folded here
])
def test_values_the_driver_does_not_type(texts: list[Any], target: pa.DataType,
                                         binary: bool) -> None:
    with pytest.raises(Untyped, match="column c"):
        typed_column(pa.array(texts, pa.string()), target, binary=binary, name="c")


def test_unwritable_names_the_column_or_the_table(tmp_path: Path) -> None:
    path = _target(tmp_path / "t")
    from deltalake import DeltaTable

    have = pa.schema(DeltaTable(path).schema().to_arrow())
    assert lake.unwritable(path, have) is None
    assert lake.unwritable(str(tmp_path / "none"), have) == "a new table"
    more = have.append(pa.field("w", pa.int32()))
    assert lake.unwritable(path, more) == "column w is missing"
    other = pa.schema([pa.field("n", pa.int32())])
    assert lake.unwritable(path, other) == "column n is int64, not int32"


def test_net_source_types_values_and_tombstone_rows() -> None:
    net = pa.table({"_k0": ["1", "2", "3"], "_seq": pa.array([seq(1, 1), seq(1, 2), seq(1, 3)], SEQ),
                    "_ts": pa.array([None] * 3, pa.timestamp("us", tz="UTC")),
                    "_kind": ["upsert", "delete", "upsert"], "_full": [True, False, False],
                    "_c0": ["1", None, "3"], "_p0": [True, False, True],
                    "_c1": ["a", None, None], "_p1": [True, False, False],
                    "_c2": ["AP8=", None, None], "_p2": [True, False, False]})
    spec = lake.NetMerge(keys=["Id"], cols=["Id", "v", "b"], key_index={"Id": 0}, plain=(),
                         seq_col="_binlake_seq", ts_col="_binlake_ts")
    types = {"Id": pa.int32(), "v": pa.string(), "b": pa.binary(), "_binlake_ts": TS}
    src = lake.net_source(net, spec, types, {"b"})
    assert src.column_names == ["_k0", "_seq", "_ts", "_kind", "_full", "_c1", "_p1",
                                "_c2", "_p2"]  # the key's value column is not carried
    assert src.column("_k0").type == pa.int32() and src.column("_c2").to_pylist()[0] == b"\0\xff"
    schema = pa.schema([("Id", pa.int32()), ("_binlake_seq", SEQ),
                        ("_binlake_truncate", pa.bool_())])
    rows = lake.tombstone_rows(src, 1, schema, (1, 9, 0, 0))
    assert rows.to_pylist() == [
        {"Id": 2, "_binlake_seq": seq(1, 2), "_binlake_truncate": False},
        {"Id": None, "_binlake_seq": seq(1, 9), "_binlake_truncate": True}]
    table = pa.schema([("Id", pa.int32()), ("v", pa.string()), ("b", pa.binary()),
                       ("_binlake_seq", SEQ), ("_binlake_ts", TS)])
    assert [(r["Id"], r["v"], r["b"]) for r in
            lake.inserted_rows(src, spec, table).to_pylist()] == [(1, "a", b"\0\xff"),
                                                                  (3, None, None)]
    with pytest.raises(Untyped, match="column Id"):
        lake.net_source(net.set_column(0, "_k0", pa.array(["x", "2", "3"])), spec, types, {"b"})


def _model(target: dict[int, dict[str, Any]], source: list[dict[str, Any]], plain: set[int],
           truncate: tuple[int, ...] | None) -> dict[int, dict[str, Any]]:
    """Spark's MERGE of `_scd1`, row by row (a seq compared with NULL is not newer)."""
    def newer(a: Any, b: Any) -> bool:
        return a is not None and b is not None and tuple(a.values()) > tuple(b.values())

    out = {k: dict(r) for k, r in target.items()}
    by_key = {s["_k0"]: s for s in source}
    for k, t in target.items():
        s = by_key.get(k)
        if s is None:
            seq_ = t["_binlake_seq"]
            if truncate is not None and seq_ is not None and tuple(seq_.values()) < truncate:
                del out[k]
        elif newer(s["_seq"], t["_binlake_seq"]):
            if s["_kind"] == "delete":
                del out[k]
            else:
                for i, c in ((1, "v"), (2, "n")):
                    if i in plain or s["_full"] or s[f"_p{i}"]:
                        out[k][c] = s[f"_c{i}"]
                out[k]["_binlake_seq"] = s["_seq"]
    for k, s in by_key.items():
        if k not in target and s["_kind"] == "upsert":
            out[k] = {"Id": k, "v": s["_c1"], "n": s["_c2"], "_binlake_seq": s["_seq"],
                      "_binlake_ts": None}
    return out


def test_net_merge_matches_spark_semantics_on_random_batches(tmp_path: Path) -> None:
    """Random targets and net batches (ties and NULL seqs included) MERGEd by delta-rs
    equal the row-by-row model of Spark's MERGE clauses."""
    from deltalake import DeltaTable, write_deltalake
    from hypothesis import HealthCheck, given, settings, strategies as st

    some_seq = st.builds(seq, st.integers(1, 2), st.integers(0, 3), st.integers(0, 1),
                         st.integers(0, 1))
    seqs = st.one_of(some_seq, some_seq, some_seq, st.none())  # NULL: a row written by others
    row = st.fixed_dictionaries({"v": st.one_of(st.none(), st.text(max_size=3)),
                                 "n": st.one_of(st.none(), st.integers(-5, 5)),
                                 "_binlake_seq": seqs})
    net = st.fixed_dictionaries({
        "_seq": some_seq, "_kind": st.sampled_from(["upsert", "delete"]),
        "_full": st.booleans(), "_c1": st.one_of(st.none(), st.text(max_size=3)),
        "_p1": st.booleans(), "_c2": st.one_of(st.none(), st.integers(-5, 5)), "_p2": st.booleans()})
    counter = iter(range(10**6))

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.dictionaries(st.integers(0, 6), row, min_size=2, max_size=6),
           st.dictionaries(st.integers(0, 8), net, min_size=2, max_size=6),
           st.sets(st.sampled_from([1, 2])),
           st.one_of(st.none(), st.tuples(st.integers(1, 2), st.integers(0, 3),
                                          st.integers(0, 1), st.integers(0, 1))))
    def check(target: dict[int, dict[str, Any]], batch: dict[int, dict[str, Any]],
              plain: set[int], truncate: tuple[int, int, int, int] | None) -> None:
        path = str(tmp_path / f"t{next(counter)}")
        rows = {k: {"Id": k, **r, "_binlake_ts": None} for k, r in target.items()}
        schema = pa.schema([("Id", pa.int32()), ("v", pa.string()), ("n", pa.int64()),
                            ("_binlake_seq", SEQ), ("_binlake_ts", TS)])
        write_deltalake(path, pa.Table.from_pylist(list(rows.values()), schema=schema))
        source = [{"_k0": k, "_ts": None, **s} for k, s in batch.items()]
        src = pa.Table.from_pylist(source, schema=pa.schema([
            ("_k0", pa.int32()), ("_seq", SEQ), ("_ts", TS), ("_kind", pa.string()),
            ("_full", pa.bool_()), ("_c1", pa.string()), ("_p1", pa.bool_()),
            ("_c2", pa.int64()), ("_p2", pa.bool_())]))
        spec = lake.NetMerge(keys=["Id"], cols=["Id", "v", "n"], key_index={"Id": 0},
                             plain=plain, seq_col="_binlake_seq", ts_col="_binlake_ts",
                             truncate=truncate)
        lake.merge_net(path, src, spec, "app", 1)
        got = {r["Id"]: r for r in DeltaTable(path).to_pyarrow_table().to_pylist()}
        assert got == _model(rows, source, plain, truncate)

    check()
