"""The rows events' fast paths against the general path, on every corpus file.

Two fast paths take the common rows event in one step and hand anything unusual back: the C
scanner (RowsScanner, event_rows.h) and its Python twin (rows.fast_rows). Neither may change
what comes out. Every event of every file is decoded the three ways (with and without a
table filter, counting filtered rows or not, values or JSON images; files and a stream's
whole events) and compared field by field, errors included: a corrupt or truncated event
fails the same way on every path.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import binlake.binlog.codecs.rows as rows
from binlake._speedups.native import switches
from binlake.binlog.decoder import BinlogDecoder
from binlake.binlog.events import RowsEvent
from binlake.binlog.table_map import TableMapEvent
from binlake.errors import BinlakeError, SchemaDriftError
from binlake.binlog.files import read_events

from corpus_index import corpus_files

pytestmark = pytest.mark.skipif(rows.compile_row_decoder([], []) is None or
                                not hasattr(rows.compile_row_decoder([], []), "many"),
                                reason="C extension not built")


WAYS = ("c", "python", "general")
"""The C scanner (then the Python fast path for what it leaves), the Python fast path alone,
the general path alone."""


def _decoder(way: str, **options: object) -> BinlogDecoder:
    with switches.set(scanner=way == "c"):  # (the decoder makes its scanner when built)
        return BinlogDecoder(**options)


class _Way:
    """Decode with one path: the fast types emptied for the general path."""

    def __init__(self, way: str) -> None:
        self.way = way

    def __enter__(self) -> None:
        self.saved = rows.FAST_TYPES
        if self.way == "general":
            rows.FAST_TYPES = frozenset()

    def __exit__(self, *exc: object) -> None:
        rows.FAST_TYPES = self.saved


def _decode(path: Path, way: str, **options: object) -> tuple[list[tuple], str | None, int]:
    """(events' fields, the error, events the C scanner took)."""
    out: list[tuple] = []
    dec = _decoder(way, file=path.name, **options)
    with _Way(way):
        try:
            for ev in read_events(path, decoder=dec):
                out.append(_fields(ev))
        except BinlakeError as exc:
            return out, f"{type(exc).__name__}: {exc}", 0
    return out, None, dec._scanner.scanned if dec._scanner is not None else 0


def _each_way(data: bytes, **options: object) -> list[object]:
    """One file's bytes fed whole and decoded each way: its events' fields, or the error."""
    results: list[object] = []
    for way in WAYS:
        dec = _decoder(way, **options)
        with _Way(way):
            try:
                dec.feed(data)
                results.append([_fields(ev) for ev in dec.events()])
            except BinlakeError as exc:
                results.append(f"{type(exc).__name__}: {exc}")
    return results


def _decode_stream(path: Path, way: str, **options: object) -> tuple[list[tuple], str | None]:
    """Each whole event handed to decode_event as a replica does (no file offsets)."""
    data = path.read_bytes()
    dec = _decoder(way, file=path.name, **options)
    out: list[tuple] = []
    pos = 4
    with _Way(way):
        try:
            while pos + 19 <= len(data):
                size = int.from_bytes(data[pos + 9:pos + 13], "little")
                if size < 19 or pos + size > len(data):
                    break
                out.extend(_fields(ev) for ev in dec.decode_event(memoryview(data)[pos:pos + size]))
                pos += size
        except BinlakeError as exc:
            return out, f"{type(exc).__name__}: {exc}"
    return out, None


def _raw_events(data: bytes) -> list[bytes]:
    """A binlog file's whole events, as a primary sends them (its magic left out)."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        if size < 19 or pos + size > len(data):
            break
        out.append(data[pos:pos + size])
        pos += size
    return out


def _event_packet(event: bytes, seq: int, status: int = 0) -> bytes:
    """An event as a binlog dump sends it: packet header, status byte, the event."""
    return (len(event) + 1).to_bytes(3, "little") + bytes([seq & 0xFF, status]) + event


def _event_packets(events: list[bytes]) -> bytearray:
    """Events as a binlog dump sends them, a payload of 16 MiB or more in pieces of
    0xFFFFFF bytes (and an empty one after an exact multiple), sequence ids wrapping."""
    out, seq = bytearray(), 0
    for ev in events:
        payload = b"\x00" + ev
        while True:
            piece, payload = payload[:0xFFFFFF], payload[0xFFFFFF:]
            out += len(piece).to_bytes(3, "little") + bytes([seq]) + piece
            seq = (seq + 1) & 0xFF
            if len(piece) < 0xFFFFFF:
                break
    return out


def _decode_packets(path: Path, group: bool = False,
                    **options: object) -> tuple[list[tuple], str | None, int]:
    """A replica's way with a received buffer of event packets (sequence ids wrapping at
    256): C runs of the common rows events (group: and the XID, GTID and known TABLE_MAP
    events), the packet each run stops at decoded the general way (decode_event), then runs
    again. (events' fields, the error, events the runs took)."""
    buf = _event_packets(_raw_events(path.read_bytes()))
    dec = _decoder("c", file=path.name, **options)
    out: list[tuple] = []
    pos = seq = taken = 0
    try:
        while pos < len(buf):
            run = dec.scan_packets(buf, pos, len(buf), seq, group=group)
            if run is not None:
                for ev in run:
                    out.append(_fields(ev))
                    taken += 1
                pos, seq = run.pos, run.seq
                if pos == len(buf):
                    break
            payload = bytearray()
            while True:  # one payload, its pieces joined
                length = int.from_bytes(buf[pos:pos + 3], "little")
                assert buf[pos + 3] == seq  # a run stops at a packet's start
                payload += buf[pos + 4:pos + 4 + length]
                pos, seq = pos + 4 + length, (seq + 1) & 0xFF
                if length < 0xFFFFFF:
                    break
            assert payload[0] == 0
            out.extend(_fields(ev) for ev in dec.decode_event(memoryview(payload)[1:]))
    except BinlakeError as exc:
        return out, f"{type(exc).__name__}: {exc}", taken
    return out, None, taken


def _fields(ev: object) -> tuple:
    values = []
    for f in dataclasses.fields(ev):
        if not f.compare:  # caches (a TABLE_MAP's compiled decoders)
            continue
        v = getattr(ev, f.name)
        values.append((f.name, id(v) if f.name == "table" else v))
    if isinstance(ev, RowsEvent):  # (and which TABLE_MAP it used: the latest one)
        values.append(("table-name", ev.table.qualified_name))
        values.append(("table-map-at", (ev.table.file, ev.table.offset)))
    return type(ev).__name__, tuple(v for v in values if v[0] != "table")


def _only_first_table(path: Path) -> object:
    try:
        for ev in read_events(path):
            if isinstance(ev, RowsEvent):
                name = (ev.table.schema, ev.table.table)
                return lambda schema, table: (schema, table) == name
    except BinlakeError:  # broken or encrypted on purpose: the tables before the fault
        pass
    return lambda schema, table: False


def _checksummed_fast_rows(path: Path) -> bool:
    """A file with CRC32 checksums and rows events of the fast path's types."""
    try:
        evs = list(read_events(path))
    except BinlakeError:
        return False
    return (any(getattr(ev, "checksum_alg", None) == 1 for ev in evs)
            and any(isinstance(ev, RowsEvent) and ev.type_code in rows.FAST_TYPES for ev in evs))


@pytest.mark.parametrize("mode", ["all", "filtered", "filtered-counted", "json-images",
                                  "json-lines"])
def test_fast_path_gives_what_the_general_path_gives(corpus_dir: Path, mode: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    taken = [0]
    real = rows.fast_rows

    def counting(*args: object) -> object:
        ev = real(*args)
        taken[0] += ev is not None
        return ev

    monkeypatch.setattr(rows, "fast_rows", counting)
    compared = rows_events = scanned = python_taken = packet_runs = 0
    for path in corpus_files(corpus_dir):
        options: dict[str, object] = {}
        if mode in ("json-images", "json-lines"):
            options = {"json_images": True if mode == "json-images" else "lines"}
        elif mode != "all":
            options = {"table_filter": _only_first_table(path),
                       "count_filtered": mode == "filtered-counted"}
        general, general_error, _ = _decode(path, "general", **options)
        before = taken[0]
        python, python_error, _ = _decode(path, "python", **options)
        python_taken += taken[0] - before
        c, c_error, c_scanned = _decode(path, "c", **options)
        scanned += c_scanned
        for got, error in ((python, python_error), (c, c_error)):
            assert error == general_error, path
            assert len(got) == len(general), path
            for a, b in zip(got, general):
                assert a == b, (path, a[0])
        compared += len(general)
        rows_events += sum(1 for a in general if a[0] == "RowsEvent")
        if general_error is None and "encrypt" not in path.name:
            stream_general, stream_error = _decode_stream(path, "general", **options)
            stream_c, stream_c_error = _decode_stream(path, "c", **options)
            assert stream_c_error == stream_error and stream_c == stream_general, path
            packets, packets_error, taken_here = _decode_packets(path, **options)
            assert packets_error == stream_error and packets == stream_general, path
            packet_runs += taken_here
            packets, packets_error, _ = _decode_packets(path, group=True, **options)
            assert packets_error == stream_error and packets == stream_general, path
    assert rows_events > 500 and compared > rows_events
    assert python_taken > rows_events // 2  # the Python fast path did the common events
    assert scanned > rows_events // 2  # and so did the C scanner
    assert packet_runs > rows_events // 2  # and the runs over received packets


def test_corrupt_rows_events_fail_as_on_the_general_path(corpus_dir: Path) -> None:
    """Flip a byte in the rows of each of the first rows events of a file: the checksum
    catches it; with checksums off, the rows fail or decode the same way on both paths."""
    path = next(p for p in corpus_files(corpus_dir) if _checksummed_fast_rows(p))
    data = path.read_bytes()
    spots = [ev.offset + ev.header.event_size - 6 for ev in read_events(path)
             if isinstance(ev, RowsEvent) and ev.type_code in rows.FAST_TYPES][:20]
    for spot in spots:
        bad = bytearray(data)
        bad[spot] ^= 0x5A
        for verify in (True, False):
            results = _each_way(bytes(bad), file=path.name, verify_checksums=verify)
            assert results[0] == results[1] == results[2], (spot, verify)
            if verify:
                assert isinstance(results[0], str) and "CRC32" in results[0]


def test_skipped_filtered_events_are_all_that_is_missing(corpus_dir: Path) -> None:
    """skip_filtered: the C scan passes over the left-out tables' rows events; every other
    event comes as on the general path, in order, with the same error if any, and the
    decoder's offset ends where the file does."""
    skipped_total = 0
    for path in corpus_files(corpus_dir):
        keep = _only_first_table(path)
        general, general_error, _ = _decode(path, "general", table_filter=keep)
        dec = _decoder("c", file=path.name, table_filter=keep, skip_filtered=True)
        got: list[tuple] = []
        error = None
        try:
            for ev in read_events(path, decoder=dec):
                got.append(_fields(ev))
        except BinlakeError as exc:
            error = f"{type(exc).__name__}: {exc}"
        assert error == general_error, path
        left_out = [f for f in general if f[0] == "RowsEvent" and dict(f[1])["filtered"]]
        missing = list(general)
        for f in got:  # got is general with some left-out rows events taken out
            i = missing.index(f)
            assert all(m in left_out for m in missing[:i]), path
            del missing[:i + 1]
        assert all(m in left_out for m in missing), path
        assert len(general) - len(got) == dec.events_skipped, path
        if error is None:
            assert dec.offset == path.stat().st_size, path
        skipped_total += dec.events_skipped
    assert skipped_total > 200


def test_a_corrupt_left_out_event_fails_loud_when_skipped(corpus_dir: Path) -> None:
    """Passing over an event is not trusting it: its checksum is checked, and a bad one
    stops the scan for the general path to name it."""
    path = next(p for p in corpus_files(corpus_dir) if _checksummed_fast_rows(p))
    data = path.read_bytes()
    spots = [ev.offset + ev.header.event_size - 6 for ev in read_events(path)
             if isinstance(ev, RowsEvent) and ev.type_code in rows.FAST_TYPES][:10]
    assert spots
    for spot in spots:
        bad = bytearray(data)
        bad[spot] ^= 0x5A
        dec = _decoder("c", file=path.name, table_filter=lambda schema, table: False,
                       skip_filtered=True)
        with pytest.raises(BinlakeError, match="CRC32"):
            dec.feed(bytes(bad))
            for _ in dec.events():
                pass


@pytest.fixture(scope="module")
def rows_seeds(corpus_dir: Path) -> list[tuple[bytes, list[tuple[int, int]]]]:
    """(file bytes, [(offset, size) of each fast-type rows event]) of a few varied files."""
    out = []
    for path in corpus_files(corpus_dir):
        if len(out) == 6:
            break
        if path.stat().st_size > 2_000_000 or not _checksummed_fast_rows(path):
            continue
        spans = [(ev.offset, ev.header.event_size) for ev in read_events(path)
                 if isinstance(ev, RowsEvent) and ev.type_code in rows.FAST_TYPES
                 and ev.inner_index is None]
        if spans:
            out.append((path.read_bytes(), spans[:200]))
    assert len(out) >= 3
    return out


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_rows_events_decode_alike_on_every_path(rows_seeds, data) -> None:
    """Bytes changed anywhere in a rows event's body, and its rows cut short (checksums off,
    so the changes reach the row decoders): the C scanner, the Python fast path and the
    general path give the same events or the same error, and nothing crashes."""
    blob, spans = data.draw(st.sampled_from(rows_seeds))
    offset, size = data.draw(st.sampled_from(spans))
    buf = bytearray(blob[:offset + size])
    for _ in range(data.draw(st.integers(1, 6))):
        buf[data.draw(st.integers(offset + 19, offset + size - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, min(8, size - 24)))
    if cut:  # rows cut short: bytes taken from before the checksum, the size made to match
        del buf[offset + size - 4 - cut:offset + size - 4]
        buf[offset + 9:offset + 13] = (size - cut).to_bytes(4, "little")
    options = data.draw(st.sampled_from([{}, {"json_images": True},
                                         {"table_filter": _KEEP_NONE, "count_filtered": True}]))
    results = _each_way(bytes(buf), file="fuzz", verify_checksums=False, **options)
    assert results[0] == results[2] and results[1] == results[2]


def _KEEP_NONE(schema: str, table: str) -> bool:
    """Every table left out: its rows counted, not decoded."""
    return False


def test_packet_runs_stop_at_what_they_do_not_take(rows_seeds) -> None:
    """A run over received packets takes the common rows events and stops, without reading
    it, at a packet that is cut short, out of sequence, not an event (0xFF: an error), or
    whose event size disagrees with it."""
    blob, spans = rows_seeds[0]
    events = _raw_events(blob)
    offset, size = spans[0]
    rows_event = blob[offset:offset + size]
    first = events.index(rows_event)
    dec = _decoder("c", file="packets")
    for ev in events[:first + 1]:  # the format, the table maps, the event (its decoders built)
        dec.decode_event(ev)

    def run(buf: bytes | bytearray, seq: int = 7, end: int | None = None) -> tuple[int, int, int]:
        r = dec.scan_packets(bytearray(buf), 0, len(buf) if end is None else end, seq)
        assert r is not None
        return sum(1 for _ in r), r.pos, r.seq

    good = [_event_packet(rows_event, 7 + i) for i in range(3)]
    whole = b"".join(good)
    assert run(whole) == (3, len(whole), 10)
    assert run(whole, end=len(whole) - 1) == (2, 2 * len(good[0]), 9)  # the last one cut
    assert run(whole, seq=8) == (0, 0, 8)  # out of sequence: the general path says so
    bad = {
        "error packet": _event_packet(rows_event, 8, status=0xFF),
        "out of sequence": _event_packet(rows_event, 9),
        "16 MiB announced, not all received": b"\xff\xff\xff\x08\x00" + rows_event,
        "size mismatch": (len(rows_event) + 2).to_bytes(3, "little") + b"\x08\x00" + rows_event + b"x",
    }
    for name, packet in bad.items():
        assert run(good[0] + packet + good[2]) == (1, len(good[0]), 8), name
    seq_wrap = _event_packet(rows_event, 255) + _event_packet(rows_event, 0)
    assert run(seq_wrap, seq=255) == (2, len(seq_wrap), 1)


def test_packet_runs_leave_a_16_mib_packet_to_the_reassembly(rows_seeds) -> None:
    """A payload of 0xFFFFFF bytes continues in the next packet (here the empty one that
    ends an exact fit), so a run stops at it even when the event in it looks whole: an
    event of 0xFFFFFE bytes that a run would otherwise take (its table left out and not
    counted, checksums off, so its padding is never read)."""
    blob, spans = rows_seeds[0]
    events = _raw_events(blob)
    offset, size = spans[0]
    rows_event = blob[offset:offset + size]
    first = events.index(rows_event)
    dec = _decoder("c", file="packets", table_filter=_KEEP_NONE, count_filtered=False,
                   verify_checksums=False)
    for ev in events[:first + 1]:
        dec.decode_event(ev)
    big = bytearray(rows_event[:-4]) + bytes(0xFFFFFE - (len(rows_event) - 4))
    big[9:13] = (0xFFFFFE).to_bytes(4, "little")
    below = bytearray(big[:-1])  # the same event one byte shorter: one whole packet
    below[9:13] = (0xFFFFFD).to_bytes(4, "little")
    taken = dec.scan_packets(bytearray(_event_packet(bytes(below), 3)), 0, 0xFFFFFF + 3, 3)
    assert [ev.filtered for ev in taken] == [True] and taken.pos == 0xFFFFFF + 3
    buf = bytearray(b"\xff\xff\xff\x03\x00") + big + b"\x00\x00\x00\x04"
    run = dec.scan_packets(buf, 0, len(buf), 3)
    assert list(run) == [] and (run.pos, run.seq) == (0, 3)


@pytest.fixture(scope="module")
def maria_fde(corpus_dir: Path) -> bytes:
    """The FORMAT_DESCRIPTION event of a MariaDB corpus file with CRC32 checksums."""
    from binlake.binlog.events import FormatDescriptionEvent

    for path in corpus_files(corpus_dir):
        try:
            first = next(iter(read_events(path)))
        except (BinlakeError, StopIteration):
            continue
        if (isinstance(first, FormatDescriptionEvent) and first.is_mariadb
                and first.checksum_alg == 1):
            return path.read_bytes()[4:4 + first.header.event_size]
    pytest.skip("no MariaDB corpus file with CRC32")


def _event(code: int, body: bytes, offset: int, *, server_id: int, flags: int,
           bad_crc: bool = False) -> bytes:
    """A whole event at `offset` of a file: header, body, CRC32."""
    import zlib

    size = 19 + len(body) + 4
    head = (1_700_000_000).to_bytes(4, "little") + bytes([code]) + server_id.to_bytes(4, "little") \
        + size.to_bytes(4, "little") + (offset + size).to_bytes(4, "little") + flags.to_bytes(2, "little")
    crc = zlib.crc32(head + body) ^ (0x5A if bad_crc else 0)
    return head + body + crc.to_bytes(4, "little")


@st.composite
def _group_event(draw: st.DrawFn) -> tuple[int, bytes]:
    """An XID or a MariaDB GTID body with any of its optional parts, now and then cut short
    or too long (XID), or with XA flags (left to the general path by the C scanner)."""
    if draw(st.booleans()):
        return 16, draw(st.binary(min_size=7, max_size=9) | st.binary(min_size=8, max_size=8))
    u = lambda bits: st.integers(0, (1 << bits) - 1)  # noqa: E731
    flags = draw(u(8))
    body = draw(u(64)).to_bytes(8, "little") + draw(u(32)).to_bytes(4, "little") + bytes([flags])
    if flags & 0x02:
        body += draw(u(64)).to_bytes(8, "little")
    if flags & 0xC0:
        gtrid, bqual = draw(st.binary(max_size=70)), draw(st.binary(max_size=8))
        body += draw(u(32)).to_bytes(4, "little") + bytes([len(gtrid), len(bqual)]) + gtrid + bqual
    if draw(st.booleans()):
        fx = draw(u(8))
        body += bytes([fx])
        if fx & 0x01:
            body += bytes([draw(u(8))])
        if fx & 0x0C:
            body += draw(u(64)).to_bytes(8, "little")
        if fx & 0x10:
            body += draw(u(32)).to_bytes(4, "little")
    body = body.ljust(19, b"\0")  # (the server pads a short one to the post-header's 19)
    if draw(st.integers(0, 2)) == 0:  # cut short: a part the flags announce missing
        body = body[:draw(st.integers(min(17, len(body)), len(body)))]
    return 162, body


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(events=st.lists(st.tuples(_group_event(), st.integers(0, 2**32 - 1), st.integers(0, 0xFFFF),
                                 st.integers(0, 15)), min_size=1, max_size=6))
def test_xid_and_maria_gtid_events_decode_alike_on_every_path(maria_fde, events) -> None:
    """The C scanner's XID and MariaDB GTID events (scan_group_event) are the general
    path's, field by field, every optional part drawn; what it leaves (a cut body, XA flags,
    a bad checksum) fails or decodes as on the general path. Files (a scan's run) and a
    stream's whole events (one()) alike."""
    data = bytearray(b"\xfebin" + maria_fde)
    raws = []
    for (code, body), server_id, flags, crc in events:
        raw = _event(code, body, len(data), server_id=server_id, flags=flags, bad_crc=crc == 0)
        raws.append(raw)
        data += raw
    results = _each_way(bytes(data), file="groups")
    assert results[0] == results[1] == results[2]
    streams = []
    for way in ("c", "general"):
        dec = _decoder(way, file="groups")
        out: list[object] = []
        try:
            for raw in [maria_fde, *raws]:
                out.extend(_fields(ev) for ev in dec.decode_event(memoryview(raw)))
        except BinlakeError as exc:
            out.append(f"{type(exc).__name__}: {exc}")
        streams.append(out)
    assert streams[0] == streams[1]


def test_maria_gtid_cut_anywhere_fails_alike_on_every_path(maria_fde) -> None:
    """Every MariaDB GTID shape (commit id or not; flags_extra absent, none, or flagging
    each part), its body cut at every length: the C scanner leaves what the general path
    rejects, and takes the rest the same."""
    seq, domain, commit = (2**64 - 2).to_bytes(8, "little"), (2**32 - 3).to_bytes(4, "little"), b"\x07" * 8
    parts = {0x01: b"\x05", 0x0C: b"\xfe" * 8, 0x10: b"\x01\x02\x03\x04"}
    checked = 0
    for flags in (0x00, 0x02, 0x0D):
        for fx in (None, 0x00, 0x01, 0x04, 0x08, 0x10, 0x1D):
            body = seq + domain + bytes([flags]) + (commit if flags & 0x02 else b"")
            if fx is not None:
                body += bytes([fx]) + b"".join(v for bit, v in parts.items() if fx & bit)
            for n in range(16, max(len(body), 19) + 2):
                cut = body.ljust(19, b"\0")[:n] if n <= max(len(body), 19) else body.ljust(n, b"\0")
                data = b"\xfebin" + maria_fde + _event(162, cut, 4 + len(maria_fde),
                                                         server_id=9, flags=0)
                results = _each_way(data, file="cut")
                assert results[0] == results[2], (flags, fx, n)
                checked += isinstance(results[2], list) and len(results[2]) == 2
    assert checked > 40


def test_the_c_scanner_takes_xid_maria_gtid_and_known_table_map_events(corpus_dir: Path) -> None:
    """Not a silent fallback: a file's XID and MariaDB GTID events (but those of XA), and
    each TABLE_MAP whose bytes came before, come from the C scan, in files and in a group
    run over received packets; a plain run over packets leaves them to the general way."""
    from binlake.binlog.events import MariaGtidEvent, XidEvent
    from binlake.binlog.table_map import TableMapEvent

    checked = repeats_total = 0
    for path, evs in _readable_files(corpus_dir):
        if ev_checksum(evs) != 1 or any(ev.inner_index is not None for ev in evs):
            continue
        groups = [ev for ev in evs if isinstance(ev, XidEvent) or (
            isinstance(ev, MariaGtidEvent) and not ev.flags & 0xC0)]
        data = path.read_bytes()
        maps = [data[ev.offset + 19:ev.end - 4] for ev in evs if isinstance(ev, TableMapEvent)]
        repeats = len(maps) - len(set(maps))
        rows_events = sum(1 for ev in evs if isinstance(ev, RowsEvent))
        dec = _decoder("c", file=path.name)
        assert sum(1 for _ in read_events(path, decoder=dec)) == len(evs)
        assert len(groups) + repeats <= dec._scanner.scanned <= len(groups) + len(maps) + rows_events, path
        _, _, taken = _decode_packets(path)
        assert taken <= rows_events, path  # (plain packet runs: rows events only)
        _, _, taken = _decode_packets(path, group=True)
        assert len(groups) + repeats <= taken <= len(groups) + len(maps) + rows_events, path
        checked += len(groups)
        repeats_total += repeats
    assert checked > 1000 and repeats_total > 1000


def _readable_files(corpus_dir: Path) -> Iterator[tuple[Path, list[object]]]:
    """Each corpus file that decodes without an error, with its events."""
    for path in corpus_files(corpus_dir):
        try:
            yield path, list(read_events(path))
        except BinlakeError:
            continue


def ev_checksum(evs: list[object]) -> int | None:
    """The checksum algorithm of a file's format description (1: CRC32)."""
    return next((getattr(ev, "checksum_alg", None) for ev in evs
                 if hasattr(ev, "checksum_alg")), None)


class _Renaming:
    """A schema resolver that names every column after its table and place, and counts the
    maps it is given: a map the C scan took without it would keep the file's names."""

    def __init__(self) -> None:
        self.calls = 0

    def resolve(self, tm: TableMapEvent) -> TableMapEvent:
        self.calls += 1
        return tm.with_columns([dataclasses.replace(c, name=f"{tm.table}_{c.index}")
                                for c in tm.columns], tm.primary_key)


def test_a_schema_resolver_is_given_every_table_map_the_c_scan_takes(corpus_dir: Path) -> None:
    """With a schema resolver, the C scan still takes the TABLE_MAPs parsed before (in
    files, and in group runs over received packets) and hands each to the resolver once,
    as the general path does: the same events, rows decoded with the resolved names, as
    many resolver calls as TABLE_MAPs."""
    checked = taken = 0
    for path, evs in _readable_files(corpus_dir):
        maps = sum(1 for ev in evs if isinstance(ev, TableMapEvent))
        if ev_checksum(evs) != 1 or maps < 2 or any(ev.inner_index is not None for ev in evs):
            continue
        got = {}
        for way in ("c", "general"):
            res = _Renaming()
            dec = _decoder(way, file=path.name, table_resolver=res)
            with _Way(way):
                got[way] = ([(_fields(ev), ev.table.column_names if isinstance(ev, RowsEvent) else None)
                             for ev in read_events(path, decoder=dec)], res.calls)
            if way == "c":
                taken += dec._scanner.scanned
        assert got["c"] == got["general"], path
        assert got["c"][1] == maps, path
        packets, error, _ = _decode_packets(path, group=True, table_resolver=_Renaming())
        stream, stream_error = _decode_stream(path, "general", table_resolver=_Renaming())
        assert error == stream_error and packets == stream, path
        checked += 1
    assert checked > 5 and taken > 1000


class _FailingAt(_Renaming):
    """A resolver that refuses its n-th map, as a schema history does on drift."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def resolve(self, tm: TableMapEvent) -> TableMapEvent:
        if self.calls + 1 == self.n:
            raise SchemaDriftError(f"refused {tm.table} at {tm.file}:{tm.offset}")
        return super().resolve(tm)


def test_a_resolver_error_in_the_c_scan_stops_where_the_general_path_does(corpus_dir: Path) -> None:
    """Fail loud: a resolver's error on a TABLE_MAP the C scan took comes out as it is, after
    the same events as on the general path, and the decoder does not move past the map."""
    checked = 0
    for path, evs in _readable_files(corpus_dir):
        data = path.read_bytes()
        maps = [ev for ev in evs if isinstance(ev, TableMapEvent)]
        bodies = [data[ev.offset + 19:ev.end - 4] for ev in maps]
        repeat = next((i for i, b in enumerate(bodies) if b in bodies[:i]), None)
        if ev_checksum(evs) != 1 or repeat is None or any(ev.inner_index is not None for ev in evs):
            continue
        got = {way: _decode(path, way, table_resolver=_FailingAt(repeat + 1))[:2]
               for way in ("c", "general")}
        assert got["c"] == got["general"], path
        assert got["c"][1] == f"SchemaDriftError: refused {maps[repeat].table} at " \
                             f"{path.name}:{maps[repeat].offset}", path
        dec = _decoder("c", file=path.name, table_resolver=_FailingAt(repeat + 1))
        dec.feed(data)
        with pytest.raises(SchemaDriftError):
            for _ in dec.events():
                pass
        assert dec.offset == maps[repeat].offset  # the next read starts at the refused map
        checked += 1
    assert checked > 5


def _records_of_packets(path: Path, merge: bool, table_filter: object = None
                        ) -> tuple[list[tuple], int]:
    """A replica's records from a buffer of event packets, as its loop makes them
    (ChangeTracker.records per event handed out), the runs passing left-out tables over
    outside XA PREPAREs (the replica's loop does so only inside a transaction, which
    changes no record); merge: the runs in records mode (lists of records made in C, as
    for BinlogStream.batches(per_event=False)). (each record's fields, the lists made in C)."""
    from binlake.cdc.changes import ChangeTracker

    buf = _event_packets(_raw_events(path.read_bytes()))
    dec = _decoder("c", file=path.name, table_filter=table_filter, count_filtered=True,
                   skip_filtered=True)
    tracker = ChangeTracker(table_filter, on_incident=lambda ev: None)  # (read past INCIDENTs)
    key = ("records", tracker.table_filter)
    out: list[tuple] = []
    lists = pos = seq = 0

    def add(recs: list) -> None:
        for r in recs:
            tm = r.table_map
            out.append((r.op, r.schema, r.table, r.before, r.after, r.primary_key, r.file,
                        r.pos, r.end_pos, r.row, r.inner, r.gtid, r.timestamp,
                        (tm.schema, tm.table, tm.table_id, tm.offset)))

    def take(ev: object) -> None:
        if isinstance(ev, RowsEvent):
            add(tracker.records(ev))
        else:
            tracker.observe(ev)

    while pos < len(buf):
        # (an XA PREPARE's rows are held)
        run = dec.scan_packets(buf, pos, len(buf), seq, group=True, skip=not tracker.xa.holding)
        if run is not None:
            if merge:
                run.records, run.gtid, run.merge = key, tracker.gtid, not tracker.xa.holding
            for ev in run:
                if type(ev) is list:
                    add(ev)
                    lists += 1
                    continue
                take(ev)
                run.gtid = tracker.gtid
                run.skip = run.merge = not tracker.xa.holding
            pos, seq = run.pos, run.seq
            if pos == len(buf):
                break
        payload = bytearray()
        while True:
            length = int.from_bytes(buf[pos:pos + 3], "little")
            payload += buf[pos + 4:pos + 4 + length]
            pos, seq = pos + 4 + length, (seq + 1) & 0xFF
            if length < 0xFFFFFF:
                break
        for ev in dec.decode_event(memoryview(payload)[1:]):
            take(ev)
    return out, lists


def test_records_mode_makes_the_records_of_the_events(corpus_dir: Path) -> None:
    """RowsScanner's records mode (lists of change records made in C from the kept rows
    events, TABLE_MAPs taken between them) gives the records that ChangeTracker makes of the
    same events one by one: every field, in order, on every corpus file that decodes, with
    and without a table filter."""
    lists = files = 0
    for path in corpus_files(corpus_dir):
        if "encrypt" in path.name or _decode(path, "general")[1] is not None:
            continue
        for table_filter in (None, _only_first_table(path)):
            one_by_one, none = _records_of_packets(path, False, table_filter)
            merged, made = _records_of_packets(path, True, table_filter)
            assert none == 0
            assert merged == one_by_one, path
            lists += made
        files += 1
    assert files > 20 and lists > 100
