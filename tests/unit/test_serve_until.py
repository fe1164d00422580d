"""START SLAVE UNTIL master_gtid_pos on binlake's primary, without sockets: what a MariaDB
primary sends for @slave_until_gtid (sql_repl.cc): groups of domains already at their UNTIL
GTID are skipped, the dump ends after the group that reaches the last one with a GTID_LIST
flagged UNTIL_REACHED, then EOF. Served: a real MariaDB 10.11 binlog with three domains,
XA and a GTID_LIST of 0-1-171 (the real replica's side is in test_serve_peers.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from binlake.binlog.constants import EventType as E
from binlake.protocol.server import BinlogDump
from binlake.serve.primary import GTID_LIST_UNTIL_REACHED
from test_serve_primary import MARIA, Wire, events_of, primary_for


def _gtid(ev: bytes) -> str:
    seq = int.from_bytes(ev[19:27], "little")
    domain = int.from_bytes(ev[27:31], "little")
    return f"{domain}-{int.from_bytes(ev[5:9], 'little')}-{seq}"


def _until_dump(corpus: Path, until: str, start: str = "0-1-171") -> tuple[list[bytes], list[bytes]]:
    w = Wire(primary_for(corpus, MARIA, flavor="mariadb"))
    w.query("SET @master_binlog_checksum = @@global.binlog_checksum")
    w.query(f"SET @slave_connect_state = '{start}'")
    w.query(f"SET @slave_until_gtid = '{until}'")
    packets = w.dump(BinlogDump(4, 5, "", 0))  # blocking: only the UNTIL condition ends it
    return packets, events_of(packets)


def _flagged_list(ev: bytes) -> tuple[int, list[str], int]:
    """(flags, its GTIDs, log_pos) of a GTID_LIST event (CRC32 at its end)."""
    head = int.from_bytes(ev[19:23], "little")
    count = head & 0x0FFFFFFF
    out = []
    for i in range(count):
        at = 23 + 16 * i
        out.append(f"{int.from_bytes(ev[at:at + 4], 'little')}-{int.from_bytes(ev[at + 4:at + 8], 'little')}-"
                   f"{int.from_bytes(ev[at + 8:at + 16], 'little')}")
    return head & ~0x0FFFFFFF, out, int.from_bytes(ev[13:17], "little")


@pytest.mark.parametrize("until, sent, last_type, stop_at, state", [
    # a transaction: stop after its XID; other domains' groups are not sent
    ("1-1-1", ["1-1-1"], E.XID, 656, ["0-1-171", "1-1-1"]),
    # XA: the standalone XA COMMIT ends at its query; domains 1 and 2 reached nothing: skipped
    ("0-1-173", ["0-1-172", "0-1-173"], E.QUERY, 1880, ["0-1-173", "1-1-1", "2-1-1000", "2-7-1001"]),
    # two domains: the dump ends when the last of them is reached
    ("1-1-1,2-1-1000", ["1-1-1", "2-1-1000"], E.XID, 1013, ["0-1-171", "1-1-1", "2-1-1000"]),
    # not in the binlog (2-7-1000): the group past it is skipped, and the dump ends after it
    ("2-7-1000", ["2-1-1000"], E.XID, 1325, ["0-1-171", "1-1-1", "2-1-1000", "2-7-1001"]),
    # reached before the file (its GTID_LIST): the first event outside a group, then the end
    ("0-1-171", [], E.MARIADB_GTID_LIST, 299, ["0-1-171"]),
], ids=["transaction", "xa-standalone", "two-domains", "missing-gtid", "already-reached"])
def test_dump_stops_where_a_mariadb_primary_stops(corpus_dir: Path, until: str, sent: list[str],
                                                  last_type: int, stop_at: int, state: list[str]) -> None:
    packets, evs = _until_dump(corpus_dir, until)
    assert packets[-1][0] == 0xFE  # EOF: the dump is over, the connection back to commands
    assert [_gtid(e) for e in evs if e[4] == E.MARIADB_GTID] == sent
    assert evs[-1][4] == E.MARIADB_GTID_LIST and evs[-2][4] == last_type
    flags, gtids, log_pos = _flagged_list(evs[-1])
    assert flags == GTID_LIST_UNTIL_REACHED and log_pos == stop_at
    assert sorted(gtids) == state


def test_until_without_a_gtid_start_is_ignored_as_by_mariadb(corpus_dir: Path) -> None:
    """@slave_until_gtid counts only with @slave_connect_state (a GTID dump)."""
    w = Wire(primary_for(corpus_dir, MARIA, flavor="mariadb"))
    w.query("SET @master_binlog_checksum = 'CRC32'")
    w.query("SET @slave_until_gtid = '1-1-1'")
    packets = w.dump(BinlogDump(4, 5, "", 1))
    evs = events_of(packets)
    assert packets[-1][0] == 0xFE
    assert [_gtid(e) for e in evs if e[4] == E.MARIADB_GTID][-1] == "0-1-175"
    assert not any(e[4] == E.MARIADB_GTID_LIST and _flagged_list(e)[0] for e in evs)


def test_malformed_until_is_refused(corpus_dir: Path) -> None:
    packets, _ = _until_dump(corpus_dir, "1-x-1")
    assert packets[-1][0] == 0xFF and b"UNTIL position" in packets[-1]


def test_checksum_aware_client_asking_none_gets_crc32_events(corpus_dir: Path) -> None:
    """mariadb-binlog sets @master_binlog_checksum='NONE': served, first ROTATE without CRC."""
    w = Wire(primary_for(corpus_dir, MARIA, flavor="mariadb"))
    w.query("SET @master_binlog_checksum='NONE'")
    packets = w.dump(BinlogDump(4, 0, "", 1))
    evs = events_of(packets)
    assert packets[-1][0] == 0xFE and evs[0][4] == E.ROTATE
    name = b"mariadb-10.11.19-gtid-domains-xa.000001"
    assert int.from_bytes(evs[0][9:13], "little") == 19 + 8 + len(name)  # no CRC32
    assert evs[1][4] == E.FORMAT_DESCRIPTION and len(evs) > 10
