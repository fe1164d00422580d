"""GTID positions for both server families, as plain immutable values (no I/O).

MySQL: a GTID is ``uuid[:tag]:gno``; a position is a *set* of GTIDs, kept per (uuid, tag) as
merged half-open intervals, because replicas resume by telling the source which
transactions they already have (COM_BINLOG_DUMP_GTID carries that set in binary form).

MariaDB: a GTID is ``domain-server-seq``; a position is one GTID *per replication domain*
(like ``@@gtid_slave_pos``), because the primary finds the last applied GTID of each domain
in its binlog and resumes right after it.

Text input that does not parse raises :class:`binlake.errors.ConfigError` (it comes from users
and config files); binary input raises DecodeError / ProtocolError.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

from ..binlog.wire import Buffer, u64
from ..errors import BinlakeError, ConfigError, DecodeError, ProtocolError
from .._util.lazy_re import LazyPattern
from .encoding import read_varlen_unsigned, write_varlen_unsigned

if TYPE_CHECKING:
    from ..binlog.events import GtidEvent, MariaGtidEvent, MariaGtidListEvent, PreviousGtidsEvent

__all__ = [
    "GNO_MAX",
    "GtidOrderError",
    "MariaGtid",
    "MariaGtidState",
    "MySQLGtidSet",
    "decode_gtid_set_encoding",
    "format_uuid",
    "normalize_tag",
    "normalize_uuid",
    "parse_gtid",
]

GNO_MAX = (1 << 63) - 2
"""Largest valid MySQL GNO (the server treats INT64_MAX as one-past-the-end)."""
TAG_MAX_LEN = 32
_U32_MAX = (1 << 32) - 1
_U64_MAX = (1 << 64) - 1

# Format marker that MySQL 8.3+ stores in the top byte (and, for "tagged", the low byte)
# of the 8-byte n_sids field of an encoded GTID set.
_FORMAT_UNTAGGED = 0
_FORMAT_TAGGED = 1

_UUID_RE = LazyPattern(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_TAG_RE = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_INTERVAL_RE = LazyPattern(r"([0-9]+)(?:\s*-\s*([0-9]+))?")

Key = tuple[str, str]  # (uuid, tag); tag "" = untagged
Intervals = tuple[tuple[int, int], ...]  # sorted, disjoint, non-adjacent [start, end)


class GtidOrderError(BinlakeError):
    """A MariaDB GTID arrived out of order for its domain while strict ordering was asked for
    (the same condition that makes ``gtid_strict_mode`` stop replication)."""


# --------------------------------------------------------------------------------------------
# MySQL: names

def normalize_uuid(text: str) -> str:
    """Canonical lowercase dashed form; accepts the 32-hex-digit form too (as MySQL does)."""
    s = text.strip()
    if not _UUID_RE.fullmatch(s):
        raise ConfigError(f"invalid server UUID {text!r}: expected 8-4-4-4-12 hex digits")
    h = s.replace("-", "").lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def format_uuid(raw: Buffer) -> str:
    """Dashed lowercase text of 16 raw UUID bytes."""
    h = bytes(raw).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def normalize_tag(tag: str | None) -> str:
    """A MySQL 8.4 GTID tag, lowercased (tags compare case-insensitively); "" for none.

    A tag is a letter or underscore followed by up to 31 letters, digits or underscores.
    """
    if tag is None:
        return ""
    t = tag.strip()
    if t == "":
        return ""
    if not _TAG_RE.fullmatch(t):
        raise ConfigError(
            f"invalid GTID tag {tag!r}: a tag is 1-32 characters [a-z0-9_], not starting with a digit")
    return t.lower()


def _check_gno(gno: int, what: str) -> int:
    if not isinstance(gno, int) or isinstance(gno, bool) or not 1 <= gno <= GNO_MAX:
        raise ConfigError(f"invalid GNO {gno!r} in {what}: must be between 1 and {GNO_MAX}")
    return gno


def parse_gtid(text: str) -> tuple[str, str | None, int]:
    """Parse one MySQL GTID, ``uuid:gno`` or ``uuid:tag:gno``, into (uuid, tag or None, gno)."""
    parts = text.strip().split(":")
    if len(parts) == 2:
        uuid_s, tag_s, gno_s = parts[0], "", parts[1]
    elif len(parts) == 3:
        uuid_s, tag_s, gno_s = parts
        if tag_s.strip() == "":
            raise ConfigError(f"invalid GTID {text!r}: empty tag")
    else:
        raise ConfigError(f"invalid GTID {text!r}: expected uuid:gno or uuid:tag:gno")
    uuid = normalize_uuid(uuid_s)
    tag = normalize_tag(tag_s)
    g = gno_s.strip()
    if not g.isdigit() or not g.isascii():
        raise ConfigError(f"invalid GTID {text!r}: GNO {gno_s!r} is not a number")
    return uuid, (tag or None), _check_gno(int(g), repr(text))


# --------------------------------------------------------------------------------------------
# MySQL: interval arithmetic on sorted, disjoint, non-adjacent half-open intervals

def _normalize(intervals: Iterable[tuple[int, int]]) -> Intervals:
    """Sort and merge overlapping or touching intervals."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return tuple((s, e) for s, e in out)


def _subtract(a: Intervals, b: Intervals) -> Intervals:
    out: list[tuple[int, int]] = []
    j = 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            bs, be = b[k]
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
            if cur >= e:
                break
            k += 1
        if cur < e:
            out.append((cur, e))
    return tuple(out)


def _covers(a: Intervals, b: Intervals) -> bool:
    """Whether every interval of b lies inside a (both normalized)."""
    j = 0
    for s, e in b:
        while j < len(a) and a[j][1] <= s:
            j += 1
        if j == len(a) or a[j][0] > s or a[j][1] < e:
            return False
    return True


def _format_intervals(ivs: Intervals) -> str:
    return ":".join(str(s) if e == s + 1 else f"{s}-{e - 1}" for s, e in ivs)


# --------------------------------------------------------------------------------------------
# MySQL: the set

class MySQLGtidSet:
    """An immutable MySQL GTID set (``@@gtid_executed`` and friends), tags included.

    Text form: ``uuid:1-5:7,uuid2:tag:1-3`` (MySQL 8.4 puts a tag before the intervals that
    belong to it: ``uuid:1-5:tag_a:1-2``). Output is canonical: uuids and tags lowercase, uuids
    sorted, untagged intervals first, then tags in order, intervals merged; so equal sets
    print equally.
    """

    __slots__ = ("_map", "_hash")

    _map: dict[Key, Intervals]
    _hash: int | None

    def __init__(self, text: str | "MySQLGtidSet" | None = None) -> None:
        if text is None:
            self._map = {}
        elif isinstance(text, MySQLGtidSet):
            self._map = text._map
        elif isinstance(text, str):
            self._map = dict(sorted(_parse_set_text(text).items()))
        else:
            raise ConfigError(f"a GTID set is given as text, not {type(text).__name__}")
        self._hash = None

    # ---- construction
    @classmethod
    def _from_map(cls, m: Mapping[Key, Intervals]) -> "MySQLGtidSet":
        obj = cls.__new__(cls)
        obj._map = {k: v for k, v in sorted(m.items()) if v}
        obj._hash = None
        return obj

    @classmethod
    def parse(cls, text: str) -> "MySQLGtidSet":
        """Parse the text form; an empty string is the empty set."""
        return cls(text)

    @classmethod
    def from_intervals(cls, items: Iterable[tuple[str, str | None, int, int]]) -> "MySQLGtidSet":
        """Build from (uuid, tag, first_gno, last_gno) rows, last inclusive."""
        acc: dict[Key, list[tuple[int, int]]] = {}
        for uuid, tag, first, last in items:
            key = (normalize_uuid(uuid), normalize_tag(tag))
            _check_gno(first, "interval start")
            _check_gno(last, "interval end")
            if last < first:
                raise ConfigError(f"invalid GTID interval {first}-{last}: end before start")
            acc.setdefault(key, []).append((first, last + 1))
        return cls._from_map({k: _normalize(v) for k, v in acc.items()})

    @classmethod
    def from_previous_gtids(cls, source: "PreviousGtidsEvent | str | bytes | bytearray | memoryview") -> "MySQLGtidSet":
        """The set a PREVIOUS_GTIDS event announces (the event, its text, or its raw body)."""
        if isinstance(source, (bytes, bytearray, memoryview)):
            return decode_gtid_set_encoding(source, what="PREVIOUS_GTIDS")
        if isinstance(source, str):
            return cls(source)
        return cls(source.gtid_set)

    # ---- text
    def __str__(self) -> str:
        groups: dict[str, list[str]] = {}
        for (uuid, tag), ivs in self._map.items():  # keys are kept sorted
            part = _format_intervals(ivs)
            groups.setdefault(uuid, []).append(f"{tag}:{part}" if tag else part)
        return ",".join(f"{uuid}:{':'.join(parts)}" for uuid, parts in groups.items())

    def __repr__(self) -> str:
        return f"MySQLGtidSet({str(self)!r})"

    # ---- value semantics
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MySQLGtidSet):
            return NotImplemented
        return self._map == other._map

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._map.items()))
        return self._hash

    def __bool__(self) -> bool:
        return bool(self._map)

    def __iter__(self) -> Iterator[tuple[str, str | None, int, int]]:
        """(uuid, tag or None, first_gno, last_gno) per interval, last inclusive, in order."""
        for (uuid, tag), ivs in self._map.items():
            for s, e in ivs:
                yield uuid, (tag or None), s, e - 1

    def count(self) -> int:
        """Number of GTIDs in the set (may exceed sys.maxsize, hence not __len__)."""
        return sum(e - s for ivs in self._map.values() for s, e in ivs)

    def keys(self) -> list[tuple[str, str | None]]:
        """The (uuid, tag or None) pairs that hold at least one GTID."""
        return [(u, t or None) for (u, t) in self._map]

    def intervals(self, uuid: str, tag: str | None = None) -> list[tuple[int, int]]:
        """Inclusive (first, last) GNO ranges for one uuid/tag."""
        key = (normalize_uuid(uuid), normalize_tag(tag))
        return [(s, e - 1) for s, e in self._map.get(key, ())]

    def last_gno(self, uuid: str, tag: str | None = None) -> int | None:
        ivs = self._map.get((normalize_uuid(uuid), normalize_tag(tag)))
        return ivs[-1][1] - 1 if ivs else None

    def missing_before(self, uuid: str, gno: int, tag: str | None = None) -> tuple[int, int] | None:
        """The (first, last) GNOs this set lacks between its highest GNO of uuid[:tag] and
        `gno`: the hole that adding `gno` would open; None when gno follows on, fills an
        earlier gap, or the source is new to the set."""
        last = self.last_gno(uuid, tag)
        if last is None or gno <= last + 1:
            return None
        return last + 1, gno - 1

    @property
    def is_tagged(self) -> bool:
        return any(tag for _, tag in self._map)

    # ---- arithmetic
    @staticmethod
    def _coerce(other: "MySQLGtidSet | str") -> "MySQLGtidSet":
        if isinstance(other, MySQLGtidSet):
            return other
        if isinstance(other, str):
            return MySQLGtidSet(other)
        raise ConfigError(f"expected a GTID set or its text, got {type(other).__name__}")

    def union(self, *others: "MySQLGtidSet | str") -> "MySQLGtidSet":
        acc: dict[Key, list[tuple[int, int]]] = {k: list(v) for k, v in self._map.items()}
        for o in others:
            for k, v in self._coerce(o)._map.items():
                acc.setdefault(k, []).extend(v)
        return self._from_map({k: _normalize(v) for k, v in acc.items()})

    def subtract(self, other: "MySQLGtidSet | str") -> "MySQLGtidSet":
        o = self._coerce(other)._map
        return self._from_map({k: (_subtract(v, o[k]) if k in o else v) for k, v in self._map.items()})

    def intersection(self, other: "MySQLGtidSet | str") -> "MySQLGtidSet":
        return self.subtract(self.subtract(other))

    def add(self, uuid: str, gno: int, tag: str | None = None) -> "MySQLGtidSet":
        """A new set with one more GTID (what a replica does after applying a transaction)."""
        key = (normalize_uuid(uuid), normalize_tag(tag))
        _check_gno(gno, f"{key[0]}:{gno}")
        m = dict(self._map)
        m[key] = _normalize(list(m.get(key, ())) + [(gno, gno + 1)])
        return self._from_map(m)

    def add_gtid(self, gtid: "str | GtidEvent") -> "MySQLGtidSet":
        """Add ``uuid[:tag]:gno`` text, or the GTID a GtidEvent starts (anonymous: unchanged)."""
        if isinstance(gtid, str):
            uuid, tag, gno = parse_gtid(gtid)
            return self.add(uuid, gno, tag)
        if gtid.anonymous or gtid.uuid is None:
            return self
        return self.add(gtid.uuid, gtid.gno, gtid.tag)

    def issubset(self, other: "MySQLGtidSet | str") -> bool:
        o = self._coerce(other)._map
        return all(k in o and _covers(o[k], v) for k, v in self._map.items())

    def contains(self, item: "MySQLGtidSet | str | tuple[str, str | None, int] | GtidEvent") -> bool:
        """Whether a GTID, or every GTID of a set, is in this set.

        Accepts a set, set text (a single ``uuid[:tag]:gno`` is valid set text), a
        (uuid, tag, gno) tuple or a GtidEvent (anonymous transactions are never contained).
        """
        if isinstance(item, tuple):
            uuid, tag, gno = item
            key = (normalize_uuid(uuid), normalize_tag(tag))
            _check_gno(gno, "contains()")
            return _covers(self._map.get(key, ()), ((gno, gno + 1),))
        if isinstance(item, (MySQLGtidSet, str)):
            return self._coerce(item).issubset(self)
        if not hasattr(item, "gno"):
            raise ConfigError(f"contains() takes a GTID, a GTID set or a GtidEvent, not {type(item).__name__}")
        if item.anonymous or item.uuid is None:
            return False
        return self.contains((item.uuid, item.tag, item.gno))

    __or__ = union
    __sub__ = subtract
    __and__ = intersection
    __contains__ = contains

    def __le__(self, other: "MySQLGtidSet") -> bool:
        return self.issubset(other)

    def __ge__(self, other: "MySQLGtidSet") -> bool:
        return self._coerce(other).issubset(self)

    # ---- binary form (PREVIOUS_GTIDS body, COM_BINLOG_DUMP_GTID data)
    def encoded_length(self) -> int:
        tagged = self.is_tagged
        n = 8
        for (_, tag), ivs in self._map.items():
            n += 16 + 8 + 16 * len(ivs)
            if tagged:
                n += len(write_varlen_unsigned(len(tag))) + len(tag)
        return n

    def encode_for_dump(self) -> bytes:
        """The GTID-set bytes of COM_BINLOG_DUMP_GTID (``data`` after ``data_size``).

        Same layout as a PREVIOUS_GTIDS body (MySQL's Gtid_set::encode): n_sids (8 LE), then
        per (uuid, tag): uuid (16), n_intervals (8 LE), (start, end_exclusive) 8+8 LE each.
        When any tag is present, MySQL 8.3+ uses the *tagged* layout: the n_sids word becomes
        ``1<<56 | n_sids<<8 | 1`` and every uuid is followed by its tag as a
        mysql::serialization string (varint length, bytes; untagged entries get length 0).
        Servers before 8.3 reject the tagged layout, so only send tags to 8.3+ sources.
        """
        tagged = self.is_tagged
        n = len(self._map)
        out = bytearray()
        if tagged:
            out += ((_FORMAT_TAGGED << 56) | (n << 8) | _FORMAT_TAGGED).to_bytes(8, "little")
        else:
            out += n.to_bytes(8, "little")
        for (uuid, tag), ivs in self._map.items():
            out += bytes.fromhex(uuid.replace("-", ""))
            if tagged:
                tb = tag.encode("ascii")
                out += write_varlen_unsigned(len(tb)) + tb
            out += len(ivs).to_bytes(8, "little")
            for s, e in ivs:
                out += s.to_bytes(8, "little") + e.to_bytes(8, "little")
        return bytes(out)

    @classmethod
    def decode_dump_encoding(cls, data: Buffer) -> "MySQLGtidSet":
        """Read the GTID set a replica sent in COM_BINLOG_DUMP_GTID (either layout).

        Malformed data raises ProtocolError (the peer broke the protocol), with the reason.
        """
        try:
            return decode_gtid_set_encoding(data, what="COM_BINLOG_DUMP_GTID GTID set")
        except DecodeError as exc:
            raise ProtocolError(exc.reason) from exc


def _parse_set_text(text: str) -> dict[Key, Intervals]:
    if not isinstance(text, str):
        raise ConfigError(f"a GTID set is given as text, not {type(text).__name__}")
    acc: dict[Key, list[tuple[int, int]]] = {}
    if text.strip() == "":
        return {}
    for segment in text.split(","):
        seg = segment.strip()
        if seg == "":
            raise ConfigError(f"invalid GTID set {text!r}: empty entry between commas")
        parts = seg.split(":")
        uuid = normalize_uuid(parts[0])
        if len(parts) == 1:
            raise ConfigError(f"invalid GTID set {text!r}: {parts[0].strip()!r} has no GNO intervals")
        tag = ""
        pending_tag = False
        for raw_part in parts[1:]:
            p = raw_part.strip()
            m = _INTERVAL_RE.fullmatch(p)
            if m and p.isascii():
                first = int(m.group(1))
                last = int(m.group(2)) if m.group(2) is not None else first
                _check_gno(first, repr(seg))
                _check_gno(last, repr(seg))
                if last < first:
                    raise ConfigError(f"invalid GTID set {text!r}: interval {p!r} ends before it starts")
                acc.setdefault((uuid, tag), []).append((first, last + 1))
                pending_tag = False
                continue
            if p == "":
                raise ConfigError(f"invalid GTID set {text!r}: empty field after ':' in {seg!r}")
            if pending_tag:
                raise ConfigError(f"invalid GTID set {text!r}: tag {tag!r} has no GNO intervals")
            if p[0].isdigit():
                raise ConfigError(f"invalid GTID set {text!r}: {p!r} is neither a GNO interval nor a tag")
            try:
                tag = normalize_tag(p)
            except ConfigError as exc:
                raise ConfigError(f"invalid GTID set {text!r}: {exc}") from None
            pending_tag = True
        if pending_tag:
            raise ConfigError(f"invalid GTID set {text!r}: tag {tag!r} has no GNO intervals")
    return {k: _normalize(v) for k, v in acc.items()}


def decode_gtid_set_encoding(buf: Buffer, *, what: str = "GTID set") -> MySQLGtidSet:
    """Decode MySQL's binary GTID set (Gtid_set::encode), untagged or 8.3+ tagged layout.

    Raises DecodeError; like the server it insists on strictly increasing,
    non-touching intervals per entry and on no bytes after the last entry.
    """
    word, pos = u64(buf, 0, f"{what} n_sids")
    fmt = word >> 56
    if fmt == _FORMAT_UNTAGGED:
        n_sids = word & ((1 << 56) - 1)
        tagged = False
    elif fmt == _FORMAT_TAGGED:
        n_sids = (word >> 8) & ((1 << 48) - 1)
        tagged = True
    else:
        raise DecodeError(f"{what}: unknown encoding format {fmt} in n_sids word 0x{word:016x}")
    acc: dict[Key, list[tuple[int, int]]] = {}
    for i in range(n_sids):
        if len(buf) - pos < 16 + 8:
            raise DecodeError(
                f"{what}: entry {i} of {n_sids} needs at least 24 bytes at offset {pos}, "
                f"{len(buf) - pos} left")
        uuid = format_uuid(buf[pos:pos + 16])
        pos += 16
        tag = ""
        if tagged:
            tag_len, pos = read_varlen_unsigned(buf, pos, f"{what} tag length")
            if tag_len > TAG_MAX_LEN:
                raise DecodeError(f"{what}: tag length {tag_len} exceeds {TAG_MAX_LEN}")
            if len(buf) - pos < tag_len:
                raise DecodeError(f"{what}: tag of {tag_len} bytes runs past the end")
            raw_tag = bytes(buf[pos:pos + tag_len])
            pos += tag_len
            tag = _decode_tag_bytes(raw_tag, what)
        n_iv, pos = u64(buf, pos, f"{what} n_intervals")
        if n_iv > (len(buf) - pos) // 16:
            raise DecodeError(
                f"{what}: {n_iv} intervals for {uuid} need {n_iv * 16} bytes, {len(buf) - pos} left")
        last = 0
        ivs = acc.setdefault((uuid, tag), [])
        for _ in range(n_iv):
            start = int.from_bytes(buf[pos:pos + 8], "little", signed=True)
            end = int.from_bytes(buf[pos + 8:pos + 16], "little", signed=True)
            pos += 16
            if start <= last or end <= start:
                raise DecodeError(
                    f"{what}: interval [{start}, {end}) for {uuid} is empty or not after {last}")
            last = end
            ivs.append((start, end))
    if pos != len(buf):
        raise DecodeError(f"{what}: {len(buf) - pos} unexpected bytes after the last entry")
    return MySQLGtidSet._from_map({k: _normalize(v) for k, v in acc.items()})


def _decode_tag_bytes(raw: bytes, what: str) -> str:
    try:
        t = raw.decode("ascii")
    except UnicodeDecodeError:
        raise DecodeError(f"{what}: tag {raw!r} is not ASCII") from None
    if t == "":
        return ""
    if not _TAG_RE.fullmatch(t):
        raise DecodeError(f"{what}: invalid tag {t!r}")
    return t.lower()


# --------------------------------------------------------------------------------------------
# MariaDB

@dataclass(frozen=True, slots=True, order=True)
class MariaGtid:
    """One MariaDB GTID, ``domain-server-seq`` (domain and server 32-bit, seq 64-bit)."""

    domain_id: int
    server_id: int
    seq_no: int

    def __post_init__(self) -> None:
        for name, val, top in (("domain_id", self.domain_id, _U32_MAX),
                               ("server_id", self.server_id, _U32_MAX),
                               ("seq_no", self.seq_no, _U64_MAX)):
            if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val <= top:
                raise ConfigError(f"invalid MariaDB GTID {name} {val!r}: must be 0..{top}")

    @classmethod
    def parse(cls, text: str) -> "MariaGtid":
        parts = text.strip().split("-")
        if len(parts) != 3 or not all(p.strip().isdigit() and p.strip().isascii() for p in parts):
            raise ConfigError(f"invalid MariaDB GTID {text!r}: expected domain-server-seq, e.g. 0-1-100")
        return cls(int(parts[0]), int(parts[1]), int(parts[2]))

    @classmethod
    def of(cls, event: "MariaGtidEvent") -> "MariaGtid":
        return cls(event.domain_id, event.server_id, event.seq_no)

    def __str__(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


class MariaGtidState:
    """A MariaDB replication position: the last GTID per domain (``@@gtid_slave_pos`` form).

    Text: ``0-1-100,1-2-5`` (comma separated, printed sorted by domain; one GTID per domain).

    Ordering: within a domain, sequence numbers grow when the servers run with
    ``gtid_strict_mode=ON``; then ``contains`` is exact. Without strict mode a domain may
    receive a lower seq_no later (multi-source setups writing into one domain); ``update``
    still records the GTID it is given, because that is what the primary must find in its
    binlog to resume, and ``contains`` (seq_no comparison) becomes an approximation.
    ``update(..., strict=True)`` raises GtidOrderError on such a step instead.
    """

    __slots__ = ("_domains",)

    _domains: dict[int, MariaGtid]

    def __init__(self, gtids: "str | Iterable[MariaGtid | str | tuple[int, int, int]] | None" = None) -> None:
        self._domains = {}
        if gtids is None:
            return
        if isinstance(gtids, str):
            items: list[MariaGtid] = [] if gtids.strip() == "" else [
                MariaGtid.parse(p) if p.strip() else _empty_entry(gtids) for p in gtids.split(",")]
        else:
            items = [_as_maria(g) for g in gtids]
        for g in items:
            if g.domain_id in self._domains:
                raise ConfigError(
                    f"MariaDB GTID position has two GTIDs for domain {g.domain_id} "
                    f"({self._domains[g.domain_id]} and {g}); give one per domain")
            self._domains[g.domain_id] = g

    @classmethod
    def parse(cls, text: str) -> "MariaGtidState":
        return cls(text)

    @classmethod
    def from_gtid_list(cls, source: "MariaGtidListEvent | Iterable[tuple[int, int, int]]") -> "MariaGtidState":
        """The position a GTID_LIST event describes: per domain, its *last* entry.

        The server lists several (domain, server) entries per domain; the last one of a
        domain is the most recent GTID binlogged in it.
        """
        rows = source.gtids if hasattr(source, "gtids") else source
        doms: dict[int, MariaGtid] = {}
        for d, s, q in rows:
            doms[d] = MariaGtid(d, s, q)
        return cls._from_dict(doms)

    @classmethod
    def _from_dict(cls, doms: Mapping[int, MariaGtid]) -> "MariaGtidState":
        obj = cls.__new__(cls)
        obj._domains = dict(doms)
        return obj

    def __str__(self) -> str:
        return ",".join(str(self._domains[d]) for d in sorted(self._domains))

    def __repr__(self) -> str:
        return f"MariaGtidState({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MariaGtidState):
            return NotImplemented
        return self._domains == other._domains

    def __hash__(self) -> int:
        return hash(frozenset(self._domains.values()))

    def __bool__(self) -> bool:
        return bool(self._domains)

    def __len__(self) -> int:
        return len(self._domains)

    def __iter__(self) -> Iterator[MariaGtid]:
        return iter(sorted(self._domains.values()))

    def get(self, domain_id: int) -> MariaGtid | None:
        return self._domains.get(domain_id)

    @property
    def domains(self) -> list[int]:
        return sorted(self._domains)

    def update(self, domain_id: "int | MariaGtid | str", server_id: int | None = None,
               seq_no: int | None = None, *, strict: bool = False) -> "MariaGtidState":
        """A new state where this GTID is the newest of its domain (the last applied one).

        Takes (domain, server, seq), a MariaGtid or its text. With strict=True a seq_no not
        above the domain's current one raises GtidOrderError (gtid_strict_mode semantics).
        """
        if isinstance(domain_id, (MariaGtid, str)):
            g = _as_maria(domain_id)
        else:
            if server_id is None or seq_no is None:
                raise ConfigError("update() needs domain_id, server_id and seq_no")
            g = MariaGtid(domain_id, server_id, seq_no)
        cur = self._domains.get(g.domain_id)
        if strict and cur is not None and g.seq_no <= cur.seq_no:
            raise GtidOrderError(
                f"GTID {g} is not after {cur} in domain {g.domain_id} (out of order under strict mode)")
        doms = dict(self._domains)
        doms[g.domain_id] = g
        return self._from_dict(doms)

    def apply(self, event: "MariaGtidEvent", *, strict: bool = False) -> "MariaGtidState":
        """update() from a decoded MARIADB_GTID event."""
        return self.update(MariaGtid.of(event), strict=strict)

    def contains(self, gtid: "MariaGtid | str | tuple[int, int, int] | MariaGtidEvent") -> bool:
        """Whether a GTID is at or before this position in its domain (seq_no <= ours).

        Exact under gtid_strict_mode; see the class notes otherwise.
        """
        if hasattr(gtid, "domain_id") and not isinstance(gtid, MariaGtid):
            g = MariaGtid.of(gtid)  # type: ignore[arg-type]
        else:
            g = _as_maria(gtid)
        cur = self._domains.get(g.domain_id)
        return cur is not None and g.seq_no <= cur.seq_no

    __contains__ = contains

    def union(self, *others: "MariaGtidState | str") -> "MariaGtidState":
        """Per domain, the GTID with the highest seq_no (ties keep the left operand's)."""
        doms = dict(self._domains)
        for o in others:
            other = o if isinstance(o, MariaGtidState) else MariaGtidState(o)
            for d, g in other._domains.items():
                cur = doms.get(d)
                if cur is None or g.seq_no > cur.seq_no:
                    doms[d] = g
        return self._from_dict(doms)

    __or__ = union


def _empty_entry(text: str) -> MariaGtid:
    raise ConfigError(f"invalid MariaDB GTID position {text!r}: empty entry between commas")


def _as_maria(g: "MariaGtid | str | tuple[int, int, int]") -> MariaGtid:
    if isinstance(g, MariaGtid):
        return g
    if isinstance(g, str):
        return MariaGtid.parse(g)
    if isinstance(g, tuple) and len(g) == 3:
        return MariaGtid(*g)
    raise ConfigError(f"expected a MariaDB GTID (text, MariaGtid or tuple), got {g!r}")
