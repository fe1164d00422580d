"""A new Delta table from Arrow batches in one commit, by delta-rs (the `deltalake` package).

Why: a local sync's first snapshot has its rows typed as Arrow in the driver already. Handing
them through Spark (Python worker -> JVM rows -> Spark's Parquet writer) cost the snapshot
most of its time; delta-rs writes the same batches as Parquet in native code and commits
them as version 0, which Spark's Delta then reads, MERGEs into and compacts as its own.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import pyarrow as pa

from ..errors import BinlakeError


class LakeWriteError(BinlakeError):
    """A table could not be written (the message names it)."""


def available() -> bool:
    """Whether delta-rs is installed (it is a dependency; a trimmed install may lack it)."""
    try:
        import deltalake  # noqa: F401
    except ImportError:
        return False
    return True


FILE_BYTES = 32 << 20
"""Parquet bytes per data file: above the 16 MiB below which the sync's sessions compact
(no rewrite right after the snapshot), and several files per large table, so a MERGE's
scan and rewrite run as several tasks."""

ROW_GROUP_BYTES = 16 << 20
"""Arrow bytes per Parquet row group (Spark reads a file one task per row group)."""


def write_new_table(path: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch], *,
                    properties: Mapping[str, str], app_id: str | None = None,
                    version: int = 0) -> None:
    """Create the Delta table at `path` holding `batches` (in `schema`), in one commit that
    also records the transaction (`app_id`, `version`) when an `app_id` is given, as Spark's
    `txnAppId` option does.

    All or nothing: a failure before the commit leaves no table (only unreferenced files),
    and a table already at `path` is an error, never appended to. An error raised while
    `batches` is iterated is raised as it is (delta-rs would only pass on its text)."""
    from deltalake import CommitProperties, Transaction, WriterProperties, write_deltalake
    from deltalake.exceptions import DeltaError

    failed: list[BaseException] = []

    def guarded() -> Iterator[pa.RecordBatch]:
        try:
            yield from batches
        except BaseException as exc:
            failed.append(exc)
            raise

    stream = guarded()
    first = next(stream, None)
    # delta-rs sizes row groups in rows: as many as make ROW_GROUP_BYTES of the first batch's
    group = 1 << 20
    if first is not None and first.num_rows:
        group = max(1024, min(group, ROW_GROUP_BYTES * first.num_rows // max(1, first.nbytes)))

    def all_batches() -> Iterator[pa.RecordBatch]:
        if first is not None:
            yield first
        yield from stream

    reader = pa.RecordBatchReader.from_batches(schema, all_batches())
    try:
        write_deltalake(path, reader, mode="error", configuration=dict(properties),
                        target_file_size=FILE_BYTES,
                        writer_properties=WriterProperties(max_row_group_size=group,
                                                           compression="SNAPPY"),
                        commit_properties=CommitProperties(
                            app_transactions=[Transaction(app_id, version)]
                            if app_id is not None else None))
    except Exception as exc:
        if failed:
            raise failed[0] from None
        if not isinstance(exc, (DeltaError, OSError, pa.ArrowException)):
            raise
        raise LakeWriteError(f"writing the Delta table {path} failed: {exc}",
                             hint="check the warehouse folder is writable and empty there") from exc
