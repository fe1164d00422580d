"""`cdc.net.batch_stats` (one Arrow aggregation) gives what a plain loop over the records
gives: per (schema, table), in the order the batch first names them, the counts, flags,
newest time, last TRUNCATE and first statement, on random batches of every op."""
from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pyarrow as pa
import pytest

from binlake.cdc import net
from binlake.cdc.arrow import CDC_SCHEMA


def _loop(batch: pa.Table) -> list[net.BatchTable]:
    """The reference: every record looked at in Python."""
    ops = batch.column("op").to_pylist()
    seqs = [tuple(s.values()) for s in batch.column("seq").to_pylist()]
    out: dict[tuple[Any, Any], net.BatchTable] = {}
    stmt: dict[tuple[Any, Any], tuple[int, ...]] = {}
    for i, op in enumerate(ops):
        if op not in net.ROW_OPS and op not in ("truncate", "ddl", "statement"):
            continue
        key = (batch.column("schema")[i].as_py(), batch.column("table")[i].as_py())
        st = out.setdefault(key, net.BatchTable(*key))
        if op == "statement":
            if key not in stmt or seqs[i] < stmt[key]:
                stmt[key] = seqs[i]
                st.statement = {"file": batch.column("file")[i].as_py(),
                                "pos": batch.column("pos")[i].as_py(),
                                "query": batch.column("query")[i].as_py()}
            continue
        st.n += 1
        ts = batch.column("ts")[i].as_py()
        if ts is not None and (st.ts is None or ts > st.ts):
            st.ts = ts
        if op == "truncate":
            st.rows = True
            if st.trunc is None or seqs[i] > st.trunc:
                st.trunc = seqs[i]
        elif op == "ddl":
            st.ddl = True
        else:
            st.rows = True
            st.deletes = st.deletes or op != "insert"
            st.dels = st.dels or op == "delete"
    return list(out.values())


def _batch(rng: random.Random, n: int) -> pa.Table:
    base = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
    rows = []
    for i in range(n):
        op = rng.choice(["insert", "update", "delete", "truncate", "ddl", "statement", "chunk",
                         "other"])
        rows.append({"op": op, "schema": rng.choice(["a", "b"]),
                     "table": rng.choice(["t1", "t2", "t3", None]),
                     "file": "mariadb-bin.000001", "pos": rng.randrange(1000),
                     "query": f"q{i}",
                     "ts": None if rng.random() < 0.2 else base + dt.timedelta(
                         seconds=rng.randrange(100)),
                     "seq": {"file_index": 1, "pos": rng.randrange(50), "inner": 0,
                             "row": rng.randrange(3)}})
    return pa.Table.from_pylist(rows, schema=CDC_SCHEMA)


@pytest.mark.parametrize("seed", range(40))
def test_batch_stats_equal_the_loop(seed: int) -> None:
    rng = random.Random(seed)
    batch = _batch(rng, rng.choice([0, 1, 3, 30, 300]))
    got, want = net.batch_stats(batch), _loop(batch)
    assert [vars(s) for s in got] == [vars(s) for s in want]
    half = batch.num_rows // 2  # several chunks and a slice
    chunked = pa.concat_tables([batch.slice(0, half), batch.slice(half)])
    assert [vars(s) for s in net.batch_stats(chunked)] == [vars(s) for s in want]
    assert [vars(s) for s in net.batch_stats(batch.slice(1))] == \
        [vars(s) for s in _loop(batch.slice(1))]
