"""A primary that sends what a correct one never does: a GTID that leaves a hole, positions that
go back inside a file. binlake's own primary serves a real MySQL 8.0 binlog with one field
changed, as Dolt's and other primaries' faults would present it, and `binlake stream` must stop
with one line naming the fault, before any row of the transaction.

(MariaDB cannot be made to show a hole: its GTID sequence numbers may jump on purpose,
SET gtid_seq_no or another server in the domain, so the GtidGap check is for MySQL GTIDs.)
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

from test_serve_support import MYSQL_SETS, UUID80, plain_url, run_cli, serving

CHAIN = MYSQL_SETS["8.0.45-gtid-chain"]
GTID3 = (642, 919)
"""Where transaction UUID80:3 lies in the chain's first file (GTID event to XID end)."""


def _first_file(corpus_dir: Path, tmp_path: Path, patch) -> Path:
    data = bytearray((corpus_dir / CHAIN[0][1]).read_bytes())
    out = tmp_path / CHAIN[0][0]
    out.write_bytes(patch(data))
    return out


def _with_crc(event: bytearray) -> bytearray:
    event[-4:] = zlib.crc32(bytes(event[:-4])).to_bytes(4, "little")
    return event


def _stream(srv, *args: str):
    return run_cli("stream", plain_url(srv), "--until-end",
                   "--heartbeat", "0.5", *args, timeout=60)


def test_a_gtid_that_leaves_a_hole_stops_the_stream(corpus_dir: Path, tmp_path: Path) -> None:
    def renumber(data: bytearray) -> bytearray:
        at, end = GTID3[0], GTID3[0] + 79  # the GTID event of transaction 3 says 5
        ev = data[at:end]
        assert int.from_bytes(ev[36:44], "little") == 3
        ev[36:44] = (5).to_bytes(8, "little")
        data[at:end] = _with_crc(ev)
        return data

    path = _first_file(corpus_dir, tmp_path, renumber)
    with serving([path], version="8.0.45-binlake") as srv:
        r = _stream(srv, "--gtid", f"{UUID80}:1-2")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stdout == ""  # none of its rows
    line = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(line) == 1, r.stderr
    assert f"{UUID80}:3-4" in line[0] and f"{UUID80}:5" in line[0], line[0]


def test_positions_that_go_back_in_a_file_stop_the_stream(corpus_dir: Path, tmp_path: Path) -> None:
    def repeat(data: bytearray) -> bytearray:
        a, b = GTID3  # transaction 3 again after itself, its log_pos fields unchanged
        return data[:b] + data[a:b] + data[b:]

    path = _first_file(corpus_dir, tmp_path, repeat)
    with serving([path], version="8.0.45-binlake") as srv:
        r = _stream(srv, "--start", f"{path.name}:4")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["gtid"] for x in recs if x["op"] == "insert"] == [f"{UUID80}:2", f"{UUID80}:3"]
    assert f"sent transaction {UUID80}:3 at {path.name}:642, before {path.name}:919" in r.stderr
    assert "went back" in r.stderr
