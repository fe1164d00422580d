#!/usr/bin/env python3
"""Benchmark hook for the Spark streaming source's executor side: a live binlog range ->
binlake CDC record batches, as `BinlakeStreamReader.read` makes them, without Spark.

Why: a Spark micro-batch's time on the source is this loop (the replica, the schema
history's resolver, the Arrow builder); measuring it apart from Spark and Delta shows what
binlake costs. Prints one JSON line like `binlake decode --stats`:

    python benchmarks/source_read.py mysql://user:pw@127.0.0.1:3306 \
        --start mariadb-bin.000011:4 --stop mariadb-bin.000013:4 [--schema-history H.json]

--schema-history: a history saved by binlake (or an empty one whose range replays the
tables' CREATE TABLE), as the source passes its partitions; without it, the TABLE_MAP
metadata names the columns.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--start", required=True, help="FILE:POS where the range starts")
    ap.add_argument("--stop", required=True, help="FILE:POS where it ends (an event boundary)")
    ap.add_argument("--schema-history", default=None)
    ap.add_argument("--batch-size", type=int, default=10_000)
    ap.add_argument("--server-id", type=int, default=6_500_001)
    args = ap.parse_args(argv)

    from binlake.replica.position import Position
    from binlake.replica.stream import BinlogStream, StreamOptions
    from binlake.replica.url import ServerURL
    from binlake.cdc.arrow import MAX_BATCH_BYTES, CdcBatchBuilder

    resolver = None
    if args.schema_history:
        from binlake.schema.history import SchemaHistory
        from binlake.schema.tracker import SchemaTracker

        resolver = SchemaTracker(SchemaHistory.load(args.schema_history))
    stop_file, stop_pos = args.stop.rsplit(":", 1)
    t0 = time.perf_counter()
    stream = BinlogStream(ServerURL.parse(args.url), StreamOptions(
        server_id=args.server_id, start=Position.parse_start(args.start), until_end=True,
        stop_at=(stop_file, int(stop_pos)), table_resolver=resolver, json_images=True))
    builder, size = CdcBatchBuilder(), args.batch_size
    rows = batches = 0

    def flush() -> None:
        nonlocal rows, batches
        rows += builder.flush().num_rows
        batches += 1

    try:
        for records in stream.batches():  # the source's loop (stream_source.py: read)
            if len(builder) + len(records) <= size:
                builder.add_records(records)
            else:
                for rec in records:
                    builder.add(rec)
                    if len(builder) >= size:
                        flush()
            if len(builder) >= size or builder.image_bytes >= MAX_BATCH_BYTES:
                flush()
        if len(builder):
            flush()
    finally:
        stream.close()
    sys.stdout.write(json.dumps({"rows": rows, "batches": batches, "events": stream.events_seen,
                                 "seconds": round(time.perf_counter() - t0, 3),
                                 "end": str(stream.position)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
