"""The FORMAT_DESCRIPTION binlake's primary sends, against the file's: as MySQL and MariaDB
send it (sql_repl.cc send_format_descriptor_event). Served: a real MariaDB 10.11 binlog
written at server start-up, so its FDE has a `created` time."""
from __future__ import annotations

import zlib
from pathlib import Path

from binlake.binlog.constants import EventType as E
from binlake.protocol.server import BinlogDump
from test_serve_primary import Wire, events_of, primary_for

STARTUP = "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"
CREATED = slice(19 + 52, 19 + 56)


def _fde_of_dump(corpus: Path, pos: int) -> bytes:
    w = Wire(primary_for(corpus, STARTUP, flavor="mariadb"))
    w.query("SET @master_binlog_checksum = 'CRC32'")
    name = Path(STARTUP).name
    evs = events_of(w.dump(BinlogDump(pos, 5, name, 1)))
    assert evs[1][4] == E.FORMAT_DESCRIPTION
    return evs[1]


def test_fde_from_the_start_is_the_files(corpus_dir: Path) -> None:
    raw = (corpus_dir / STARTUP).read_bytes()
    size = int.from_bytes(raw[4 + 9:4 + 13], "little")
    fde = _fde_of_dump(corpus_dir, 4)
    assert fde == raw[4:4 + size]
    assert int.from_bytes(fde[CREATED], "little") != 0


def test_fde_mid_file_has_log_pos_and_created_zero_and_a_valid_crc(corpus_dir: Path) -> None:
    """log_pos 0: the replica must not take it as a position; created 0: it must not drop
    its temporary tables, as it would for a primary that just started."""
    raw = (corpus_dir / STARTUP).read_bytes()
    size = int.from_bytes(raw[4 + 9:4 + 13], "little")
    first = raw[4:4 + size]
    fde = _fde_of_dump(corpus_dir, 4 + size)
    assert int.from_bytes(fde[13:17], "little") == 0 and int.from_bytes(fde[CREATED], "little") == 0
    assert fde[:13] == first[:13] and fde[17:CREATED.start] == first[17:CREATED.start]
    assert fde[CREATED.stop:-4] == first[CREATED.stop:-4]
    assert fde[-4:] == (zlib.crc32(fde[:-4]) & 0xFFFFFFFF).to_bytes(4, "little")
