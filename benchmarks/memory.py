#!/usr/bin/env python3
"""Peak memory of binlake on one huge row and one huge transaction (issue 6: memory bounded).

Starts a throwaway MariaDB (binlake.devtools.devserver), writes each case into binlog files of its
own, then runs `binlake decode --output null --stats` on those files and `binlake stream
--until-end --output null --stats` from their start, each under GNU time, and prints peak RSS
against the size of what was decoded:

  row          one INSERT of a --row-mb LONGTEXT, then an UPDATE of it (before + after image:
               one rows event of twice the row)
  transaction  one transaction of --tx-mb of 64 KiB rows (many rows events, one XID)
  baseline     an empty table's binlog: the interpreter and binlake's imports

Usage: python benchmarks/memory.py [--row-mb 16] [--tx-mb 256] [--json out.json]
(--tx-mb 1024 is the issue's 1 GB transaction: ~1 GB of binlog and a few minutes to load.)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from binlake.devtools.devserver import DevServer, find_binary

MIB = 1 << 20


def _flush(srv: DevServer) -> str:
    """Rotate the binlog; returns the new (empty) file's name."""
    srv.sql("FLUSH BINARY LOGS", database=None)
    return srv.sql("SHOW MASTER STATUS", database=None)[0][0]


def _files_from(srv: DevServer, first: str) -> list[str]:
    names = sorted(p.name for p in srv.binlog_dir.glob("mariadb-bin.[0-9]*"))
    return [str(srv.binlog_dir / n) for n in names if n >= first]


def _write_row(srv: DevServer, mb: int) -> None:
    text = "".join(random.Random(1).choices("abcdefghij klmnopqrstuvwxyz", k=mb * MIB))
    conn = srv.connect(database="mem")
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO big VALUES (1, %s)", (text,))
            cur.execute("UPDATE big SET t = CONCAT('x', SUBSTRING(t, 2)) WHERE id = 1")
        conn.commit()
    finally:
        conn.close()


def _write_transaction(srv: DevServer, mb: int) -> None:
    chunk = "y" * (64 * 1024)
    rows = mb * 16  # 64 KiB each
    conn = srv.connect(database="mem")
    try:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for start in range(0, rows, 64):
                n = min(64, rows - start)
                cur.executemany("INSERT INTO big VALUES (%s, %s)",
                                [(10 + start + i, chunk) for i in range(n)])
        conn.commit()
    finally:
        conn.close()


def _measure(cmd: list[str]) -> dict:
    """Run under GNU time: peak RSS (MiB), wall and the tool's --stats line."""
    gnu_time = shutil.which("time") or "/usr/bin/time"
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.perf_counter()
        proc = subprocess.run([gnu_time, "-f", "%M", "-o", tf.name, *cmd],
                              capture_output=True, text=True, env={**os.environ, "MYSQL_PWD": ""})
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
        rss_kb = int(tf.read().split()[-1])
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"peak_rss_mib": round(rss_kb / 1024, 1), "wall_s": round(wall, 2), **stats}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row-mb", type=int, default=16)
    ap.add_argument("--tx-mb", type=int, default=256)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)
    if find_binary("mariadbd") is None:
        raise SystemExit("needs mariadbd (apt-get install mariadb-server)")
    py = [sys.executable, "-m", "binlake.cli"]
    results = []
    with tempfile.TemporaryDirectory(prefix="binlake-mem-") as tmp, \
            DevServer(Path(tmp) / "server") as srv:
        srv.sql("CREATE DATABASE mem", database=None)
        srv.sql("CREATE TABLE big (id BIGINT PRIMARY KEY, t LONGTEXT)", database="mem")
        cases = [("baseline", 0, lambda: srv.sql("SELECT 1", database="mem")),
                 ("row", args.row_mb * 2, lambda: _write_row(srv, args.row_mb)),
                 ("transaction", args.tx_mb, lambda: _write_transaction(srv, args.tx_mb))]
        for name, payload_mb, write in cases:
            first = _flush(srv)
            write()
            _flush(srv)
            files = _files_from(srv, first)
            size = sum(Path(f).stat().st_size for f in files)
            url = f"mysql://{srv.user}:{srv.password}@127.0.0.1:{srv.port}"
            for tool, cmd in (("decode", [*py, "decode", "--output", "null", "--stats", *files]),
                              ("stream", [*py, "stream", url, "--start", f"{Path(first).name}:4",
                                          "--until-end", "--no-schema-history", "--output",
                                          "null", "--stats"])):
                m = _measure(cmd)
                m.update(case=name, tool=tool, binlog_mib=round(size / MIB, 1),
                         payload_mib=payload_mb)
                results.append(m)
                print(json.dumps(m), flush=True)
    base = {r["tool"]: r["peak_rss_mib"] for r in results if r["case"] == "baseline"}
    print("\n| case | tool | binlog MiB | rows | peak RSS MiB | above baseline | x payload |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        extra = r["peak_rss_mib"] - base[r["tool"]]
        ratio = f"{extra / r['payload_mib']:.2f}" if r["payload_mib"] else "-"
        print(f"| {r['case']} | {r['tool']} | {r['binlog_mib']} | {r['rows']} | "
              f"{r['peak_rss_mib']} | {extra:.1f} | {ratio} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
