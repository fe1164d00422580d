#!/usr/bin/env python3
"""Decoding a table the server keeps numbering anew, against the same rows without that.

A server opens a table again under a new table id after FLUSH TABLES or an ALTER, and all the
time when its table cache holds fewer tables than are in use; each transaction's TABLE_MAP
then differs from the last one in its id alone. A throwaway MariaDB gets N transactions of
five rows into a 12-column table with `FLUSH TABLES` after each (one binlog file), then N
without (another file); each file is decoded `--repeat` times (`binlake decode --output null
--stats`, a process per run, alternating) and one JSON line gives the median wall seconds of
each and their ratio.

    python benchmarks/table_churn.py --transactions 3000 --repeat 5
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DDL = ("CREATE TABLE ch (id INT PRIMARY KEY, a INT, b BIGINT, c VARCHAR(40), d DOUBLE, "
       "e DATETIME(6), f DECIMAL(12,3), g TEXT, h TINYINT, i DATE, "
       "j VARCHAR(10) CHARACTER SET latin1, k SMALLINT)")


def write(server, transactions: int, flush: bool, base: int) -> Path:
    """One binlog file of `transactions` five-row INSERTs; FLUSH TABLES after each if asked."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            file = server.binlog_end()[0]
            for t in range(transactions):
                rows = ",".join(
                    f"({base + 5 * t + k}, {k}, {t}, 'name {t}', 1.5, '2024-01-02 03:04:05.6', "
                    f"12.5, 'text', 1, '2024-01-01', 'x', 7)" for k in range(5))
                cur.execute("INSERT INTO ch VALUES " + rows)
                conn.commit()
                if flush:
                    cur.execute("FLUSH TABLES ch")
            cur.execute("FLUSH BINARY LOGS")
    finally:
        conn.close()
    return server.binlog_dir / file


def decode_seconds(path: Path) -> tuple[float, int]:
    """(wall seconds, rows) of one `binlake decode --output null --stats` process."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "binlake.cli", "decode", "--output", "null",
                          "--stats", str(path)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    return wall, json.loads(out.stdout.strip().splitlines()[-1])["rows"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transactions", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from binlake.devserver import DevServer

    with tempfile.TemporaryDirectory(prefix="binlake-churn-") as tmp:
        server = DevServer(Path(tmp)).start()
        try:
            server.sql("DROP TABLE IF EXISTS ch", DDL)
            churned = write(server, args.transactions, True, 0)
            steady = write(server, args.transactions, False, 10 * 5 * args.transactions)
            walls: dict[str, list[float]] = {"renumbered": [], "steady": []}
            for _ in range(args.repeat):
                for name, path in (("renumbered", churned), ("steady", steady)):
                    wall, rows = decode_seconds(path)
                    if rows != 5 * args.transactions:
                        raise SystemExit(f"{name}: {rows} rows, expected {5 * args.transactions}")
                    walls[name].append(wall)
        finally:
            server.stop()
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(json.dumps({"transactions": args.transactions, "rows": 5 * args.transactions,
                      "renumbered_s": round(med["renumbered"], 3),
                      "steady_s": round(med["steady"], 3),
                      "ratio": round(med["renumbered"] / med["steady"], 2),
                      "runs": {k: [round(w, 3) for w in v] for k, v in walls.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
