"""`--until-end` takes the primary's end at connect and streams blocking (no
BINLOG_DUMP_NON_BLOCK, which some primaries refuse); a primary that keeps closing the
connection right after the dump request is an error, not an endless reconnect; a committed
transaction reaches --out and the checkpoint at once, not when the next packet arrives."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from binlake.cli.program import main
from streamcollect import wait_started, wait_written
from tcpproxy import TcpProxy  # tests/integration is on sys.path (rootdir-less test dirs)


def stream_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["stream", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def test_a_file_after_the_last_fails_like_a_blocking_stream(mariadb) -> None:
    f, _, _ = mariadb.binlog_end_gtid()
    stem, num = f.rsplit(".", 1)
    missing = f"{stem}.{int(num) + 5:0{len(num)}d}"
    outs = []
    for extra in (["--until-end"], []):
        code, text = stream_cli(mariadb.url, "--start", f"{missing}:4", "--output", "null",
                                "--heartbeat", "0.5", *extra)
        assert code != 0, text
        assert f"cannot stream from {missing}:4" in text and "error 1236" in text, text
        outs.append(text.splitlines()[0])
    assert outs[0] == outs[1]


def test_until_end_by_gtid_stops_at_the_end(mariadb) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS ue_g (id INT PRIMARY KEY)")
    _, _, before = mariadb.binlog_end_gtid()
    mariadb.sql("INSERT INTO ue_g VALUES (1)", "INSERT INTO ue_g VALUES (2)")
    t0 = time.monotonic()
    code, text = stream_cli(mariadb.url, "--gtid", before, "--until-end", "--tables", "*.ue_g",
                            "--heartbeat", "30")
    assert code == 0, text
    ids = [json.loads(line)["after"]["id"] for line in text.splitlines() if line.startswith("{")]
    assert ids == [1, 2]
    assert time.monotonic() - t0 < 10  # (not waiting for a heartbeat)


def test_a_dump_refused_again_and_again_ends_in_an_error(mariadb) -> None:
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    try:
        proxy.refuse_dumps()
        url = mariadb.url.replace(f":{mariadb.port}", f":{proxy.port}")
        t0 = time.monotonic()
        code, text = stream_cli(url, "--until-end", "--output", "null")
        assert code != 0, text
        assert "closed the replication connection right after the binlog dump request" in text, text
        assert "4 times in a row" in text and "error log" in text, text
        assert proxy.refused == 4
        assert time.monotonic() - t0 < 30
    finally:
        proxy.close()


def test_a_commit_reaches_out_and_checkpoint_without_further_writes(mariadb, tmp_path: Path) -> None:
    mariadb.sql("CREATE TABLE IF NOT EXISTS ue_q (id INT PRIMARY KEY)", "DELETE FROM ue_q")
    out, ckpt = tmp_path / "out.jsonl", tmp_path / "ckpt.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-m", "binlake.cli", "stream", mariadb.url,
                             "--tables", "*.ue_q", "--heartbeat", "60", "--checkpoint", str(ckpt),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    try:
        wait_started(proc, ckpt)
        # Two commits within the checkpoint's 0.2 s throttle: the second is the one that
        # used to wait for the next packet (a heartbeat a minute later).
        mariadb.sql("INSERT INTO ue_q VALUES (1)", "INSERT INTO ue_q VALUES (2)")
        lines = wait_written(out, ckpt, 2, within=2.5)
        assert [json.loads(x)["after"]["id"] for x in lines] == [1, 2]
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_a_link_silent_past_three_heartbeats_is_given_longer_once(mariadb, caplog) -> None:
    """No heartbeat ever came at the period asked for (as with Dolt, which keeps 30 s): after
    the first silent spell the stream warns once and waits longer, instead of reconnecting
    at every idle spell."""
    from binlake.replica.position import Position
    from binlake.replica.stream import BinlogStream, StreamOptions
    from binlake.replica.url import ServerURL

    mariadb.sql("CREATE TABLE IF NOT EXISTS ue_h (id INT PRIMARY KEY)", "DELETE FROM ue_h")
    f, p, _ = mariadb.binlog_end_gtid()
    mariadb.sql("INSERT INTO ue_h VALUES (1)")
    proxy = TcpProxy("127.0.0.1", mariadb.port)
    url = ServerURL.parse(mariadb.url.replace(f":{mariadb.port}", f":{proxy.port}"))
    bs = BinlogStream(url, StreamOptions(start=Position(f, p), heartbeat=0.5, max_reconnects=3,
                                         tables=lambda db, t: t == "ue_h"))
    try:
        it = bs.changes()
        assert next(it).after["id"] == 1
        proxy.freeze()  # silent from now on: a read timeout after 1.5 s, then a reconnect
        mariadb.sql("INSERT INTO ue_h VALUES (2)")
        with caplog.at_level("WARNING", logger="binlake.replica"):
            assert next(it).after["id"] == 2
        assert bs.reconnects == 1
        warned = [r for r in caplog.records if "sent no heartbeat within 2 s" in r.getMessage()]
        assert len(warned) == 1 and "after 100 s" in warned[0].getMessage()
    finally:
        bs.close()
        proxy.close()


def test_unsigned_columns_read_without_signedness_are_named(mariadb, caplog) -> None:
    """No schema history and a binlog that does not say UNSIGNED: the values come out signed,
    and the stream says so once, naming the table and the columns."""
    from binlake.replica.position import Position
    from binlake.replica.stream import BinlogStream, StreamOptions
    from binlake.replica.url import ServerURL

    mariadb.sql("CREATE TABLE IF NOT EXISTS ue_u (id INT PRIMARY KEY, big BIGINT UNSIGNED)",
                "DELETE FROM ue_u")
    (was,), = mariadb.sql("SELECT @@global.binlog_row_metadata", database=None)
    mariadb.sql("SET GLOBAL binlog_row_metadata = NO_LOG", database=None)
    try:
        f, p, _ = mariadb.binlog_end_gtid()
        mariadb.sql("INSERT INTO ue_u VALUES (1, 18446744073709551615)",
                    "INSERT INTO ue_u VALUES (2, 5)")
    finally:
        mariadb.sql(f"SET GLOBAL binlog_row_metadata = {was}", database=None)
    bs = BinlogStream(ServerURL.parse(mariadb.url),
                      StreamOptions(start=Position(f, p), until_end=True,
                                    tables=lambda db, t: t == "ue_u"))
    with caplog.at_level("WARNING", logger="binlake.replica"):
        recs = list(bs.changes())
    assert [r.after["@2"] for r in recs] == [-1, 5]
    warned = [r.getMessage() for r in caplog.records if "UNSIGNED" in r.getMessage()]
    assert len(warned) == 1 and "binlake_test.ue_u" in warned[0] and "@1, @2 are read as signed" in warned[0]
