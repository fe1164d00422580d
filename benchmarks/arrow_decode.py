#!/usr/bin/env python3
"""Benchmark hook for the Arrow path: binlog FILES -> binlake CDC record batches.

Opt-in contestant (`binlake bench --tools binlake-arrow`).  Counts row changes only (no
truncate/ddl control records) so the harness can check them against the workload.  Prints
one JSON line like `binlake decode --stats`.  With --jobs, files go to worker processes, as
the Spark files source's tasks run side by side on a local[N] session: a file each, or a
part each of a file of 256 MiB or more (the source's splitBytes, 128 MiB).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def decode_file(path: str, tables_spec: str | None, batch_size: int, begin: int | None = None,
                end: int | None = None) -> tuple[int, int]:
    """(row changes, batches) of one file, or of its event groups that start in [begin,
    end), read as the Spark files source reads it: the filter in the decoder (the left-out
    tables' rows events passed over, but in an XA group, where they are counted)."""
    from pathlib import Path

    from binlake.binlog.decoder import BinlogDecoder
    from binlake.cdc.changes import table_filter
    from binlake.cdc.arrow import file_batches

    tables = table_filter(tables_spec)
    rows = batches = 0
    dec = BinlogDecoder(file=Path(path).name, json_images=True, table_filter=tables)
    for batch in file_batches(path, begin, end, decoder=dec, batch_size=batch_size,
                              tables=tables, statements=False):
        rows += batch.num_rows
        batches += 1
    return rows, batches


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--tables", default=None)
    ap.add_argument("--batch-size", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (0: one per CPU)")
    args = ap.parse_args(argv)
    jobs = args.jobs or os.cpu_count() or 1

    import binlake.cdc.arrow  # noqa: F401  (imported once, before any fork)

    t0 = time.perf_counter()
    work = [(path, args.tables, args.batch_size) for path in args.files]
    if jobs > 1:  # the Spark files source's partitions
        from binlake.binlog.files import SPLIT_BYTES, split_points

        work = []
        for path in args.files:
            bounds = [None, *split_points(path, SPLIT_BYTES), None]
            work.extend((path, args.tables, args.batch_size, bounds[i], bounds[i + 1])
                        for i in range(len(bounds) - 1))
    if jobs > 1 and len(work) > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(min(jobs, len(work))) as pool:
            done = pool.starmap(decode_file, work, chunksize=1)
    else:
        done = [decode_file(*w) for w in work]
    sys.stdout.write(json.dumps({"rows": sum(r for r, _ in done), "batches": sum(b for _, b in done),
                                 "seconds": round(time.perf_counter() - t0, 3)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
