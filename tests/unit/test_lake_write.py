"""`binlake.lake.write_new_table`: one commit with its txn, errors raised as they are."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pytest

pytest.importorskip("deltalake")

from binlake.lake import LakeWriteError, write_new_table
from binlake.snapshot.server import SnapshotError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()),
                    ("ts", pa.timestamp("us", tz="UTC"))])


def _batches(n: int, size: int) -> Iterator[pa.RecordBatch]:
    for start in range(0, n, size):
        ids = list(range(start, min(n, start + size)))
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int64()), pa.array([f"v{i}" for i in ids]),
             pa.array([i * 1_000_000 for i in ids], pa.timestamp("us", tz="UTC"))],
            schema=SCHEMA)


def test_one_commit_with_its_txn_and_every_row(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = tmp_path / "t"
    write_new_table(str(path), SCHEMA, _batches(5000, 700),
                    properties={"delta.checkpointInterval": "100"}, app_id="app-snap-0",
                    version=0)
    table = DeltaTable(str(path))
    assert table.version() == 0
    got = table.to_pyarrow_table().sort_by("id")
    assert got.column("id").to_pylist() == list(range(5000))
    assert got.column("v")[4999].as_py() == "v4999"
    actions = [json.loads(line) for line in
               (path / "_delta_log" / "00000000000000000000.json").read_text().splitlines()]
    assert [a["txn"]["appId"] for a in actions if "txn" in a] == ["app-snap-0"]
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    assert meta["configuration"] == {"delta.checkpointInterval": "100"}


def test_an_error_of_the_batches_is_raised_as_it_is(tmp_path: Path) -> None:
    def failing() -> Iterator[pa.RecordBatch]:
        yield from _batches(10, 5)
        raise SnapshotError("db.t chunk 3: the table changed shape")

    with pytest.raises(SnapshotError, match="changed shape"):
        write_new_table(str(tmp_path / "t"), SCHEMA, failing(), properties={}, app_id="a",
                        version=0)
    assert not (tmp_path / "t" / "_delta_log").exists() or not any(
        (tmp_path / "t" / "_delta_log").glob("*.json"))


def test_a_table_already_there_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_new_table(path, SCHEMA, _batches(3, 3), properties={}, app_id="a", version=0)
    with pytest.raises(LakeWriteError) as err:
        write_new_table(path, SCHEMA, _batches(3, 3), properties={}, app_id="a", version=0)
    assert path in str(err.value) and "already exists" in str(err.value)
