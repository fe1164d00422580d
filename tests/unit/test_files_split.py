"""Files cut in parts where readers cannot compare notes (Spark tasks): split_points finds
GTID events in place and proves them by their CRC32; the parts read by read_part join into
exactly the file's events, or the reader says they do not."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from binlake.errors import DecodeError
from binlake.binlog.files import GROUP_STARTS, read_events, read_part, split_points


def _events(path: Path) -> list[tuple[int, int, int | None]]:
    return [(ev.offset, ev.type_code, ev.inner_index)
            for ev in read_events(path, allow_unknown=True)]


def _binlogs(corpus_dir: Path) -> list[Path]:
    return [p for p in sorted(corpus_dir.rglob("*"))
            if p.is_file() and p.stat().st_size > 1024 and p.read_bytes()[:4] == b"\xfebin"]


def _decodes(path: Path) -> bool:
    try:
        _events(path)
    except DecodeError:
        return False
    return True


@pytest.mark.parametrize("part_bytes, files_cut", [(700, 30), (8192, 10)])
def test_parts_join_into_the_whole_file(corpus_dir: Path, part_bytes: int, files_cut: int) -> None:
    cut = 0
    for path in _binlogs(corpus_dir):
        if path.stat().st_size > 4 << 20 or not _decodes(path):
            continue
        points = split_points(path, part_bytes)
        if not points:
            continue
        whole = _events(path)
        starts = {offset for offset, code, inner in whole if code in GROUP_STARTS and inner is None}
        assert set(points) <= starts, path
        assert points == sorted(set(points)) and points[0] >= part_bytes
        bounds = [None, *points, None]
        parts = [[(ev.offset, ev.type_code, ev.inner_index)
                  for ev in read_part(path, bounds[i], bounds[i + 1], allow_unknown=True)]
                 for i in range(len(bounds) - 1)]
        assert all(parts), path
        assert [e for part in parts for e in part] == whole, path
        cut += 1
    assert cut >= files_cut  # MariaDB's and MySQL's files with GTIDs and checksums


def test_files_that_are_not_cut(corpus_dir: Path) -> None:
    gen = corpus_dir / "generated-mariadb-10.11"
    assert split_points(gen / "mariadb-10.11.19-row-full-metafull-nochecksum.000001", 4096) == []
    assert split_points(gen / "mariadb-10.11.19-encrypted-row-full-crc32.000001", 4096) == []
    small = gen / "mariadb-10.11.19-row-compressed-crc32.000001"
    assert split_points(small, small.stat().st_size // 2 + 1) == []
    assert split_points(small, 0) == []
    assert split_points(small, small.stat().st_size // 4)


def test_a_point_whose_checksum_fails_is_passed_over(corpus_dir: Path, tmp_path: Path) -> None:
    src = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"
    points = split_points(src, 8192)
    assert len(points) >= 2
    bad = tmp_path / src.name
    shutil.copyfile(src, bad)
    data = bytearray(bad.read_bytes())
    size = int.from_bytes(data[points[0] + 9:points[0] + 13], "little")
    data[points[0] + size - 1] ^= 0xFF  # the first point's CRC32
    bad.write_bytes(bytes(data))
    moved = split_points(bad, 8192)
    starts = sorted(o for o, code, inner in _events(src) if code in GROUP_STARTS and inner is None)
    assert moved[0] == min(o for o in starts if o > points[0])  # the next group's start
    assert points[0] not in moved and set(moved) <= set(starts)


def test_a_part_that_does_not_join_fails_loud(corpus_dir: Path) -> None:
    path = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"
    points = split_points(path, 8192)
    with pytest.raises(DecodeError, match="do not join") as err:
        list(read_part(path, None, points[0] + 1))
    assert err.value.offset == points[0] + 1 and err.value.file == str(path)
    assert "splitBytes=0" in str(err.value)
    with pytest.raises(DecodeError, match="do not join"):  # the file ends before it
        list(read_part(path, points[-1], path.stat().st_size + 100))
