#!/usr/bin/env python3
"""Decoding many tables, and a table the server keeps numbering anew, against one steady table.

A server opens a table again under a new table id after FLUSH TABLES or an ALTER, and all the
time when its table cache holds fewer tables than are in use; each transaction's TABLE_MAP
then differs from the last one in its id alone. A throwaway MariaDB gets three binlog files:
N transactions of five rows into a 12-column table with `FLUSH TABLES` after each
(`renumbered`), the same without (`steady`), and `--many-transactions` one-row
transactions, each into one of `--tables` tables at random (`many_tables`). Each file is
decoded `--repeat` times (`binlake decode --output null --stats`, a process per run,
alternating) and one JSON line gives the median wall seconds of each.

    python benchmarks/table_churn.py --transactions 3000 --tables 2000 --many-transactions 10000
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

DDL = ("CREATE TABLE ch (id INT PRIMARY KEY, a INT, b BIGINT, c VARCHAR(40), d DOUBLE, "
       "e DATETIME(6), f DECIMAL(12,3), g TEXT, h TINYINT, i DATE, "
       "j VARCHAR(10) CHARACTER SET latin1, k SMALLINT)")


def one_file(server, transactions: Iterator[list[str]]) -> Path:
    """A binlog file of its own holding these transactions (each: its statements, then a
    commit)."""
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            file = server.binlog_end()[0]
            for statements in transactions:
                for sql in statements:
                    cur.execute(sql)
                conn.commit()
            cur.execute("FLUSH BINARY LOGS")
    finally:
        conn.close()
    return server.binlog_dir / file


def one_table(transactions: int, flush: bool, base: int) -> Iterator[list[str]]:
    """Five-row INSERTs into `ch`; FLUSH TABLES after each if asked (a new table id each)."""
    for t in range(transactions):
        rows = ",".join(f"({base + 5 * t + k}, {k}, {t}, 'name {t}', 1.5, "
                        f"'2024-01-02 03:04:05.6', 12.5, 'text', 1, '2024-01-01', 'x', 7)"
                        for k in range(5))
        yield ["INSERT INTO ch VALUES " + rows] + (["FLUSH TABLES ch"] if flush else [])


def many_tables(tables: int, transactions: int) -> Iterator[list[str]]:
    """One-row INSERTs, each into one of `tables` tables (m0, m1, ...) at random."""
    rng = random.Random(7)
    for t in range(transactions):
        yield [f"INSERT INTO m{rng.randrange(tables)} VALUES "
               f"({t}, {t}, 'x', 1.5, '2024-01-02 03:04:05', 1.5)"]


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
    ap.add_argument("--tables", type=int, default=2000)
    ap.add_argument("--many-transactions", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from binlake.devtools.devserver import DevServer

    with tempfile.TemporaryDirectory(prefix="binlake-churn-") as tmp:
        server = DevServer(Path(tmp)).start()
        try:
            server.sql("DROP TABLE IF EXISTS ch", DDL,
                       *(f"CREATE TABLE m{i} (id INT PRIMARY KEY, a INT, c VARCHAR(40), "
                         "d DOUBLE, e DATETIME(6), f DECIMAL(12,3))" for i in range(args.tables)))
            churned = one_file(server, one_table(args.transactions, True, 0))
            steady = one_file(server, one_table(args.transactions, False,
                                                10 * 5 * args.transactions))
            many = one_file(server, many_tables(args.tables, args.many_transactions))
            files = {"renumbered": (churned, 5 * args.transactions),
                     "steady": (steady, 5 * args.transactions),
                     "many_tables": (many, args.many_transactions)}
            walls: dict[str, list[float]] = {name: [] for name in files}
            for _ in range(args.repeat):
                for name, (path, expected) in files.items():
                    wall, rows = decode_seconds(path)
                    if rows != expected:
                        raise SystemExit(f"{name}: {rows} rows, expected {expected}")
                    walls[name].append(wall)
        finally:
            server.stop()
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(json.dumps({"transactions": args.transactions, "tables": args.tables,
                      "many_transactions": args.many_transactions,
                      **{f"{k}_s": round(v, 3) for k, v in med.items()},
                      "renumbered_vs_steady": round(med["renumbered"] / med["steady"], 2),
                      "runs": {k: [round(w, 3) for w in v] for k, v in walls.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
