"""Every binlog of the shared corpus decodes completely, checksums verified; the broken ones
fail with a named error at the right offset. Event counts are checked against INDEX.md, so
no event can be skipped silently."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from binlake.binlog.constants import EventType
from binlake.binlog.encryption import load_key_file
from binlake.errors import ChecksumError, DecodeError, TruncatedError, UnknownEventError
from binlake.binlog.files import read_events

from corpus_index import corpus_files, index_event_counts


# file -> (error class, offset of the failing event, words the message must contain)
BROKEN = {
    "rust_mysql_common/binlog_truncated_event.000001": (TruncatedError, 4, "ends inside"),
    "rust_mysql_common/binlog_truncated_prev_gtid_event.000001": (TruncatedError, 120, "ends inside"),
    "rust_mysql_common/corrupt-relay-bin.000624": (DecodeError, 91204, "QUERY"),
    "rust_mysql_common/ver_5_1-wl2325_r.001": (DecodeError, 428, "XID"),
    "rust_mysql_common/ver_5_1-wl2325_s.001": (DecodeError, 411, "without a preceding TABLE_MAP"),
}


def _files(corpus_dir: Path) -> list[Path]:
    return corpus_files(corpus_dir)


def _keys(corpus_dir: Path) -> dict[int, bytes]:
    return load_key_file((corpus_dir / "generated-mariadb-10.11" / "binlog-key.txt").read_text())


def test_corpus_is_there(corpus_dir: Path) -> None:
    assert len(_files(corpus_dir)) >= 120


def _decode_counts(path: Path, keys: dict[int, bytes]) -> Counter:
    counts: Counter = Counter()
    for ev in read_events(path, keys=keys):
        key = str(ev.type_code) + ("(in payload)" if ev.inner_index is not None else "")
        counts[key] += 1
    return counts


def test_every_file_decodes_or_fails_loudly(corpus_dir: Path) -> None:
    keys = _keys(corpus_dir)
    index = index_event_counts(corpus_dir)
    checked = 0
    for path in _files(corpus_dir):
        rel = path.relative_to(corpus_dir).as_posix()
        if rel in BROKEN:
            cls, offset, words = BROKEN[rel]
            with pytest.raises(cls) as info:
                _decode_counts(path, keys)
            assert info.value.offset == offset, rel
            assert words in str(info.value), (rel, str(info.value))
            assert path.name in str(info.value)
            continue
        counts = _decode_counts(path, keys)
        expected = index[rel]
        if "encrypted" in expected:
            # INDEX.md could not read past START_ENCRYPTION; binlake decrypts every event.
            assert sum(counts.values()) == sum(expected.values()), rel
            assert counts[str(EventType.TABLE_MAP)] > 0
        else:
            assert dict(counts) == expected, rel
        checked += 1
    assert checked >= 115


def test_checksum_corruption_is_named(tmp_path: Path, corpus_dir: Path) -> None:
    src = corpus_dir / "mysql-cdc-rs/5.7_30_write_rows_v2_log.bin"
    data = bytearray(src.read_bytes())
    events = list(read_events(src))
    rows = next(e for e in events if e.type_code == EventType.WRITE_ROWS_V2)
    data[rows.offset + 25] ^= 0x01
    bad = tmp_path / "corrupt.bin"
    bad.write_bytes(bytes(data))
    with pytest.raises(ChecksumError) as info:
        list(read_events(bad))
    assert info.value.offset == rows.offset
    assert "WRITE_ROWS_V2" in str(info.value) and "corrupt.bin" in str(info.value)


def test_truncated_copy_names_offset(tmp_path: Path, corpus_dir: Path) -> None:
    src = corpus_dir / "mysql-cdc-rs/5.7_30_write_rows_v2_log.bin"
    events = list(read_events(src))
    cut = events[-2].offset + 7
    short = tmp_path / "short.bin"
    short.write_bytes(src.read_bytes()[:cut])
    with pytest.raises(TruncatedError) as info:
        list(read_events(short))
    assert info.value.offset == events[-2].offset


def test_unknown_event_type_is_an_error_unless_allowed(tmp_path: Path, corpus_dir: Path) -> None:
    import zlib

    src = corpus_dir / "mysql-cdc-rs/5.7_02_query_log.bin"
    data = bytearray(src.read_bytes())
    events = list(read_events(src))
    q = next(e for e in events if e.type_code == EventType.QUERY)
    data[q.offset + 4] = 99  # a type code no server writes
    end = q.offset + q.header.event_size
    data[end - 4:end] = zlib.crc32(bytes(data[q.offset:end - 4])).to_bytes(4, "little")
    f = tmp_path / "unknown.bin"
    f.write_bytes(bytes(data))
    with pytest.raises(UnknownEventError) as info:
        list(read_events(f))
    assert info.value.offset == q.offset
    passed = [e for e in read_events(f, allow_unknown=True) if e.type_code == 99]
    assert len(passed) == 1 and passed[0].body  # handed on whole, as asked
