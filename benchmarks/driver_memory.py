"""The sync driver's memory for one catch-up batch, step by step, without Spark.

A throwaway MariaDB, the seeded bench workload at --scale, its second round of changes (as
`binlake.bench.sync_bench`), then the steps the driver takes for the batch that round makes:
read (`BinlogStreamReader.read` of the range, as `read_planned`), batch statistics, each
table's records cut from the batch and folded (`cdc.net.net_scd1`), and what is left after
the batch is dropped and `release_freed` runs. After each step: RSS, peak RSS since the last
step (VmHWM, reset through /proc/self/clear_refs) and Arrow's pool.

    python benchmarks/driver_memory.py --scale 50000 [--all-rows-first] [--slice-bytes 0]

`--all-rows-first` cuts every table's records before folding any (as apply_arrow did
before it cut them per job); `--slice-bytes 0` folds in slices bounded by rows only (as
net_scd1 did before).
"""
from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa


def _status() -> dict[str, float]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=50_000)
    ap.add_argument("--all-rows-first", action="store_true")
    ap.add_argument("--slice-bytes", type=int, default=None)
    ap.add_argument("--json")
    args = ap.parse_args()

    from binlake._util.memory import release_freed
    from binlake.bench.common import columns as _columns
    from binlake.bench.sync_bench import second_round
    from binlake.bench.workload import SCHEMA, Workload, load
    from binlake.cdc import net
    from binlake.cdc.arrow import CDC_SCHEMA
    from binlake.devtools.devserver import DevServer
    from binlake.spark.stream_source import BinlogRange, BinlogStreamReader

    if args.slice_bytes is not None:
        net.SLICE_BYTES = args.slice_bytes or 1 << 62
    steps: list[dict[str, Any]] = []

    def mark(name: str, **extra: Any) -> None:
        gc.collect()
        st = _status()
        steps.append({"step": name, "rss_mb": st["VmRSS"], "peak_mb": st["VmHWM"],
                      "arrow_mb": round(pa.total_allocated_bytes() / 2**20, 1), **extra})
        print(json.dumps(steps[-1]), file=sys.stderr, flush=True)
        Path("/proc/self/clear_refs").write_text("5")  # peak from here on

    work = Path(tempfile.mkdtemp(prefix="binlake-drivermem-"))
    server = DevServer(work / "server", extra_options={
        "innodb_buffer_pool_size": "256M", "innodb_flush_log_at_trx_commit": "0"}).start()
    try:
        load(server, Workload(args.scale, 6))
        f0, p0 = server.sql("SHOW MASTER STATUS", database=None)[0][:2]
        second_round(server)
        f1, p1 = server.sql("SHOW MASTER STATUS", database=None)[0][:2]
        cols = {t: _columns(server, t) for t in ("narrow", "wide", "large")}
        mark("start", binlog_bytes=p1 - p0 if f0 == f1 else None)
        reader = BinlogStreamReader({"url": server.url, "tables": f"{SCHEMA}.*"})
        t0 = time.monotonic()
        batches = list(reader.read(BinlogRange(0, f0, p0, f1, p1, 4242)))
        arrow = pa.Table.from_batches(batches, schema=CDC_SCHEMA)
        del batches
        mark("read", s=round(time.monotonic() - t0, 2), records=arrow.num_rows,
             arrow_table_mb=round(arrow.nbytes / 2**20, 1))
        stats = net.batch_stats(arrow)
        mark("stats")
        names = [s.table for s in stats if s.rows]
        cut = {}
        if args.all_rows_first:
            cut = {t: net.table_rows(arrow, SCHEMA, t) for t in names}
            mark("every table's rows cut")
        nets = {}
        for t in names:
            rows = cut.pop(t) if t in cut else net.table_rows(arrow, SCHEMA, t)
            n, mb = rows.num_rows, round(rows.nbytes / 2**20, 1)
            t0 = time.monotonic()
            nets[t] = net.net_scd1(rows, ["id"], cols[t])
            del rows
            mark(f"fold {t}", s=round(time.monotonic() - t0, 2), records=n, rows_mb=mb,
                 keys=nets[t].table.num_rows, net_mb=round(nets[t].table.nbytes / 2**20, 1))
        del arrow, nets, stats
        mark("batch dropped")
        release_freed()
        mark("release_freed")
        if args.json:
            Path(args.json).write_text(json.dumps(steps, indent=1) + "\n")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
