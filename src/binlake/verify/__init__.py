"""`binlake verify`: prove that synced Delta tables equal their source tables.

Chunked checksums over the primary key, computed by the source server in SQL and over the
Delta table (the same canonical row text on both sides, see `canonical`): by the driver with
Arrow on a local master (`lake`), by Spark on a cluster (`binlake.spark.verify`). Online
while the sync runs, narrowed down to the differing rows (with Spark). This package imports
Spark only when it has work for it.

    from binlake.verify import verify
    report = verify("mysql://repl:pw@db1", "shop.*", "/data/lake")
    assert report.equal, report.to_json()
"""
from __future__ import annotations

from .canonical import VerifyError
from .report import RowDifference, TableReport, VerifyReport
from .run import DEFAULT_CHUNK_SIZE, DEFAULT_CONNECTIONS, verify

__all__ = ["verify", "VerifyReport", "TableReport", "RowDifference", "VerifyError",
           "DEFAULT_CHUNK_SIZE", "DEFAULT_CONNECTIONS"]
