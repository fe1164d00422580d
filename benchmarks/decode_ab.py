#!/usr/bin/env python3
"""Two builds of binlake compared on the same binlog files, runs interleaved.

Each round runs `binlake decode --output null`, `--output jsonl` and
`benchmarks/arrow_decode.py` once with the base tree's src/ on PYTHONPATH and once with the
new tree's, and takes each process's CPU seconds (user + system, from wait4). Prints the
medians, their ratio (new / base), the ranges, the load average before and after, and
whether both builds wrote the same bytes. A tree is made with
`git archive COMMIT src setup.py pyproject.toml MANIFEST.in | tar -x -C DIR` and
`python setup.py build_ext --inplace -q` in DIR.

    python benchmarks/decode_ab.py BASE/src NEW/src FILE... [--rounds 9] [--modes null,jsonl]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ARROW = Path(__file__).with_name("arrow_decode.py")


def run(src: str, mode: str, files: list[str]) -> tuple[float, str]:
    """(CPU seconds, digest of the output) of one run with `src` on the path."""
    env = dict(os.environ, PYTHONPATH=src)
    if mode == "arrow":
        cmd = [sys.executable, str(ARROW), *files]
    else:
        cmd = [sys.executable, "-m", "binlake.cli", "decode", "--output", mode, *files]
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        if status != 0:
            raise SystemExit(f"{' '.join(cmd)} failed (PYTHONPATH={src})")
        out.seek(0)
        text = out.read()
    if mode == "arrow":  # its JSON line carries the wall time: not compared
        text = b"".join(p for p in text.split(b",") if b"seconds" not in p)
    return usage.ru_utime + usage.ru_stime, hashlib.sha256(text).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--modes", default="null,jsonl,arrow")
    args = ap.parse_args()
    print("load", " ".join(f"{x:.1f}" for x in os.getloadavg()))
    for mode in args.modes.split(","):
        times: dict[str, list[float]] = {"base": [], "new": []}
        digests: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, src in (("base", args.base), ("new", args.new)):
                cpu, digests[name] = run(src, mode, args.files)
                times[name].append(cpu)
        b, n = statistics.median(times["base"]), statistics.median(times["new"])
        same = "same output" if digests["base"] == digests["new"] else "OUTPUT DIFFERS"
        print(f"{mode}: base {b:.3f} s, new {n:.3f} s, ratio {n / b:.3f} "
              f"(base {min(times['base']):.3f}-{max(times['base']):.3f}, "
              f"new {min(times['new']):.3f}-{max(times['new']):.3f}); {same}")
    print("load", " ".join(f"{x:.1f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
