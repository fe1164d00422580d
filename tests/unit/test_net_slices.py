"""The driver-side fold's Python twin (`cdc.net.fold_python`) turns images into Python objects
a slice at a time, bounded in records and in image bytes; where the slices are cut never
changes the net (nor does the C core, which takes the batch whole)."""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from binlake._speedups.native import switches
from binlake.cdc import net
from binlake.cdc.arrow import CDC_SCHEMA


def _batch() -> pa.Table:
    rows: list[dict[str, Any]] = []

    def rec(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        rows.append({"op": op, "schema": "s", "table": "t", "ts": None,
                     "seq": {"file_index": 1, "pos": 100 + len(rows), "inner": 0, "row": 0},
                     "before": None if before is None else json.dumps(before),
                     "after": None if after is None else json.dumps(after)})

    for i in range(40):  # small and large images mixed: slices of very different lengths
        rec("insert", None, {"id": i, "body": ("x" * (3000 if i % 7 == 0 else 5)) + str(i)})
    for i in range(0, 40, 3):
        rec("update", {"id": i}, {"body": f"u{i}"})  # minimal image
    rec("update", {"id": 5, "body": "5"}, {"id": 500, "body": "moved"})  # a key move
    for i in range(1, 40, 4):
        rec("delete", {"id": i, "body": None}, None)
    rec("insert", None, {"id": 1, "body": "again"})
    return pa.Table.from_pylist(rows, schema=CDC_SCHEMA)


def test_slices_bounded_in_bytes_fold_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = _batch()
    whole = net.net_scd1(batch, ["id"], ["id", "body"])
    monkeypatch.setattr(net, "SLICE_BYTES", 4000)
    monkeypatch.setattr(net, "SLICE_ROWS", 9)
    cuts = list(net.fold_slices(batch))
    # consecutive, covering every record once; bounded in records, and in bytes past the first
    assert [o for o, _ in cuts] == [sum(n for _, n in cuts[:k]) for k in range(len(cuts))]
    assert sum(n for _, n in cuts) == batch.num_rows and all(0 < n <= 9 for _, n in cuts)
    assert len(cuts) > batch.num_rows // 9 + 1  # the byte bound cut more often than the rows
    for off, n in cuts:
        part = batch.slice(off, n)
        sizes = [len(b or "") + len(a or "") for b, a in
                 zip(part.column("before").to_pylist(), part.column("after").to_pylist())]
        assert n == 1 or sum(sizes) <= 4000, (off, n, sizes)
    with switches.set(c=None):  # the Python fold, which slices (the C core takes it whole)
        sliced = net.net_scd1(batch, ["id"], ["id", "body"])
    assert sliced.table.equals(whole.table)
    assert (sliced.deletes, sliced.min_seq, sliced.max_delete_seq) == \
        (whole.deletes, whole.min_seq, whole.max_delete_seq)
    got = {r["_k0"]: r for r in sliced.table.to_pylist()}
    assert got["1"]["_c1"] == "again" and got["5"]["_kind"] == "delete"
    assert got["500"]["_c1"] == "moved" and got["3"]["_c1"] == "u3"
