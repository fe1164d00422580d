"""Change records -> Arrow CDC batches: same records as iter_changes, exact values, total order."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from binlake.binlog.decoder import BinlogDecoder
from binlake.cdc.changes import iter_changes
from binlake.binlog.files import read_events
from binlake.cdc.arrow import CDC_SCHEMA, events_to_batches, file_index, iter_cdc_batches

pytestmark = pytest.mark.spark

GENERATED = ("row-full-metafull-crc32", "row-minimal-metaminimal-crc32",
             "row-noblob-metafull-crc32", "row-compressed-crc32", "gtid-domains-xa",
             "statement-mixed", "large-event")


def corpus_files(corpus_dir: Path) -> list[Path]:
    return [corpus_dir / "generated-mariadb-10.11" / f"mariadb-10.11.19-{n}.000001"
            for n in GENERATED]


def test_batches_hold_exactly_the_change_records(corpus_dir: Path, cdc_row_check: Any) -> None:
    total = 0
    for path in corpus_files(corpus_dir):
        records = list(iter_changes(read_events(path)))
        batches = list(events_to_batches(read_events(path), batch_size=16))
        assert all(b.schema == CDC_SCHEMA and 0 < b.num_rows <= 16 for b in batches)
        rows = pa.Table.from_batches(batches, schema=CDC_SCHEMA).to_pylist()
        assert len(rows) == len(records), path.name
        for row, rec in zip(rows, records):
            cdc_row_check(row, rec)
        total += len(rows)
    assert total > 250


def test_a_filtered_file_read_passes_left_out_events_over(corpus_dir: Path, cdc_row_check: Any) -> None:
    """As the Spark files source reads with a table filter: the decoder passes the left-out
    tables' rows events over (but in an XA group), and the batches hold exactly the
    records of the filtered reference."""
    skipped = compared = 0
    for path in corpus_files(corpus_dir):
        names = sorted({(r.schema, r.table) for r in iter_changes(read_events(path))
                        if r.table_map is not None})
        for name in names[:4]:
            def keep(schema: str, table: str, name: tuple[str, str] = name) -> bool:
                return (schema, table) == name

            records = list(iter_changes(read_events(path), keep))
            dec = BinlogDecoder(file=path.name, json_images=True, table_filter=keep)
            batches = list(events_to_batches(read_events(path, decoder=dec), tables=keep,
                                             decoder=dec))
            rows = pa.Table.from_batches(batches, schema=CDC_SCHEMA).to_pylist()
            assert len(rows) == len(records), (path.name, name)
            for row, rec in zip(rows, records):
                cdc_row_check(row, rec)
            skipped += dec.events_skipped
            compared += len(rows)
    assert skipped > 20 and compared > 50


def test_seq_orders_like_binlog_positions(corpus_dir: Path) -> None:
    path = corpus_files(corpus_dir)[0]
    rows = pa.Table.from_batches(list(events_to_batches(read_events(path)))).to_pylist()
    keys = [tuple(r["seq"].values()) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_statement_records_can_be_left_out(corpus_dir: Path) -> None:
    path = corpus_files(corpus_dir)[0]
    records = list(iter_changes(read_events(path)))
    statements = [r for r in records if r.table_map is None]
    rows = [r for b in iter_cdc_batches(records, statements=False) for r in b.to_pylist()]
    assert len(rows) == len(records) - len(statements)
    assert {r["op"] for r in rows} <= {"insert", "update", "delete"}


def test_file_index() -> None:
    assert file_index("mariadb-bin.000042") == 42
    assert file_index("binlog.1234567") == 1234567
    assert file_index("weird-name") == 0
    assert file_index(None) == 0
