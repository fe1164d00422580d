"""The driver's binlog scan counts bytes as the files hold them, so `maxBytesPerTrigger`
cuts where it says: MariaDB's dump leaves out the ANNOTATE_ROWS events (the statement text of
each rows event) that a replica did not ask for, and they are in the file all the same."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")

from binlake.replica.position import Position
from binlake.replica.url import ServerURL
from binlake.spark.stream_source import offset_key, scan

DB = "binlake_test"


def _end(server: Any) -> tuple[str, int]:
    f, p = server.sql("SHOW MASTER STATUS", database=None)[0][:2]
    return str(f), int(p)


def test_scan_bytes_are_file_bytes_across_a_rotation(mariadb: Any) -> None:
    mariadb.sql("DROP TABLE IF EXISTS scan_bytes",
                "CREATE TABLE scan_bytes (id INT PRIMARY KEY, v VARCHAR(200))", database=DB)
    f0, p0 = _end(mariadb)

    def write(first: int) -> None:  # long statements: large ANNOTATE_ROWS events
        for k in range(first, first + 10):
            vals = ",".join(f"({k * 1000 + i}, REPEAT('x', 150))" for i in range(500))
            mariadb.sql(f"INSERT INTO scan_bytes VALUES {vals}", database=DB)

    write(0)
    f_mid, size0 = _end(mariadb)
    mariadb.sql("FLUSH BINARY LOGS", database=None)
    write(10)
    f1, p1 = _end(mariadb)
    assert f_mid == f0 and f1 != f0
    url = ServerURL.parse(mariadb.url)
    whole = scan(url, Position(f0, p0), offset_key(f1, p1), server_id=4711, heartbeat=5)
    assert whole.end is not None and (whole.end.file, whole.end.pos) == (f1, p1)
    crc = 4 if str(mariadb.sql("SELECT @@binlog_checksum", database=None)[0][0]) != "NONE" else 0
    rotate_end = size0 + 19 + 8 + len(f1) + crc  # the ROTATE event closing the first file
    # every byte of both files between the two positions, the ROTATE included
    assert whole.bytes == (rotate_end - p0) + (p1 - 4), (whole.bytes, p0, size0, p1)
    limit = (size0 - p0) // 2
    cut = scan(url, Position(f0, p0), offset_key(f1, p1), server_id=4712, heartbeat=5,
               max_bytes=limit)
    assert cut.end is not None and cut.end.file == f0
    assert cut.bytes == cut.end.pos - p0 and cut.bytes <= limit, (cut.bytes, limit)
    mariadb.sql("DROP TABLE scan_bytes", database=DB)
