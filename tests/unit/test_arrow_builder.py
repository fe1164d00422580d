"""The Arrow batch builder: segments (rows events, or parts of them) and single records must
give the same batches, whichever way the images were written."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from binlake.changes import iter_changes
from binlake.files import read_events
from binlake.spark import arrow
from binlake.spark.arrow import CDC_SCHEMA, CdcBatchBuilder, events_to_batches, iter_cdc_batches

FILES = ("row-full-metafull-crc32", "row-minimal-metaminimal-crc32", "statement-mixed",
         "gtid-domains-xa", "large-event")


def _paths(corpus_dir: Path) -> list[Path]:
    return [corpus_dir / "generated-mariadb-10.11" / f"mariadb-10.11.19-{n}.000001" for n in FILES]


def _table(batches: list[pa.RecordBatch]) -> pa.Table:
    assert all(b.schema == CDC_SCHEMA for b in batches)
    for b in batches:
        b.validate(full=True)  # the images really are UTF-8
    return pa.Table.from_batches(batches, schema=CDC_SCHEMA)


@pytest.mark.parametrize("size", [1, 7, 10_000])
def test_every_path_gives_the_same_batches(corpus_dir: Path, size: int) -> None:
    for path in _paths(corpus_dir):
        by_record = _table(list(iter_cdc_batches(iter_changes(read_events(path)), batch_size=size)))
        from_values = _table(list(events_to_batches(read_events(path), batch_size=size)))
        from_json = _table(list(events_to_batches(read_events(path, json_images=True),
                                                  batch_size=size)))
        assert by_record.num_rows > 0
        assert by_record.equals(from_values), path.name
        assert by_record.equals(from_json), path.name


def _records_by_event(path: Path, json_images: bool) -> list[list]:
    """Records grouped as BinlogStream.batches() groups them: one list per rows event."""
    from binlake.changes import ChangeTracker

    tracker, out = ChangeTracker(), []
    for ev in read_events(path, json_images=json_images):
        recs = tracker.records(ev)
        if recs:
            out.append(recs)
    return out


@pytest.mark.parametrize("json_images", [True, False])
def test_a_rows_events_records_added_at_once_equal_one_by_one(corpus_dir: Path,
                                                              json_images: bool) -> None:
    for path in _paths(corpus_dir):
        lists = _records_by_event(path, json_images)
        one, many = CdcBatchBuilder(), CdcBatchBuilder()
        for recs in lists:
            for rec in recs:
                one.add(rec)
            many.add_records(recs)
        assert len(one) == len(many) and one.image_bytes == many.image_bytes
        if not len(one):
            continue
        if json_images and any(len(recs) > 1 for recs in lists):
            assert len(many._segs) < len(one._segs)  # whole events went in as one segment
        a, b = _table([one.flush()]), _table([many.flush()])
        assert a.equals(b), path.name


def test_without_the_c_buffers(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _paths(corpus_dir)[0]
    expect = _table(list(events_to_batches(read_events(path, json_images=True), batch_size=5)))
    monkeypatch.setattr(arrow, "_buffers", None)
    got = _table(list(events_to_batches(read_events(path, json_images=True), batch_size=5)))
    assert expect.equals(got)


def test_nulls_empty_and_non_ascii_images() -> None:
    images = [b'{"a":"\xc3\xa9"}', None, b"", None, b'{"b":1}'] * 3
    arr = arrow._image_array(images)
    arr.validate(full=True)
    assert arr.to_pylist() == [None if v is None else v.decode() for v in images]
    assert arrow._image_array([]).to_pylist() == []
    assert arrow._image_array([None, None]).null_count == 2
    with pytest.raises(TypeError):
        arrow._image_array(["str"])  # type: ignore[list-item]


def test_empty_builder() -> None:
    b = CdcBatchBuilder()
    assert len(b) == 0 and b.flush().num_rows == 0
