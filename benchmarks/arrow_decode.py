#!/usr/bin/env python3
"""Benchmark hook for the Arrow path: binlog FILES -> binlake CDC record batches.

Opt-in contestant (`binlake bench --tools binlake-arrow`) until binlake.spark.arrow settles.
Counts row changes only (no truncate/ddl control records) so the harness can check them
against the workload.  Prints one JSON line like `binlake decode --stats`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--tables", default=None)
    ap.add_argument("--batch-size", type=int, default=10_000)
    args = ap.parse_args(argv)

    from pathlib import Path

    from binlake.binlog.decoder import BinlogDecoder
    from binlake.changes import table_filter
    from binlake.files import read_events
    from binlake.spark.arrow import events_to_batches

    t0 = time.perf_counter()
    rows = batches = 0
    tables = table_filter(args.tables)
    # As the Spark files source reads: a file at a time, the filter in the decoder (the
    # left-out tables' rows events passed over, but in an XA group, where they are counted).
    for path in args.files:
        dec = BinlogDecoder(file=Path(path).name, json_images=True, table_filter=tables)
        for batch in events_to_batches(read_events(path, decoder=dec), batch_size=args.batch_size,
                                       tables=tables, statements=False,
                                       decoder=dec if tables is not None else None):
            rows += batch.num_rows
            batches += 1
    sys.stdout.write(json.dumps({"rows": rows, "batches": batches,
                                 "seconds": round(time.perf_counter() - t0, 3)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
