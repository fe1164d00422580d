"""Generic response packets (OK, ERR, EOF) and text result sets, parse and build.

With CLIENT_DEPRECATE_EOF the EOF packets of a result set disappear: the column definitions are
followed directly by rows, and the rows end with an OK packet whose header byte is 0xFE. A row
can only start with 0xFE when it is at least 16 MiB long, which is how the two are told apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from ..binlog.constants import ColumnType
from ..errors import ProtocolError, ServerError
from . import wire
from .capabilities import BINARY_COLLATION, UTF8MB4_GENERAL_CI, Capability, ServerStatus
from .packets import MAX_PAYLOAD

OK_HEADER = 0x00
EOF_HEADER = 0xFE
ERR_HEADER = 0xFF
LOCAL_INFILE_HEADER = 0xFB


def is_ok(payload: wire.Buffer) -> bool:
    return len(payload) >= 7 and payload[0] == OK_HEADER


def is_err(payload: wire.Buffer) -> bool:
    return len(payload) >= 3 and payload[0] == ERR_HEADER


def is_eof(payload: wire.Buffer) -> bool:
    """A classic EOF packet (0xFE and shorter than 9 bytes)."""
    return len(payload) < 9 and len(payload) >= 1 and payload[0] == EOF_HEADER


def is_result_terminator(payload: wire.Buffer, capabilities: int) -> bool:
    """End of rows: an OK-with-0xFE (DEPRECATE_EOF) or a classic EOF."""
    if not payload or payload[0] != EOF_HEADER:
        return False
    if capabilities & Capability.DEPRECATE_EOF:
        return len(payload) < MAX_PAYLOAD
    return len(payload) < 9


@dataclass
class OkPacket:
    """OK_Packet: a command succeeded (also the end of a result set with DEPRECATE_EOF)."""

    affected_rows: int = 0
    last_insert_id: int = 0
    status_flags: int = ServerStatus.AUTOCOMMIT
    warnings: int = 0
    info: str = ""
    session_state: bytes = b""

    @property
    def more_results(self) -> bool:
        return bool(self.status_flags & ServerStatus.MORE_RESULTS_EXISTS)

    @classmethod
    def parse(cls, payload: wire.Buffer, capabilities: int) -> "OkPacket":
        r = wire.Reader(payload)
        header = r.u8("OK header")
        if header not in (OK_HEADER, EOF_HEADER):
            raise ProtocolError(f"expected an OK packet, got header 0x{header:02x}")
        affected = r.lenenc_int("affected rows")
        insert_id = r.lenenc_int("last insert id")
        status = warnings = 0
        if capabilities & Capability.PROTOCOL_41:
            status = r.u16("status flags")
            warnings = r.u16("warnings")
        elif capabilities & Capability.TRANSACTIONS:
            status = r.u16("status flags")
        info = b""
        state = b""
        if capabilities & Capability.SESSION_TRACK:
            if not r.at_end():
                info = r.lenenc_bytes("info")
            if status & ServerStatus.SESSION_STATE_CHANGED and not r.at_end():
                state = r.lenenc_bytes("session state")
        else:
            info = r.rest()
        return cls(affected, insert_id, status, warnings, info.decode("utf-8", "replace"), state)

    def build(self, capabilities: int, *, header: int = OK_HEADER) -> bytes:
        out = [bytes((header,)), wire.lenenc_int(self.affected_rows), wire.lenenc_int(self.last_insert_id)]
        if capabilities & Capability.PROTOCOL_41:
            out.append(wire.int2(self.status_flags) + wire.int2(self.warnings))
        elif capabilities & Capability.TRANSACTIONS:
            out.append(wire.int2(self.status_flags))
        info = self.info.encode("utf-8")
        if capabilities & Capability.SESSION_TRACK:
            if info or self.status_flags & ServerStatus.SESSION_STATE_CHANGED:
                out.append(wire.lenenc_bytes(info))
            if self.status_flags & ServerStatus.SESSION_STATE_CHANGED:
                out.append(wire.lenenc_bytes(self.session_state))
        else:
            out.append(info)
        return b"".join(out)


@dataclass
class ErrPacket:
    """ERR_Packet: a command (or the connection attempt) failed."""

    code: int
    message: str
    sql_state: str = "HY000"

    @classmethod
    def parse(cls, payload: wire.Buffer) -> "ErrPacket":
        r = wire.Reader(payload)
        if r.u8("ERR header") != ERR_HEADER:
            raise ProtocolError("expected an ERR packet")
        code = r.u16("error code")
        state = ""
        # the '#'+state marker is absent in errors sent before the handshake (e.g. "too many
        # connections") and from pre-4.1 servers
        if not r.at_end() and r.peek() == 0x23:
            r.skip(1)
            state = r.fixed(5, "SQL state").decode("ascii", "replace")
        return cls(code, r.rest().decode("utf-8", "replace"), state)

    def build(self, capabilities: int = Capability.PROTOCOL_41) -> bytes:
        out = b"\xff" + wire.int2(self.code)
        if capabilities & Capability.PROTOCOL_41:
            state = (self.sql_state or "HY000").encode("ascii")[:5].ljust(5, b"0")
            out += b"#" + state
        return out + self.message.encode("utf-8")

    def to_error(self, hint: str | None = None) -> ServerError:
        return ServerError(self.code, self.message, self.sql_state, hint=hint)


@dataclass
class EofPacket:
    """EOF_Packet (only without CLIENT_DEPRECATE_EOF)."""

    warnings: int = 0
    status_flags: int = ServerStatus.AUTOCOMMIT

    @property
    def more_results(self) -> bool:
        return bool(self.status_flags & ServerStatus.MORE_RESULTS_EXISTS)

    @classmethod
    def parse(cls, payload: wire.Buffer) -> "EofPacket":
        r = wire.Reader(payload)
        if r.u8("EOF header") != EOF_HEADER:
            raise ProtocolError("expected an EOF packet")
        if r.remaining() >= 4:
            return cls(r.u16("warnings"), r.u16("status flags"))
        return cls(0, 0)

    def build(self) -> bytes:
        return b"\xfe" + wire.int2(self.warnings) + wire.int2(self.status_flags)


def parse_terminator(payload: wire.Buffer, capabilities: int) -> OkPacket:
    """The end-of-rows packet as an OkPacket, whichever form the server used."""
    if capabilities & Capability.DEPRECATE_EOF:
        return OkPacket.parse(payload, capabilities)
    eof = EofPacket.parse(payload)
    return OkPacket(status_flags=eof.status_flags, warnings=eof.warnings)


def build_terminator(capabilities: int, status_flags: int = ServerStatus.AUTOCOMMIT, warnings: int = 0) -> bytes:
    """End of rows for a client with the given capabilities."""
    if capabilities & Capability.DEPRECATE_EOF:
        return OkPacket(status_flags=status_flags, warnings=warnings).build(capabilities, header=EOF_HEADER)
    return EofPacket(warnings, status_flags).build()


@dataclass
class ColumnDefinition:
    """Protocol::ColumnDefinition41."""

    name: str
    type: int = ColumnType.VAR_STRING
    character_set: int = UTF8MB4_GENERAL_CI
    column_length: int = 0
    flags: int = 0
    decimals: int = 0
    schema: str = ""
    table: str = ""
    org_table: str = ""
    org_name: str = ""
    catalog: str = "def"

    @property
    def is_binary(self) -> bool:
        return self.character_set == BINARY_COLLATION

    @classmethod
    def parse(cls, payload: wire.Buffer) -> "ColumnDefinition":
        r = wire.Reader(payload)
        catalog = r.lenenc_str("catalog")
        schema = r.lenenc_str("schema")
        table = r.lenenc_str("table")
        org_table = r.lenenc_str("org_table")
        name = r.lenenc_str("name")
        org_name = r.lenenc_str("org_name")
        r.lenenc_int("fixed-length fields size")
        charset = r.u16("character set")
        length = r.u32("column length")
        ctype = r.u8("column type")
        flags = r.u16("column flags")
        decimals = r.u8("decimals")
        return cls(name, ctype, charset, length, flags, decimals, schema, table, org_table, org_name, catalog)

    def build(self) -> bytes:
        return b"".join((
            wire.lenenc_str(self.catalog),
            wire.lenenc_str(self.schema),
            wire.lenenc_str(self.table),
            wire.lenenc_str(self.org_table),
            wire.lenenc_str(self.name),
            wire.lenenc_str(self.org_name or self.name),
            b"\x0c",
            wire.int2(self.character_set),
            wire.int4(self.column_length),
            wire.int1(self.type),
            wire.int2(self.flags),
            wire.int1(self.decimals),
            b"\x00\x00",
        ))


Row = tuple["str | None", ...]


@dataclass
class ResultSet:
    """A complete text result set: column definitions and rows of str (None for NULL).

    Values are decoded as UTF-8 (the connection uses utf8mb4); bytes that are not UTF-8 (binary
    columns) survive as lone surrogates ("surrogateescape"), so ``value.encode("utf-8",
    "surrogateescape")`` gives back the exact bytes.
    """

    columns: list[ColumnDefinition] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    status_flags: int = 0
    warnings: int = 0

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def parse_column_count(payload: wire.Buffer) -> int:
    value, pos = wire.read_lenenc_int(payload, 0)
    if value is None:
        raise ProtocolError("column count is NULL")
    return value


def parse_text_row(payload: wire.Buffer, ncols: int) -> Row:
    """One ProtocolText::ResultsetRow; NULL is 0xFB, every other value a length-encoded string."""
    buf = payload
    n = len(buf)
    pos = 0
    out: list[str | None] = []
    append = out.append
    try:
        for _ in range(ncols):
            first = buf[pos]  # 1-byte lengths inline: measured faster than a call per value
            if first < 0xFB:
                pos += 1
                end = pos + first
            elif first == 0xFB:
                append(None)
                pos += 1
                continue
            else:
                length, pos = wire.read_lenenc_int(buf, pos)
                end = pos + length  # type: ignore[operator]
            if end > n:
                raise ProtocolError(f"row value at offset {pos} runs past the end of the row")
            append(str(buf[pos:end], "utf-8", "surrogateescape"))
            pos = end
    except IndexError:
        raise ProtocolError(f"row has fewer than {ncols} values") from None
    if pos != n:
        raise ProtocolError(f"row has {n - pos} bytes after its {ncols} values")
    return tuple(out)


ColumnBuffers = tuple["bytes | None", bytes, bytes, int]
"""One column of split text rows as Arrow binary buffers: validity bitmap (None: no NULL),
int32 offsets, data, and the NULL count."""


def pack_text_row(out: bytearray, payload: wire.Buffer) -> None:
    """Append one text row's payload to `out` as `split_text_rows` reads it: its length
    (4 bytes, little-endian) and its bytes."""
    out += len(payload).to_bytes(4, "little")
    out += payload


def split_text_rows(buf: wire.Buffer, pos: int, ncols: int, max_rows: int,
                    max_bytes: int) -> tuple[int, int, list[ColumnBuffers]]:
    """Packed text rows (`pack_text_row`) from `pos` -> per column the Arrow buffers of a
    binary array, NULL (0xFB) as a cleared validity bit. Stops after `max_rows` rows, or
    once the rows taken hold `max_bytes` bytes or more; returns the position after them,
    their count and the columns. A row that is not exactly `ncols` values raises
    ProtocolError naming its offset. The C core's `text_columns` is the fast twin."""
    view = memoryview(buf)
    n = len(view)
    datas = [bytearray() for _ in range(ncols)]
    offs: list[list[int]] = [[0] for _ in range(ncols)]
    valid: list[list[bool]] = [[] for _ in range(ncols)]
    rows = taken = 0
    while pos < n and rows < max_rows and taken < max_bytes:
        if pos + 4 > n:
            raise ProtocolError(f"packed row at offset {pos}: its length is cut short")
        length = int.from_bytes(view[pos:pos + 4], "little")
        start = pos + 4
        end = start + length
        if end > n:
            raise ProtocolError(f"packed row at offset {pos} runs past the end of the rows")
        p = start
        for c in range(ncols):
            if p >= end:
                raise ProtocolError(f"row at offset {pos} has fewer than {ncols} values")
            first = view[p]  # 1-byte lengths inline: as in parse_text_row
            if first == 0xFB:
                p += 1
                valid[c].append(False)
                offs[c].append(len(datas[c]))
                continue
            if first < 0xFB:
                p += 1
                size = first
            else:
                got, p = wire.read_lenenc_int(view[:end], p)
                size = got or 0
            if p + size > end:
                raise ProtocolError(f"row at offset {pos}: a value runs past the end of the row")
            datas[c] += view[p:p + size]
            p += size
            valid[c].append(True)
            offs[c].append(len(datas[c]))
        if p != end:
            raise ProtocolError(f"row at offset {pos} has {end - p} bytes after its {ncols} values")
        taken += length
        rows += 1
        pos = end
    cols: list[ColumnBuffers] = []
    for c in range(ncols):
        nulls = valid[c].count(False)
        bitmap = None
        if nulls:
            bits = bytearray((rows + 7) // 8)
            for i, ok in enumerate(valid[c]):
                if ok:
                    bits[i >> 3] |= 1 << (i & 7)
            bitmap = bytes(bits)
        if len(datas[c]) >= 1 << 31:
            raise ProtocolError(f"column {c}: more than 2 GiB of values in one batch")
        cols.append((bitmap, b"".join(o.to_bytes(4, "little", signed=True) for o in offs[c]),
                     bytes(datas[c]), nulls))
    return pos, rows, cols


def encode_text_value(value: object) -> bytes:
    """A Python value as a text-protocol cell (None is NULL)."""
    if value is None:
        return b"\xfb"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return wire.lenenc_bytes(value)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, str):
        return wire.lenenc_bytes(value.encode("utf-8", "surrogateescape"))
    return wire.lenenc_bytes(str(value).encode("utf-8"))


def build_text_row(values: Iterable[object]) -> bytes:
    return b"".join(encode_text_value(v) for v in values)


def build_result_set(
    columns: Sequence[ColumnDefinition | str],
    rows: Iterable[Iterable[object]],
    capabilities: int,
    status_flags: int = ServerStatus.AUTOCOMMIT,
) -> list[bytes]:
    """All payloads of a text result set, in order, for a client with the given capabilities."""
    cols = [c if isinstance(c, ColumnDefinition) else ColumnDefinition(c) for c in columns]
    out = [wire.lenenc_int(len(cols))]
    out.extend(c.build() for c in cols)
    if not capabilities & Capability.DEPRECATE_EOF:
        out.append(EofPacket(0, status_flags).build())
    out.extend(build_text_row(r) for r in rows)
    out.append(build_terminator(capabilities, status_flags))
    return out
