"""binlake: MySQL and MariaDB change data capture, from the replication protocol to Delta Lake.

The public API. Names load on first use, so `import binlake` stays cheap for the CLI::

    import binlake
    for change in binlake.iter_changes(binlake.read_events("mariadb-bin.000001")):
        print(change.op, change.table, change.after)
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # binlog files and the sans-IO decoder
    "read_events": "binlake.binlog.files",
    "read_files": "binlake.binlog.files",
    "BinlogDecoder": "binlake.binlog.decoder",
    # change records
    "ChangeRecord": "binlake.cdc.changes",
    "iter_changes": "binlake.cdc.changes",
    "table_filter": "binlake.cdc.changes",
    # the live replica
    "BinlogStream": "binlake.replica.stream",
    "StreamOptions": "binlake.replica.stream",
    "ServerURL": "binlake.replica.url",
    "Position": "binlake.replica.position",
    # values that JSON has no word for
    "ABSENT": "binlake.binlog.values",
    "JSON_NULL": "binlake.binlog.values",
    "InvalidTemporal": "binlake.binlog.values",
    # errors
    "BinlakeError": "binlake.errors",
    "DecodeError": "binlake.errors",
    "ChecksumError": "binlake.errors",
    "TruncatedError": "binlake.errors",
    "UnknownEventError": "binlake.errors",
    "SchemaError": "binlake.errors",
    "ServerError": "binlake.errors",
    "ConfigError": "binlake.errors",
    "PositionUnavailable": "binlake.replica.stream",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'binlake' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from binlake.binlog.decoder import BinlogDecoder
    from binlake.cdc.changes import ChangeRecord, iter_changes, table_filter
    from binlake.errors import (BinlakeError, ChecksumError, ConfigError, DecodeError,
                                SchemaError, ServerError, TruncatedError, UnknownEventError)
    from binlake.binlog.files import read_events, read_files
    from binlake.replica.position import Position
    from binlake.replica.stream import BinlogStream, PositionUnavailable, StreamOptions
    from binlake.replica.url import ServerURL
    from binlake.binlog.values import ABSENT, JSON_NULL, InvalidTemporal
