"""The load limits of `binlake verify`'s source side on a real MariaDB: chunks of at most
--chunk-size rows, --rate rows per second, and a statement timeout that backs off and
retries while the server is busy (here: a table held by LOCK TABLES ... WRITE)."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from binlake.replica.url import ServerURL
from binlake.verify import VerifyError
from binlake.verify.source import Source

pytestmark = pytest.mark.integration

DB = "verify_src"


@pytest.fixture(scope="module")
def table(mariadb: Any) -> Any:
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}", f"CREATE DATABASE {DB}", database=None)
    mariadb.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
                "INSERT INTO t VALUES " + ",".join(f"({i}, 'v{i}')" for i in range(50)),
                database=DB)
    return mariadb


def test_chunks_hold_at_most_chunk_size_rows(table: Any) -> None:
    src = Source(ServerURL.parse(table.url))
    try:
        plan = src.plan(src.describe(DB, "t"), 7)
        sums = {i: c for _, got in src.checksums(plan) for i, c in got.items()}
    finally:
        src.close()
    assert len(plan.chunks) == 8  # walked over the key, not counted first
    assert [sums[i].rows for i in range(8)] == [7] * 7 + [1]


def test_rate_limits_the_rows_read_per_second(table: Any) -> None:
    src = Source(ServerURL.parse(table.url), rate=100)
    try:
        plan = src.plan(src.describe(DB, "t"), 10)
        t0 = time.monotonic()
        rows = sum(c.rows for _, got in src.checksums(plan) for c in got.values())
        took = time.monotonic() - t0
    finally:
        src.close()
    assert rows == 50 and took >= 0.45, took  # 50 rows at 100 rows/s


def test_connections_read_the_same_checksums(table: Any) -> None:
    """Chunks read side by side on three connections give every chunk's checksum, as one
    connection does, and progress counts each table's chunks up to its total."""
    from binlake.verify.run import source_sums

    src = Source(ServerURL.parse(table.url))
    seen: list[tuple[str, int, int]] = []
    try:
        plan = src.plan(src.describe(DB, "t"), 4)
        one = source_sums(src, [plan])
        three = source_sums(src, [plan], lambda *a: seen.append(a), connections=3)
        spares = src.spares(2)  # the two extra connections, kept for the next reads
        assert src.conn.open and all(c.conn.open for c in spares)
    finally:
        src.close()
    assert not any(c.conn.open for c in (src, *spares))  # closed with the caller's
    assert len(plan.chunks) == 13
    assert {i: (c.rows, c.xor) for i, c in three[0][0].items()} == \
        {i: (c.rows, c.xor) for i, c in one[0][0].items()}
    assert sum(c.rows for c in three[0][0].values()) == 50
    assert [d for _, d, _ in seen] == list(range(1, 14)) and seen[-1][2] == 13


def test_connections_share_the_rate(table: Any) -> None:
    from binlake.verify.run import source_sums

    src = Source(ServerURL.parse(table.url), rate=100)
    try:
        plan = src.plan(src.describe(DB, "t"), 5)
        t0 = time.monotonic()
        got = source_sums(src, [plan], connections=2)
        took = time.monotonic() - t0
        assert src.rate == 100  # given back to the caller's connection
    finally:
        src.close()
    assert sum(c.rows for c in got[0][0].values()) == 50
    assert took >= 0.4, took  # 50 rows at 100 rows/s in all, not 100 per connection


def _hold_lock(server: Any, seconds: float) -> threading.Thread:
    """LOCK TABLES t WRITE from another session for `seconds` (reads of t wait meanwhile)."""
    locked = threading.Event()

    def hold() -> None:
        conn = server.connect(database=DB)
        try:
            with conn.cursor() as cur:
                cur.execute("LOCK TABLES t WRITE")
                locked.set()
                time.sleep(seconds)
                cur.execute("UNLOCK TABLES")
        finally:
            conn.close()

    th = threading.Thread(target=hold, daemon=True)
    th.start()
    assert locked.wait(10)
    return th


def test_a_timed_out_read_backs_off_and_retries(table: Any) -> None:
    src = Source(ServerURL.parse(table.url), timeout=0.3)
    try:
        held = _hold_lock(table, 1.2)
        t0 = time.monotonic()
        rows, _ = src.read("SELECT COUNT(*) FROM verify_src.t")
        took = time.monotonic() - t0
        held.join()
    finally:
        src.close()
    # the first try times out after 0.3 s, the next comes after a 1 s pause (2 s after
    # that), and one of them passes once the lock is gone at 1.2 s
    assert int(rows[0][0]) == 50
    assert src.timeouts >= 1 and took >= 1.2, (src.timeouts, took)


def test_a_read_that_keeps_timing_out_fails_with_a_hint(table: Any) -> None:
    src = Source(ServerURL.parse(table.url), timeout=0.2, retries=1)
    try:
        held = _hold_lock(table, 2.0)  # > 0.2 + 1 + 0.2 s
        with pytest.raises(VerifyError) as err:
            src.read("SELECT COUNT(*) FROM verify_src.t")
        held.join()
    finally:
        src.close()
    assert src.timeouts == 2
    assert "timed out 2 times (0.2 s each)" in str(err.value)
    assert "--chunk-size" in str(err.value.hint)
