"""`binlake verify`: prove that synced Delta tables equal their source tables.

Chunked checksums over the primary key, computed by the source server in SQL and by Spark
over the Delta table (the same canonical row text on both sides, see `canonical`), online
while the sync runs, narrowed down to the differing rows. The source side (this package)
does not import Spark; the Delta side is `binlake.spark.verify`.

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
