"""Connection-phase packets: Initial Handshake v10, SSLRequest and HandshakeResponse41.

Both directions are here (parse and build) because binlake is a client of real servers and also
a server to replicas and tools. MariaDB differences are handled where they occur: its extended
capability word hides in reserved bytes, and its version string may carry a "5.5.5-" prefix.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ProtocolError
from . import wire
from .capabilities import CLIENT_MYSQL, Capability, UTF8MB4_GENERAL_CI

PROTOCOL_VERSION = 10
#: the prefix old MariaDB versions put before their version so that MySQL 5.x replicas accept them
MARIADB_RPL_HACK = "5.5.5-"


@dataclass
class InitialHandshake:
    """Protocol::HandshakeV10: the server's greeting."""

    server_version: str
    connection_id: int
    auth_plugin_data: bytes  # the nonce ("scramble"), without the trailing NUL
    capabilities: int
    character_set: int = UTF8MB4_GENERAL_CI
    status_flags: int = 0x0002
    auth_plugin_name: str = "mysql_native_password"
    mariadb_capabilities: int = 0  # MariaDB's extended capabilities (bits 32..63)
    protocol_version: int = PROTOCOL_VERSION

    @property
    def is_mariadb(self) -> bool:
        """MariaDB says so in its version string and by clearing CLIENT_MYSQL."""
        return "mariadb" in self.server_version.lower() or not self.capabilities & CLIENT_MYSQL

    @property
    def version(self) -> str:
        """The version string without MariaDB's replication "5.5.5-" prefix."""
        v = self.server_version
        if v.startswith(MARIADB_RPL_HACK) and "mariadb" in v.lower():
            return v[len(MARIADB_RPL_HACK):]
        return v

    @classmethod
    def parse(cls, payload: wire.Buffer) -> "InitialHandshake":
        r = wire.Reader(payload)
        proto = r.u8("protocol version")
        if proto != PROTOCOL_VERSION:
            raise ProtocolError(
                f"unsupported handshake protocol version {proto}",
                hint="binlake speaks protocol 10 (MySQL >= 4.1, MariaDB)",
            )
        version = r.nul_str("server version")
        conn_id = r.u32("connection id")
        part1 = r.fixed(8, "auth-plugin-data part 1")
        r.skip(1)
        caps = r.u16("capability flags")
        charset = 0
        status = 0
        data_len = 0
        ext = 0
        part2 = b""
        plugin = "mysql_native_password"
        if not r.at_end():
            charset = r.u8("character set")
            status = r.u16("status flags")
            caps |= r.u16("capability flags (upper)") << 16
            data_len = r.u8("auth-plugin-data length")
            if not caps & Capability.PLUGIN_AUTH:
                data_len = 0
            if caps & CLIENT_MYSQL:
                r.skip(10, "reserved")
            else:
                r.skip(6, "reserved")
                ext = r.u32("MariaDB extended capabilities")
            if caps & Capability.SECURE_CONNECTION:
                n = min(max(13, data_len - 8), r.remaining())
                part2 = r.fixed(n, "auth-plugin-data part 2")
            if caps & Capability.PLUGIN_AUTH:
                plugin = r.nul_bytes_or_rest().decode("ascii", "replace")
        nonce = part1 + part2
        if nonce.endswith(b"\x00"):
            nonce = nonce[:-1]
        return cls(
            server_version=version,
            connection_id=conn_id,
            auth_plugin_data=nonce,
            capabilities=caps,
            character_set=charset,
            status_flags=status,
            auth_plugin_name=plugin,
            mariadb_capabilities=ext,
            protocol_version=proto,
        )

    def build(self) -> bytes:
        caps = self.capabilities
        data = self.auth_plugin_data + b"\x00"
        if len(data) < 9:
            raise ValueError("auth_plugin_data must be at least 8 bytes")
        part2 = data[8:]
        if len(part2) < 13:
            part2 = part2 + b"\x00" * (13 - len(part2))
        out = [
            bytes((self.protocol_version,)),
            wire.nul_str(self.server_version),
            wire.int4(self.connection_id),
            data[:8],
            b"\x00",
            wire.int2(caps & 0xFFFF),
            wire.int1(self.character_set),
            wire.int2(self.status_flags),
            wire.int2(caps >> 16),
            wire.int1(len(data) if caps & Capability.PLUGIN_AUTH else 0),
        ]
        if caps & CLIENT_MYSQL:
            out.append(b"\x00" * 10)
        else:
            out.append(b"\x00" * 6 + wire.int4(self.mariadb_capabilities))
        if caps & Capability.SECURE_CONNECTION:
            out.append(part2)
        if caps & Capability.PLUGIN_AUTH:
            out.append(wire.nul_str(self.auth_plugin_name))
        return b"".join(out)


def _fixed_prefix(capabilities: int, max_packet_size: int, character_set: int, mariadb_capabilities: int) -> bytes:
    """The 32 bytes that open both the SSLRequest and the HandshakeResponse41."""
    return (
        wire.int4(capabilities)
        + wire.int4(max_packet_size)
        + wire.int1(character_set)
        + b"\x00" * 19
        + wire.int4(mariadb_capabilities)
    )


SSL_REQUEST_SIZE = 32


@dataclass
class SSLRequest:
    """Protocol::SSLRequest: the truncated response a client sends before starting TLS."""

    capabilities: int
    max_packet_size: int = 1 << 24
    character_set: int = UTF8MB4_GENERAL_CI
    mariadb_capabilities: int = 0

    def build(self) -> bytes:
        return _fixed_prefix(self.capabilities | Capability.SSL, self.max_packet_size,
                             self.character_set, self.mariadb_capabilities)

    @staticmethod
    def matches(payload: wire.Buffer) -> bool:
        """True if a client's first packet is an SSLRequest rather than a full response."""
        return len(payload) == SSL_REQUEST_SIZE and bool(payload[1] & (Capability.SSL >> 8))

    @classmethod
    def parse(cls, payload: wire.Buffer) -> "SSLRequest":
        r = wire.Reader(payload)
        caps = r.u32("capability flags")
        max_packet = r.u32("max packet size")
        charset = r.u8("character set")
        r.skip(19)
        ext = r.u32("extended capabilities")
        return cls(caps, max_packet, charset, ext)


@dataclass
class HandshakeResponse:
    """Protocol::HandshakeResponse41: the client's identity and first auth data."""

    capabilities: int
    username: str
    auth_response: bytes = b""
    database: str | None = None
    auth_plugin_name: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    max_packet_size: int = 1 << 24
    character_set: int = UTF8MB4_GENERAL_CI
    mariadb_capabilities: int = 0
    zstd_level: int | None = None

    def __repr__(self) -> str:
        # auth data is derived from the password: never show it
        return (f"HandshakeResponse(user={self.username!r}, database={self.database!r}, "
                f"plugin={self.auth_plugin_name!r}, capabilities=0x{self.capabilities:08x})")

    def build(self) -> bytes:
        caps = self.capabilities
        if self.database:
            caps |= Capability.CONNECT_WITH_DB
        out = [
            _fixed_prefix(caps, self.max_packet_size, self.character_set, self.mariadb_capabilities),
            wire.nul_str(self.username),
        ]
        if caps & Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA:
            out.append(wire.lenenc_bytes(self.auth_response))
        elif caps & Capability.SECURE_CONNECTION:
            if len(self.auth_response) > 255:
                raise ValueError("auth response longer than 255 bytes needs PLUGIN_AUTH_LENENC_CLIENT_DATA")
            out.append(wire.int1(len(self.auth_response)) + self.auth_response)
        else:
            out.append(wire.nul_bytes(self.auth_response))
        if caps & Capability.CONNECT_WITH_DB:
            out.append(wire.nul_str(self.database or ""))
        if caps & Capability.PLUGIN_AUTH:
            out.append(wire.nul_str(self.auth_plugin_name or ""))
        if caps & Capability.CONNECT_ATTRS:
            attrs = b"".join(wire.lenenc_str(k) + wire.lenenc_str(v) for k, v in self.attributes.items())
            out.append(wire.lenenc_bytes(attrs))
        if caps & Capability.ZSTD_COMPRESSION_ALGORITHM:
            out.append(wire.int1(self.zstd_level or 3))
        return b"".join(out)

    @classmethod
    def parse(cls, payload: wire.Buffer) -> "HandshakeResponse":
        r = wire.Reader(payload)
        caps = r.u32("capability flags")
        if not caps & Capability.PROTOCOL_41:
            raise ProtocolError("client uses the pre-4.1 handshake response", hint="upgrade the client")
        max_packet = r.u32("max packet size")
        charset = r.u8("character set")
        r.skip(19)
        ext = r.u32("extended capabilities")
        user = r.nul_str("user name")
        if caps & Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA:
            auth = r.lenenc_bytes("auth response")
        elif caps & Capability.SECURE_CONNECTION:
            auth = r.fixed(r.u8("auth response length"), "auth response")
        else:
            auth = r.nul_bytes("auth response")
        database = None
        if caps & Capability.CONNECT_WITH_DB and not r.at_end():
            database = r.nul_str("database")
        plugin = None
        if caps & Capability.PLUGIN_AUTH and not r.at_end():
            plugin = r.nul_bytes_or_rest().decode("ascii", "replace")
        attrs: dict[str, str] = {}
        if caps & Capability.CONNECT_ATTRS and not r.at_end():
            block = wire.Reader(r.lenenc_bytes("connection attributes"))
            while not block.at_end():
                key = block.lenenc_str("attribute name")
                attrs[key] = block.lenenc_str("attribute value")
        zstd = None
        if caps & Capability.ZSTD_COMPRESSION_ALGORITHM and not r.at_end():
            zstd = r.u8("zstd level")
        return cls(
            capabilities=caps,
            username=user,
            auth_response=auth,
            database=database,
            auth_plugin_name=plugin,
            attributes=attrs,
            max_packet_size=max_packet,
            character_set=charset,
            mariadb_capabilities=ext,
            zstd_level=zstd,
        )
