#!/usr/bin/env python3
"""End-to-end lag: MariaDB commit -> row visible in its Delta table, at a sustained write rate.

The measurement itself is `binlake.bench.e2e` (also run by `binlake bench --e2e-seconds N`);
this prints its result as one JSON line: rows, rate, p50/p90/p99/max lag in seconds.

    python benchmarks/e2e_lag.py --rate 200 --seconds 60
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=200.0, help="commits per second")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the writer writes")
    ap.add_argument("--trigger", type=float, default=1.0, help="seconds between micro-batches")
    args = ap.parse_args(argv)

    from binlake.bench.e2e import E2EError, measure_e2e_lag

    try:
        out = measure_e2e_lag(args.rate, args.seconds, args.trigger,
                              echo=lambda s: print(s, file=sys.stderr))
    except E2EError as exc:
        print(f"e2e_lag: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
