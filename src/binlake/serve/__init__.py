"""A replication primary of binlake's own: binlog files served over the MySQL/MariaDB protocol.

store.py indexes the folder, primary.py answers replicas (set-up statements, COM_BINLOG_DUMP,
COM_BINLOG_DUMP_GTID, heartbeats, semi-sync), server.py is the threaded socket edge and cli.py
the `binlake serve` command. Names are imported lazily so `binlake --help` stays fast.
"""
from __future__ import annotations

from typing import Any

__all__ = ["BinlogStore", "Primary", "PrimaryServer", "ServeConfig"]


def __getattr__(name: str) -> Any:
    if name in ("Primary", "ServeConfig"):
        from . import primary

        return getattr(primary, name)
    if name == "PrimaryServer":
        from .server import PrimaryServer

        return PrimaryServer
    if name == "BinlogStore":
        from .store import BinlogStore

        return BinlogStore
    raise AttributeError(name)
