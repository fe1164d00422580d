"""The benchmark harness: binlake vs python-mysql-replication vs mariadb-binlog.

Measures only; it never changes how binlake decodes.  The `bench` click command lives in
`binlake.bench.cli` (register it with ``main.add_command(bench)``); `run_benchmark` is the
same thing as a function, for tests and notebooks.
"""
from __future__ import annotations

__all__ = ["BenchConfig", "run_benchmark"]


def __getattr__(name: str):  # lazy: importing the package must not pull in click or pymysql
    if name in __all__:
        from . import cli

        return getattr(cli, name)
    raise AttributeError(name)
