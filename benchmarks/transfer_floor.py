#!/usr/bin/env python3
"""The floor of a live stream: a replica that receives the binlog and drops it unread.

Opt-in contestant (`binlake bench --tools transfer-floor`). It says the replica's dialogue
(binlake's: SETs, COM_REGISTER_SLAVE, COM_BINLOG_DUMP from FIRST:4, non-blocking), then
reads every packet with binlake's receive path. Of each event it reads the type and the end
position only (to tell where the dump ended). No checksum, no event is decoded.

Why: on a machine where the primary runs next to the replica, the primary's dump thread
reading and sending the binlog costs about as much CPU as binlake's decoding of it, on
one thread. How long this script takes, and the primary's CPU meanwhile (the harness
reads it), is the least any live stream of that binlog can take here, whatever the
replica does with the bytes. Prints one JSON line: {"bytes": B, "packets": P, "end": "FILE:POS", "seconds": S}
(B: payload bytes; the end: where the last event ended).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

T0 = time.perf_counter()
ROTATE_EVENT = 4


def receive_all(conn, crc: bool) -> tuple[int, int, str]:
    """(payload bytes, packets, where the dump ended as FILE:POS) of the dump up to its EOF
    packet, read with binlake's receive path (one 1 MiB buffer filled by recv_into,
    payloads as views). Of an event only its type and end position are read, and the file
    name of a ROTATE: enough to tell that the whole binlog came."""
    total = packets = 0
    file, pos = "", 0
    read = conn.read_packet
    while True:
        pkt = read()
        packets += 1
        size = len(pkt)
        total += size
        marker = pkt[0]
        if marker == 0 and size >= 20:  # an event after the OK byte: 19-byte header
            if pkt[5] == ROTATE_EVENT:
                file = bytes(pkt[28:size - 4 if crc else size]).decode()
                pos = int.from_bytes(pkt[20:28], "little")
            elif end := int.from_bytes(pkt[14:18], "little"):  # 0: made up by the primary
                pos = end
            continue
        if marker == 0xFE and size < 9:
            return total, packets, f"{file}:{pos}"
        if marker == 0xFF:
            raise RuntimeError(f"the primary answered the dump with an error: {bytes(pkt[:200])!r}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="mysql://user@host:port (password: BINLAKE_PASSWORD)")
    ap.add_argument("first_file", help="the binlog file to start at (position 4)")
    ap.add_argument("--server-id", type=int, default=9_999_017)
    args = ap.parse_args(argv)

    from binlake.replica import dialogue as dlg
    from binlake.replica.connection import connect
    from binlake.replica.url import ServerURL

    url = ServerURL.parse(args.url)
    conn = connect(url.host, url.port, url.user, url.password)
    try:
        checksum = conn.query("SELECT @@global.binlog_checksum").rows[0][0] or "NONE"
        for stmt in dlg.setup_statements(conn.flavor, conn.server_version, checksum=checksum,
                                         heartbeat_period=30.0,
                                         replica_uuid="b1a7e000-0000-4000-8000-000000000017",
                                         semi_sync=False):
            conn.execute(stmt)
        conn.command(dlg.COM_REGISTER_SLAVE,
                     dlg.register_slave_payload(args.server_id, "transfer-floor", port=0))
        conn.send_command(dlg.COM_BINLOG_DUMP,
                          dlg.binlog_dump_payload(args.first_file, 4, args.server_id, True))
        got, packets, end = receive_all(conn, checksum.upper() == "CRC32")
    finally:
        conn.close()
    sys.stdout.write(json.dumps({"bytes": got, "packets": packets, "end": end,
                                 "seconds": round(time.perf_counter() - T0, 3)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
