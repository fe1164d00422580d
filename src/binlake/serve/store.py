"""The binlog folder a binlake primary serves: its files in order, and what a dump needs to know
about each (format description, checksum, PREVIOUS_GTIDS / GTID_LIST, where each GTID starts).

A real primary keeps this in its index file and in memory; binlake rebuilds it by walking the
event headers once (bodies are read only for the few events that carry positions), then
re-walks only what was appended, so a dump can tail a file that is still being written.
Nothing here talks to sockets.
"""
from __future__ import annotations

import bisect
import re
import threading
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ..binlog.constants import BINLOG_MAGIC, HEADER_LEN, ChecksumAlg, EventType as E
from ..binlog.decoder import BinlogDecoder
from ..errors import BinlakeError, ConfigError, DecodeError
from ..gtid.sets import MariaGtid, MariaGtidState, MySQLGtidSet

#: events whose body the index needs (everything else is skipped by its length)
_INDEXED = frozenset({E.FORMAT_DESCRIPTION, E.PREVIOUS_GTIDS, E.GTID, E.GTID_TAGGED, E.MARIADB_GTID,
                      E.MARIADB_GTID_LIST, E.MARIADB_START_ENCRYPTION})
_GTID_TYPES = frozenset({E.GTID, E.GTID_TAGGED, E.MARIADB_GTID})
_READ_CHUNK = 1 << 20


class StoreError(BinlakeError):
    """The binlog folder cannot be served as asked (no files, a file that is not a binlog)."""


def natural_key(name: str) -> list[object]:
    """Sort 'binlog.000010' after 'binlog.000009' even when the numbers have different widths."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def is_binlog(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(4) == BINLOG_MAGIC
    except OSError:
        return False


@dataclass
class GtidMark:
    """Where one transaction starts and which GTID it has (text form)."""

    offset: int
    gtid: str


class BinlogFile:
    """One binlog file as served: name, format, GTID positions and event boundaries."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        #: end of the last whole event (a partly written tail is not served yet)
        self.end = 4
        self.fde: bytes | None = None
        self.fde_end = 0
        self.checksum = ChecksumAlg.OFF
        self.server_version = ""
        self.previous_gtids: MySQLGtidSet | None = None
        self.gtid_list: MariaGtidState | None = None
        #: the GTID_LIST entries as written: (domain, server, seq), several per domain
        self.gtid_list_raw: list[tuple[int, int, int]] = []
        self.gtids: list[GtidMark] = []
        self.encrypted = False
        self.error: str | None = None
        self._offsets = array("Q")
        self._decoder: BinlogDecoder | None = None
        self._scanned_size = -1
        self._executed: tuple[int, MySQLGtidSet] | None = None

    def __repr__(self) -> str:
        return f"BinlogFile({self.name!r}, end={self.end}, {len(self._offsets)} events)"

    @property
    def mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    @property
    def tail_bytes(self) -> int:
        """Bytes after the last whole event (a partly written or truncated event)."""
        return max(0, self._scanned_size - self.end)

    @property
    def event_count(self) -> int:
        return len(self._offsets)

    def is_boundary(self, offset: int) -> bool:
        """Whether an event starts at ``offset`` (or it is the end, where the next one will)."""
        if offset == self.end:
            return True
        i = bisect.bisect_left(self._offsets, offset)
        return i < len(self._offsets) and self._offsets[i] == offset

    def refresh(self) -> bool:
        """Index what was appended since the last call; True if the file grew."""
        try:
            size = self.path.stat().st_size
        except OSError as exc:
            self.error = f"cannot read {self.path}: {exc.strerror}"
            return False
        if size == self._scanned_size or self.error is not None:
            return False
        self._scanned_size = size
        before = self.end
        with self.path.open("rb") as fh:
            if not self._offsets and self.end == 4:
                if fh.read(4) != BINLOG_MAGIC:
                    self.error = f"{self.path} is not a binlog file (bad magic)"
                    return False
            self._scan(fh, size)
        return self.end != before

    def _scan(self, fh, size: int) -> None:
        pos = self.end
        while pos + HEADER_LEN <= size:
            fh.seek(pos)
            header = fh.read(HEADER_LEN)
            if len(header) < HEADER_LEN:
                break
            length = int.from_bytes(header[9:13], "little")
            if length < HEADER_LEN:
                self.error = (f"{self.name}: event at offset {pos} claims {length} bytes, "
                              "less than its header")
                return
            if pos + length > size:
                break  # still being written
            code = header[4]
            if not self.encrypted and code in _INDEXED:
                raw = header + fh.read(length - HEADER_LEN)
                try:
                    self._index(code, raw, pos)
                except DecodeError as exc:
                    self.error = str(exc.located(file=self.name, offset=pos))
                    return
            self._offsets.append(pos)
            pos += length
        self.end = pos

    def _index(self, code: int, raw: bytes, offset: int) -> None:
        if code == E.FORMAT_DESCRIPTION and self.fde is None:
            self._decoder = BinlogDecoder(file=self.name)
            fde = self._decoder.decode_event(raw, offset)[0]
            self.fde = raw
            self.fde_end = offset + len(raw)
            self.checksum = self._decoder.checksum_alg
            self.server_version = fde.server_version  # type: ignore[attr-defined]
            return
        if code == E.MARIADB_START_ENCRYPTION:
            self.encrypted = True
            return
        dec = self._decoder
        if dec is None:
            raise DecodeError("event before the FORMAT_DESCRIPTION event")
        ev = dec.decode_event(raw, offset)[0]
        if code == E.PREVIOUS_GTIDS and self.previous_gtids is None:
            self.previous_gtids = MySQLGtidSet.from_previous_gtids(ev)  # type: ignore[arg-type]
        elif code == E.MARIADB_GTID_LIST and self.gtid_list is None:
            self.gtid_list = MariaGtidState.from_gtid_list(ev)  # type: ignore[arg-type]
            self.gtid_list_raw = list(ev.gtids)  # type: ignore[attr-defined]
        elif code in _GTID_TYPES:
            self.gtids.append(GtidMark(offset, ev.gtid))  # type: ignore[attr-defined]

    # -- what the index derives ------------------------------------------------------------

    def executed(self) -> MySQLGtidSet:
        """PREVIOUS_GTIDS plus every MySQL GTID in this file."""
        key = len(self.gtids)
        if self._executed is not None and self._executed[0] == key:
            return self._executed[1]
        acc = self.previous_gtids or MySQLGtidSet()
        if not self.mariadb and self.gtids:
            acc = acc.union(MySQLGtidSet(",".join(g.gtid for g in self.gtids)))
        self._executed = (key, acc)
        return acc


class BinlogStore:
    """The files a primary serves, in binlog order; thread-safe, refreshed on demand.

    ``sources`` are directories (every file starting with the binlog magic, ordered by the
    ``*.index`` file if there is one, else by name with numbers compared as numbers) and
    files (served in the order given). A file is served under its base name.
    """

    def __init__(self, sources: Sequence[str | Path] | str | Path) -> None:
        if isinstance(sources, (str, Path)):
            sources = [sources]
        self._sources = [Path(s) for s in sources]
        for s in self._sources:
            if not s.exists():
                raise ConfigError(f"{s} does not exist", hint="give binlog directories or files")
            if s.is_file() and not is_binlog(s):
                raise ConfigError(f"{s} is not a binlog file (it does not start with fe 62 69 6e)")
        self._lock = threading.RLock()
        self._files: list[BinlogFile] = []
        self._by_name: dict[str, BinlogFile] = {}
        #: bumped whenever a file appears or grows, so derived values can be cached
        self.generation = 0
        self.refresh()
        if not self._files:
            raise ConfigError(f"no binlog files in {', '.join(map(str, self._sources))}",
                              hint="a binlog file starts with the bytes fe 62 69 6e")

    def __repr__(self) -> str:
        return f"BinlogStore({[f.name for f in self._files]})"

    def _listing(self) -> Iterator[Path]:
        for src in self._sources:
            if src.is_file():
                yield src
                continue
            names = sorted((p for p in src.iterdir() if p.is_file()), key=lambda p: natural_key(p.name))
            order = _index_order(src)
            if order:
                rank = {n: i for i, n in enumerate(order)}
                names.sort(key=lambda p: (rank.get(p.name, len(rank)), natural_key(p.name)))
            for p in names:
                if p.suffix != ".index" and is_binlog(p):
                    yield p

    def refresh(self) -> bool:
        """Pick up new files and appended events; True if anything changed."""
        with self._lock:
            changed = False
            for path in self._listing():
                bf = self._by_name.get(path.name)
                if bf is None:
                    bf = BinlogFile(path.name, path)
                    self._by_name[path.name] = bf
                    self._files.append(bf)
                    changed = True
                elif bf.path.resolve() != path.resolve():
                    raise ConfigError(f"two binlog files are named {path.name}: {bf.path} and {path}",
                                      hint="a primary serves files by base name; give each a unique name")
            for bf in self._files:
                changed = bf.refresh() or changed
            if changed:
                self.generation += 1
            return changed

    # -- lookups -----------------------------------------------------------------------------

    @property
    def files(self) -> list[BinlogFile]:
        with self._lock:
            return list(self._files)

    def get(self, name: str) -> BinlogFile | None:
        with self._lock:
            return self._by_name.get(name)

    def first(self) -> BinlogFile:
        return self.files[0]

    def last(self) -> BinlogFile:
        return self.files[-1]

    def next_after(self, name: str) -> BinlogFile | None:
        with self._lock:
            files = self._files
            for i, bf in enumerate(files):
                if bf.name == name:
                    return files[i + 1] if i + 1 < len(files) else None
        return None

    def end(self) -> tuple[str, int]:
        """(file, position) where the next event would be written: SHOW MASTER STATUS."""
        last = self.last()
        return last.name, last.end

    @property
    def checksum(self) -> int:
        """@@global.binlog_checksum: what the newest file is written with."""
        return self.last().checksum

    @property
    def mariadb(self) -> bool:
        return self.last().mariadb

    def gtid_executed(self) -> MySQLGtidSet:
        """Every MySQL GTID the files know of (PREVIOUS_GTIDS of each plus their own)."""
        acc = MySQLGtidSet()
        for bf in self.files:
            acc = acc.union(bf.executed())
        return acc

    def gtid_purged(self) -> MySQLGtidSet:
        """The GTIDs that are gone: what the oldest file's PREVIOUS_GTIDS says came before it."""
        return self.first().previous_gtids or MySQLGtidSet()

    def gtid_binlog_pos(self) -> MariaGtidState:
        """MariaDB @@gtid_binlog_pos: per domain, the last GTID written, in binlog order."""
        doms: dict[int, MariaGtid] = {}
        for bf in self.files:
            if bf.gtid_list is not None:
                for g in bf.gtid_list:
                    doms[g.domain_id] = g
            for mark in bf.gtids:
                if "-" in mark.gtid and ":" not in mark.gtid:
                    g = MariaGtid.parse(mark.gtid)
                    doms[g.domain_id] = g
        return MariaGtidState(list(doms.values()))

    def gtid_binlog_state(self) -> str:
        """MariaDB @@gtid_binlog_state: the last GTID of every (domain, server) pair, each
        domain's newest last."""
        pairs: dict[tuple[int, int], int] = {}
        for bf in self.files:
            if bf.gtid_list is not None and bf.gtid_list_raw:
                for d, srv, q in bf.gtid_list_raw:
                    pairs.pop((d, srv), None)
                    pairs[(d, srv)] = q
            for mark in bf.gtids:
                if ":" not in mark.gtid:
                    d, srv, q = (int(x) for x in mark.gtid.split("-"))
                    pairs.pop((d, srv), None)
                    pairs[(d, srv)] = q
        order = sorted(pairs, key=lambda k: k[0])  # stable: within a domain, oldest first
        return ",".join(f"{d}-{srv}-{pairs[(d, srv)]}" for d, srv in order)

    def last_gtid_uuid(self) -> str | None:
        """The uuid of the newest MySQL GTID: the server that wrote these files."""
        for bf in reversed(self.files):
            for mark in reversed(bf.gtids):
                if ":" in mark.gtid:
                    return mark.gtid.split(":", 1)[0]
            if bf.previous_gtids:
                keys = bf.previous_gtids.keys()
                if keys:
                    return keys[-1][0]
        return None

    # -- where a GTID dump starts ------------------------------------------------------------

    def first_file_not_in(self, replica_set: MySQLGtidSet) -> BinlogFile | None:
        """MySQL's search: the newest file whose PREVIOUS_GTIDS the replica already has."""
        for bf in reversed(self.files):
            if (bf.previous_gtids or MySQLGtidSet()).issubset(replica_set):
                return bf
        return None

    def first_file_for_state(self, state: MariaGtidState) -> BinlogFile | None:
        """MariaDB's search: the newest file whose GTID_LIST is at or before the replica's
        position in every domain it lists."""
        for bf in reversed(self.files):
            glist = bf.gtid_list or MariaGtidState()
            if all(state.get(g.domain_id) is not None and g.seq_no <= state.get(g.domain_id).seq_no  # type: ignore[union-attr]
                   for g in glist):
                return bf
        return None


def _index_order(directory: Path) -> list[str]:
    """File names from a MySQL/MariaDB ``*.index`` file in the directory (first one found)."""
    for idx in sorted(directory.glob("*.index")):
        try:
            lines = idx.read_text(errors="replace").splitlines()
        except OSError:
            continue
        return [Path(line.strip()).name for line in lines if line.strip()]
    return []


@dataclass
class RawEvent:
    """One event as it lies in the file."""

    offset: int
    data: bytes

    @property
    def type_code(self) -> int:
        return self.data[4]

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@dataclass
class EventReader:
    """Sequential whole events of one file from an offset, never past the indexed end
    (so a half-written event is not read until the writer finishes it)."""

    file: BinlogFile
    offset: int
    _fh: object = field(default=None, repr=False)
    _buf: bytearray = field(default_factory=bytearray, repr=False)
    _buf_start: int = 0

    def __post_init__(self) -> None:
        self._fh = self.file.path.open("rb")
        self._buf_start = self.offset

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()  # type: ignore[attr-defined]
            self._fh = None

    def next(self) -> RawEvent | None:
        """The next event, or None at the current end of the file."""
        end = self.file.end
        pos = self.offset
        if pos + HEADER_LEN > end:
            return None
        header = self._bytes(pos, HEADER_LEN)
        length = int.from_bytes(header[9:13], "little")
        if length < HEADER_LEN or pos + length > end:
            raise DecodeError(f"event at offset {pos} claims {length} bytes", file=self.file.name,
                              offset=pos)
        data = self._bytes(pos, length)
        self.offset = pos + length
        return RawEvent(pos, data)

    def _bytes(self, pos: int, n: int) -> bytes:
        rel = pos - self._buf_start
        if rel < 0 or rel + n > len(self._buf):
            fh = self._fh
            fh.seek(pos)  # type: ignore[attr-defined]
            want = max(n, _READ_CHUNK)
            self._buf = bytearray(fh.read(min(want, max(n, self.file.end - pos))))  # type: ignore[attr-defined]
            self._buf_start = pos
            rel = 0
            if len(self._buf) < n:
                raise DecodeError(f"file shrank: wanted {n} bytes at offset {pos}",
                                  file=self.file.name, offset=pos)
        return bytes(self._buf[rel:rel + n])


def iter_gtid_texts(files: Iterable[BinlogFile]) -> Iterator[str]:
    """Every GTID of the files, in order (tests and diagnostics)."""
    for bf in files:
        for mark in bf.gtids:
            yield mark.gtid
