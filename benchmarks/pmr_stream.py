#!/usr/bin/env python3
"""python-mysql-replication (PyPI mysql-replication) as a benchmark contestant.

Streams from a live server, non-blocking (stops at the server's end), from FILE:4 on, and
decodes every value of every row into Python objects: `event.rows` is lazy in pmr, so the
loop reads every value of every image, or the comparison would credit pmr for work it skips.
Prints one JSON line: rows per table and op, events, seconds, checksums verified.

    python benchmarks/pmr_stream.py mysql://user:pw@127.0.0.1:3306 mariadb-bin.000002 \
        [--tables db.narrow,db.wide]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from typing import Any
from urllib.parse import unquote, urlsplit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="mysql://user:password@host:port")
    ap.add_argument("first_file", help="binlog file to start at (position 4)")
    ap.add_argument("--tables", default=None, help="only these db.table names (comma separated)")
    ap.add_argument("--server-id", type=int, default=6449520)
    ap.add_argument("--no-verify-checksums", action="store_true")
    args = ap.parse_args(argv)

    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    parts = urlsplit(args.url)
    settings = {"host": parts.hostname or "127.0.0.1", "port": parts.port or 3306,
                "user": unquote(parts.username or "root"),
                "passwd": unquote(parts.password or "")}
    only_tables = only_schemas = None
    wanted: set[tuple[str, str]] | None = None
    if args.tables:
        wanted = {tuple(t.split(".", 1)) for t in args.tables.split(",")}  # type: ignore[misc]
        only_schemas = sorted({s for s, _ in wanted})
        only_tables = sorted({t for _, t in wanted})

    t0 = time.perf_counter()
    stream = BinLogStreamReader(
        connection_settings=settings, server_id=args.server_id, blocking=False,
        resume_stream=True, log_file=args.first_file, log_pos=4,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_schemas=only_schemas, only_tables=only_tables,
        verify_checksum=not args.no_verify_checksums)
    counts: Counter[str] = Counter()
    events = 0
    values = 0
    nulls = 0
    try:
        for ev in stream:
            events += 1
            key_t = (ev.schema, ev.table)
            if wanted is not None and key_t not in wanted:
                continue  # only_schemas x only_tables is a cross product; keep exact pairs
            op = ("update" if isinstance(ev, UpdateRowsEvent)
                  else "insert" if isinstance(ev, WriteRowsEvent) else "delete")
            images = ("before_values", "after_values") if op == "update" else ("values",)
            n = 0
            for row in ev.rows:
                n += 1
                for image in images:
                    vals: dict[str, Any] = row[image]
                    for v in vals.values():
                        values += 1
                        if v is None:
                            nulls += 1
            counts[f"{ev.schema}.{ev.table}:{op}"] += n
    finally:
        stream.close()
    per_table: dict[str, dict[str, int]] = {}
    for k, n in counts.items():
        name, op = k.rsplit(":", 1)
        per_table.setdefault(name, {})[op] = n
    out = {"tool": "python-mysql-replication", "rows": sum(counts.values()), "events": events,
           "values": values, "nulls": nulls, "tables": per_table,
           "verify_checksums": not args.no_verify_checksums,
           "seconds": round(time.perf_counter() - t0, 3)}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
