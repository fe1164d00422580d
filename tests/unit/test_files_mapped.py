"""Closed binlog files are read through mappings: the same events, errors and offsets as
read() gives, whatever the windows cut; open files are never mapped."""
from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from binlake.binlog import files
from binlake._speedups.native import switches
from binlake.errors import DecodeError

FDE_FLAGS = 4 + 17  # the FORMAT_DESCRIPTION's header flags, after the magic


def _is_binlog(p: Path) -> bool:
    return p.is_file() and p.read_bytes()[:4] == b"\xfebin" and p.stat().st_size > 23


def _in_use(p: Path) -> bool:
    return bool(struct.unpack_from("<H", p.read_bytes(), FDE_FLAGS)[0] & 1)


def _read(path: Path, **kw: Any) -> tuple[list[tuple], tuple | None]:
    """Every event as (type, offset, end, rows), and the error that stopped the file."""
    out: list[tuple] = []
    try:
        for ev in files.read_events(path, allow_unknown=True, **kw):
            out.append((type(ev).__name__, ev.offset, ev.end, repr(getattr(ev, "rows", None))))
    except DecodeError as exc:
        return out, (type(exc).__name__, exc.offset, str(exc))
    return out, None


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Maps every closed file (MAP_MIN 0) through 4 KiB windows; lists the starts mapped."""
    starts: list[int] = []
    real = files._read_mapped

    def counted(fd: int, dec: Any, start: int, drain: Any):
        starts.append(start)
        return real(fd, dec, start, drain)

    monkeypatch.setattr(files, "MAP_MIN", 0)
    monkeypatch.setattr(files, "MAP_WINDOW", 4096)
    monkeypatch.setattr(files, "_read_mapped", counted)
    return starts


def _closed_files(corpus_dir: Path) -> list[Path]:
    found = [p for p in sorted(corpus_dir.rglob("*")) if _is_binlog(p) and not _in_use(p)]
    assert len(found) > 50
    return found


def test_every_closed_corpus_file_reads_the_same_mapped(corpus_dir: Path, spy: list[int]) -> None:
    paths = _closed_files(corpus_dir)
    for path in paths:
        # A chunk size of its own keeps read_events on read(): the reference.
        expected = _read(path, chunk_size=files.CHUNK + 1)
        assert _read(path) == expected, path
    assert spy == [0] * len(paths)


@pytest.mark.parametrize("populate", [True, False], ids=["populated", "faulted-in"])
def test_an_event_across_many_windows(corpus_dir: Path, spy: list[int], populate: bool,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-large-event.000001"
    monkeypatch.setattr(files, "MAP_WINDOW", 1 << 20)  # its 16 MiB row spans 17 windows
    if not populate:  # the mapping of systems without MAP_POPULATE
        monkeypatch.setattr(files, "_POPULATE", 0)
    events, error = _read(path)
    assert error is None and spy == [0]
    assert (events, error) == _read(path, chunk_size=files.CHUNK + 1)
    assert max(end - offset for _, offset, end, _ in events) > 16 << 20


def test_a_start_inside_a_page(corpus_dir: Path, spy: list[int]) -> None:
    path = max(_closed_files(corpus_dir), key=lambda p: p.stat().st_size if p.stat().st_size < 8 << 20 else 0)
    events, _ = _read(path, chunk_size=files.CHUNK + 1)
    starts = [offset for _, offset, _, _ in events if offset % 4096][len(events) // 3::97][:3]
    assert starts
    for start in starts:
        expected = _read(path, chunk_size=files.CHUNK + 1, start=start)
        assert expected[0] and expected[0][0][1] == start
        assert _read(path, start=start) == expected
    assert spy == starts


def test_a_cut_file_fails_at_the_same_offset(corpus_dir: Path, spy: list[int], tmp_path: Path) -> None:
    src = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-large-event.000001"
    cut = tmp_path / "cut.000001"
    with src.open("rb") as fh:
        cut.write_bytes(fh.read(20 << 20))  # inside the 16 MiB event
    events, error = _read(cut)
    assert spy == [0]
    assert error is not None and error[0] == "TruncatedError"
    assert (events, error) == _read(cut, chunk_size=files.CHUNK + 1)


def test_a_file_the_server_still_writes_is_not_mapped(corpus_dir: Path, spy: list[int],
                                                       tmp_path: Path) -> None:
    src = next(p for p in _closed_files(corpus_dir) if p.stat().st_size > 100_000)
    open_copy = tmp_path / src.name
    shutil.copyfile(src, open_copy)
    data = bytearray(open_copy.read_bytes())
    struct.pack_into("<H", data, FDE_FLAGS, struct.unpack_from("<H", data, FDE_FLAGS)[0] | 1)
    open_copy.write_bytes(bytes(data))  # the CRC is the server's, made before the flag is set
    events, error = _read(open_copy)
    assert spy == [] and error is None and len(events) > 5
    assert [e[:2] for e in events] == [e[:2] for e in _read(src)[0]]
    assert spy == [0]  # the closed original was mapped


def test_small_files_are_read(corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(files, "_read_mapped", lambda fd, dec, start, drain: calls.append(start) or iter(()))
    small = next(p for p in _closed_files(corpus_dir) if p.stat().st_size < files.MAP_MIN)
    assert _read(small)[0] and calls == []


def _mappings_of(path: Path) -> int:
    return sum(str(path) in line for line in Path("/proc/self/maps").read_text().splitlines())


def test_windows_are_unmapped_as_the_reading_goes(corpus_dir: Path, spy: list[int],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-large-event.000001"
    monkeypatch.setattr(files, "MAP_WINDOW", 1 << 20)
    monkeypatch.setattr(switches, "crc_ahead", False)  # (with it, two: test_crc_ahead.py)
    seen = []
    events = files.read_events(path, allow_unknown=True)
    for _ in events:
        seen.append(_mappings_of(path))
    assert spy == [0] and len(seen) > 10
    assert max(seen) == 1  # the window the decoder reads: a cut event is copied out
    del events
    assert _mappings_of(path) == 0
