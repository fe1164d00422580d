"""The C CRC32 against zlib's, and the CrcAhead thread: it vouches for exactly the events
whose checksums match, across any windows, and a mapped file read with it gives the same
events and the same located errors as without it."""
from __future__ import annotations

import mmap
import os
import random
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given, settings, strategies as st

from binlake.binlog import files
from binlake._speedups.native import switches
from test_files_mapped import _read  # (every event as a tuple, and the error that stopped it)

_speedups = switches.c  # (None: not built, or BINLAKE_PURE_PYTHON=1)

pytestmark = pytest.mark.skipif(_speedups is None or not hasattr(_speedups, "CrcAhead"),
                                reason="needs the C extension (pure-Python runs check every CRC)")

MARIADB = "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"
ENCRYPTED = "generated-mariadb-10.11/mariadb-10.11.19-encrypted-row-full-crc32.000001"


def _fold_widths() -> list[int]:
    """The CRC32 fold widths this CPU runs: 128 bits (PCLMULQDQ, or the table without it),
    256 (VPCLMULQDQ with AVX2) and 512 (with AVX-512) where it has them."""
    if _speedups is None or not hasattr(_speedups, "crc32_set_simd"):
        return [128]
    have = []
    for width in (128, 256, 512):
        try:
            before = _speedups.crc32_set_simd(width)
        except ValueError:
            continue
        _speedups.crc32_set_simd(before)
        have.append(width)
    return have


FOLDS = pytest.mark.parametrize("wide", _fold_widths(), ids=lambda w: f"{w}-bit")


@contextmanager
def crc_folds(wide: int) -> Iterator[None]:
    """The folds of at most `wide` bits (crc32_set_simd), for the test's duration."""
    before = _speedups.crc32_set_simd(wide)
    try:
        yield
    finally:
        _speedups.crc32_set_simd(before)


def test_a_fold_width_the_cpu_lacks_is_refused() -> None:
    widest = max(_fold_widths())
    with crc_folds(True):  # True: the widest the CPU has
        assert _speedups.crc32_set_simd(widest) == widest
    with pytest.raises(ValueError, match="bit folds"):
        _speedups.crc32_set_simd(1024)
    with pytest.raises(ValueError, match="bit folds"):
        _speedups.crc32_set_simd(widest * 2 if widest < 512 else 1024)


@FOLDS
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=1200), st.integers(0, 2**32 - 1), st.integers(0, 15))
def test_crc32_is_zlibs(wide: int, data: bytes, value: int, skip: int) -> None:
    view = memoryview(data)[skip:]  # (unaligned starts: a view, not a copy)
    with crc_folds(wide):
        assert _speedups.crc32(view) == zlib.crc32(view)
        assert _speedups.crc32(view, value) == zlib.crc32(view, value)


@FOLDS
def test_crc32_of_long_buffers(wide: int) -> None:
    rng = random.Random(7)
    lengths = (64, 127, 128, 129, 255, 256, 257, 271, 511, 512, 513, 767, 768, 4096 + 13,
               1 << 20, (1 << 20) + 77)
    with crc_folds(wide):
        for n in lengths:
            data = rng.randbytes(n)
            assert _speedups.crc32(data) == zlib.crc32(data), n
            half = n // 3  # carried over from one piece to the next, as the thread does
            assert _speedups.crc32(data[half:], _speedups.crc32(data[:half])) == zlib.crc32(data), n


@FOLDS
def test_crc32_every_length_to_1100(wide: int) -> None:
    """Each length through each fold's boundaries (64, 128, 256 bytes and the 16-byte
    tail), from an odd address and with a carried-in value."""
    rng = random.Random(11)
    data = memoryview(rng.randbytes(1101))
    with crc_folds(wide):
        for n in range(1100):
            chunk, value = data[1:n + 1], n * 2654435761 % 2**32  # (a view: an odd address)
            assert _speedups.crc32(chunk, value) == zlib.crc32(chunk, value), n


def _events(path: Path) -> list[tuple[int, int]]:
    """(offset, end) of every event, read the plain way."""
    return [(ev.offset, ev.end) for ev in files.read_events(path, chunk_size=files.CHUNK + 1,
                                                            allow_unknown=True)
            if ev.inner_index is None]


def _walk(data: bytes, cuts: list[int], start: int = 4) -> tuple[int, int]:
    """The file's bytes from `start` handed to a CrcAhead in windows cut at `cuts`."""
    ahead = _speedups.CrcAhead(start)
    verified = start
    bounds = [start, *sorted(c for c in set(cuts) if start < c < len(data)), len(data)]
    for a, b in zip(bounds, bounds[1:]):
        ahead.submit(memoryview(data)[a:b], a)
        verified = ahead.wait()
    failed = ahead.failed
    ahead.close()
    return verified, failed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1 << 16), max_size=40))
def test_the_walk_vouches_for_the_whole_file_whatever_the_windows(corpus_dir: Path,
                                                                  cuts: list[int]) -> None:
    data = (corpus_dir / MARIADB).read_bytes()
    assert _walk(data, cuts) == (len(data), 0)


def test_the_walk_stops_before_a_bad_checksum(corpus_dir: Path) -> None:
    path = corpus_dir / MARIADB
    events = _events(path)
    rng = random.Random(3)
    for offset, end in rng.sample(events[1:], 12):
        data = bytearray(path.read_bytes())
        data[rng.randrange(offset, end)] ^= 0x20  # anywhere in the event: header, body, CRC
        cuts = [rng.randrange(4, len(data)) for _ in range(rng.randrange(0, 6))]
        verified, failed = _walk(bytes(data), cuts)
        # (a length made longer than the file leaves the walk waiting for bytes, not failed)
        assert verified == offset, (offset, end)
        assert failed == 1 or not 9 <= verified - offset < 13


def test_the_walk_from_an_event_inside_the_file(corpus_dir: Path) -> None:
    data = (corpus_dir / MARIADB).read_bytes()
    offset = _events(corpus_dir / MARIADB)[10][0]
    assert _walk(data, [offset + 100, offset + 5000], start=offset) == (len(data), 0)
    # bytes that are not the next ones: vouch for nothing more
    ahead = _speedups.CrcAhead(offset)
    ahead.submit(memoryview(data)[offset + 1:], offset + 1)
    assert ahead.wait() == offset and ahead.failed == 1
    ahead.close()


def test_the_walk_stops_at_start_encryption(corpus_dir: Path) -> None:
    path = corpus_dir / ENCRYPTED
    data = path.read_bytes()
    verified, failed = _walk(data, [])
    assert failed == 1
    starts = [offset for offset, _ in _events_raw(data)]
    assert verified in starts and verified < len(data)
    assert data[verified + 4] == 164  # MariaDB's START_ENCRYPTION, not checked in the clear


def _events_raw(data: bytes) -> list[tuple[int, int]]:
    """Event (offset, end) by their lengths, from the file's start, up to START_ENCRYPTION."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        out.append((pos, pos + size))
        if data[pos + 4] == 164:
            break
        pos += size
    return out


def test_closing_with_windows_not_waited_for() -> None:
    data = bytes(1 << 20)
    for _ in range(20):  # the thread stopped and joined whatever it was doing
        ahead = _speedups.CrcAhead(0)
        ahead.submit(data, 0)
        ahead.submit(data, len(data))
        ahead.close()
        with pytest.raises(RuntimeError):
            ahead.submit(data, 0)
    dropped = _speedups.CrcAhead(0)
    dropped.submit(data, 0)
    del dropped  # (deallocation stops it too)


# ---------------------------------------------------------------- read_events with it


@pytest.fixture(params=[True, False], ids=["ahead", "in-thread"])
def mapped(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every closed file mapped through 4 KiB windows, with a CrcAhead thread or without."""
    monkeypatch.setattr(files, "MAP_MIN", 0)
    monkeypatch.setattr(files, "MAP_WINDOW", 4096)
    monkeypatch.setattr(files, "_cpus", lambda: 2)
    monkeypatch.setattr(switches, "crc_ahead", request.param)
    return request.param


def test_a_bad_checksum_fails_at_its_event(corpus_dir: Path, mapped: bool, tmp_path: Path) -> None:
    src = corpus_dir / MARIADB
    events = _events(src)
    rng = random.Random(5)
    for offset, end in rng.sample(events[1:], 8):
        data = bytearray(src.read_bytes())
        data[rng.randrange(offset + 19, end)] ^= 0x01  # the body or the CRC: a size stays
        bad = tmp_path / src.name
        bad.write_bytes(bytes(data))
        got, error = _read(bad)
        assert error is not None and error[0] == "ChecksumError" and error[1] == offset, error
        assert (got, error) == _read(bad, chunk_size=files.CHUNK + 1)  # read() agrees


def test_the_events_are_the_same_with_it(corpus_dir: Path, mapped: bool) -> None:
    for name in (MARIADB, ENCRYPTED):
        path = corpus_dir / name
        keys = None
        if name == ENCRYPTED:
            from binlake.binlog.encryption import load_key_file

            keys = load_key_file((path.parent / "binlog-key.txt").read_text())
        expected = _read(path, chunk_size=files.CHUNK + 1, keys=keys)
        assert expected[1] is None and len(expected[0]) > 10
        assert _read(path, keys=keys) == expected


def test_the_decoder_vouches_for_nothing_after_the_file(corpus_dir: Path, mapped: bool) -> None:
    from binlake.binlog.decoder import BinlogDecoder

    dec = BinlogDecoder()
    seen = []
    path = corpus_dir / MARIADB
    for _ in files.read_events(path, decoder=dec):
        seen.append(dec.verified_until)
    assert max(seen) == (path.stat().st_size if mapped else -1)  # the whole file, or nothing
    assert dec.verified_until == -1  # the next file fed to it is checked


def test_two_windows_mapped_at_most(corpus_dir: Path, mapped: bool,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-large-event.000001"
    monkeypatch.setattr(files, "MAP_WINDOW", 1 << 20)
    most = 0
    events = files.read_events(path, allow_unknown=True)
    for _ in events:
        most = max(most, sum(str(path) in line
                             for line in Path("/proc/self/maps").read_text().splitlines()))
    # the decoder's window, the one checked ahead, and the one before (its pages already let
    # go of by the thread: test_a_dropped_window_...) until the wait for the one ahead
    assert most == (3 if mapped else 1)
    del events


def test_a_single_cpu_checks_in_the_decoders_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from binlake.binlog.decoder import BinlogDecoder

    monkeypatch.setattr(files, "_cpus", lambda: 1)
    assert files._crc_ahead(BinlogDecoder(), 4) is None
    monkeypatch.setattr(files, "_cpus", lambda: 2)
    assert files._crc_ahead(BinlogDecoder(verify_checksums=False), 4) is None
    ahead = files._crc_ahead(BinlogDecoder(), 4)
    assert ahead is not None
    ahead.close()


def test_a_pool_with_a_process_per_cpu_checks_in_each_decoders_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from binlake.binlog.decoder import BinlogDecoder

    monkeypatch.setattr(files, "_cpus", lambda: 2)
    monkeypatch.setattr(switches, "crc_ahead", True)
    files.share_cpus(1)  # a CPU left for the thread
    ahead = files._crc_ahead(BinlogDecoder(), 4)
    assert ahead is not None
    ahead.close()
    files.share_cpus(2)  # every CPU runs a decoder
    assert files._crc_ahead(BinlogDecoder(), 4) is None


def test_parallel_workers_still_find_a_bad_checksum(corpus_dir: Path, tmp_path: Path) -> None:
    """`decode --jobs` workers (checksums in their decoding threads) fail at the event."""
    from click.testing import CliRunner

    from binlake.cli.program import main

    src = corpus_dir / "generated-mariadb-10.11/mariadb-10.11.19-row-full-metafull-crc32.000001"
    data = bytearray(src.read_bytes())
    data[len(data) // 2] ^= 0x40
    bad = tmp_path / "bad.000001"
    bad.write_bytes(bytes(data))
    res = CliRunner().invoke(main, ["decode", "--jobs", "2", "--output", "null", str(src), str(bad)])
    assert res.exit_code != 0
    assert "bad.000001 offset" in res.output and "CRC32 mismatch" in res.output


def test_a_mapped_window_is_walked_in_place(tmp_path: Path) -> None:
    """The thread reads the mapping itself (no copy): a window of a real mapping works."""
    data = bytearray(b"\xfebin")
    for i in range(200):  # events of 19 + 40 + 4 bytes with right CRCs
        body = bytes([i]) * 40
        head = bytearray(19)
        head[4] = 2
        head[9:13] = (19 + 40 + 4).to_bytes(4, "little")
        ev = bytes(head) + body
        data += ev + zlib.crc32(ev).to_bytes(4, "little")
    path = tmp_path / "events.bin"
    path.write_bytes(bytes(data))
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        ahead = _speedups.CrcAhead(4)
        view = memoryview(m)
        ahead.submit(view[4:], 4)
        assert ahead.wait() == len(data) and ahead.failed == 0
        ahead.close()
        view.release()


def _rss_kib(path: Path, offset: int) -> int:
    """The resident KiB of this process's mapping of `path` at file offset `offset`."""
    found = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 6:  # a mapping's first line
            found = fields[-1] == str(path) and int(fields[2], 16) == offset
        elif found and fields[0] == "Rss:":
            return int(fields[1])
    raise AssertionError(f"no mapping of {path} at {offset}")


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux's /proc/self/smaps")
def test_a_dropped_window_is_let_go_of_and_reads_the_same(tmp_path: Path) -> None:
    """submit(..., drop=old): before it walks the new window, the thread takes the old one's
    pages out of the page tables (so the decoder's munmap has none to take out); it holds
    the old window until the wait; and the old window still reads the file's bytes."""
    data = bytearray(b"\xfebin")
    while len(data) < 3 * 65536:  # events across the two windows, with right CRCs
        ev = bytearray(19) + bytes([len(data) % 251]) * 1000
        ev[4] = 2
        ev[9:13] = (len(ev) + 4).to_bytes(4, "little")
        data += ev + zlib.crc32(ev).to_bytes(4, "little")
    path = tmp_path / "events.bin"
    path.write_bytes(bytes(data))
    with path.open("rb") as fh:
        first = mmap.mmap(fh.fileno(), 65536, access=mmap.ACCESS_READ)
        rest = mmap.mmap(fh.fileno(), len(data) - 65536, access=mmap.ACCESS_READ, offset=65536)
        ahead = _speedups.CrcAhead(4)
        ahead.submit(memoryview(first)[4:], 4)
        ahead.wait()
        assert bytes(first) == data[:65536] and _rss_kib(path, 0) >= 64  # read: resident
        ahead.submit(memoryview(rest), 65536, memoryview(first))
        with pytest.raises(BufferError):  # held by the thread's slot until the wait
            first.close()
        assert ahead.wait() == len(data) and ahead.failed == 0
        assert _rss_kib(path, 0) == 0  # no page of the dropped window is mapped
        assert bytes(first) == data[:65536]  # read again: mapped anew, the same bytes
        assert _rss_kib(path, 0) >= 64
        first.close()  # (given back by the wait: nothing holds it now)
        ahead.close()
        rest.close()


def test_only_a_read_only_mapping_can_be_dropped(tmp_path: Path) -> None:
    """MADV_DONTNEED would empty a heap buffer or a private (copy) mapping: submit refuses
    any drop but a read-only view of an mmap, and takes nothing from the refused call."""
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 64)
    heap = bytearray(path.read_bytes())
    ahead = _speedups.CrcAhead(0)
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY) as copy:
        views = [memoryview(heap), memoryview(copy)]
        for bad in (heap, bytes(heap), *views):
            with pytest.raises(TypeError, match="read-only memoryview of an mmap"):
                ahead.submit(bytes(64), 0, bad)
        for view in views:
            view.release()
        copy.close()  # (no buffer of it was kept by the refused calls)
    assert heap == path.read_bytes()
    ahead.submit(bytes(64), 0)  # a slot is still free: the refused calls took none
    ahead.wait()
    ahead.close()


def test_a_forked_child_lets_its_copy_go() -> None:
    """A fork while a file is read (a worker pool started then): the child's copy has no
    thread behind it; dropping it must neither hang nor touch the parent's."""
    data = bytes(1 << 20)
    ahead = _speedups.CrcAhead(0)
    ahead.submit(data, 0)
    pid = os.fork()
    if pid == 0:  # the child: its copy refuses work and goes quietly
        code = 1
        try:
            try:
                ahead.wait()
            except RuntimeError:
                code = 0
            ahead.close()
            del ahead
        finally:
            os._exit(code)
    import time

    deadline = time.monotonic() + 20
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:  # (it would wait forever for a thread it does not have)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child hung letting its copy go")
    status = done[1]
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert ahead.wait() == 0 and ahead.failed == 1  # (zeros: no event) the parent's goes on
    ahead.close()
