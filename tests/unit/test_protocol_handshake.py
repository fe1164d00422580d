"""Greeting, SSLRequest and HandshakeResponse41: both directions, MySQL and MariaDB layouts."""
from __future__ import annotations

import pytest

from binlake.errors import ProtocolError
from binlake.protocol import wire
from binlake.protocol.capabilities import (
    CLIENT_MYSQL,
    DEFAULT_CLIENT_CAPABILITIES,
    DEFAULT_SERVER_CAPABILITIES,
    Capability,
)
from binlake.protocol.handshake import HandshakeResponse, InitialHandshake, SSLRequest

NONCE = bytes(range(1, 21))


def test_mysql_greeting_round_trip() -> None:
    hs = InitialHandshake("8.0.36", 42, NONCE, int(DEFAULT_SERVER_CAPABILITIES | Capability.SSL),
                          255, 2, "caching_sha2_password")
    data = hs.build()
    assert data[0] == 10
    back = InitialHandshake.parse(data)
    assert back == hs
    assert not back.is_mariadb and back.version == "8.0.36"


def test_mariadb_greeting_with_extended_caps_and_prefix() -> None:
    caps = int(DEFAULT_SERVER_CAPABILITIES) & ~CLIENT_MYSQL
    hs = InitialHandshake("5.5.5-10.11.6-MariaDB-log", 7, NONCE, caps, 45, 2,
                          "mysql_native_password", mariadb_capabilities=0x1D)
    back = InitialHandshake.parse(hs.build())
    assert back.mariadb_capabilities == 0x1D
    assert back.is_mariadb
    assert back.version == "10.11.6-MariaDB-log"
    assert back.auth_plugin_data == NONCE


def test_greeting_hand_built_bytes() -> None:
    """Bytes laid out field by field as the protocol documentation describes them."""
    caps = Capability.PROTOCOL_41 | Capability.SECURE_CONNECTION | Capability.PLUGIN_AUTH | CLIENT_MYSQL
    data = (b"\x0a" + b"8.0.1\x00" + wire.int4(9) + NONCE[:8] + b"\x00" + wire.int2(caps & 0xFFFF)
            + b"\x21" + wire.int2(2) + wire.int2(caps >> 16) + b"\x15" + bytes(10) + NONCE[8:] + b"\x00"
            + b"mysql_native_password\x00")
    hs = InitialHandshake.parse(data)
    assert (hs.server_version, hs.connection_id, hs.auth_plugin_data, hs.character_set) == ("8.0.1", 9, NONCE, 0x21)
    assert hs.auth_plugin_name == "mysql_native_password"


def test_greeting_plugin_name_without_nul() -> None:
    hs = InitialHandshake("5.5.8", 1, NONCE, int(DEFAULT_SERVER_CAPABILITIES))
    data = hs.build()[:-1]  # some old servers omit the final NUL
    assert InitialHandshake.parse(data).auth_plugin_name == "mysql_native_password"


def test_greeting_wrong_protocol_version() -> None:
    with pytest.raises(ProtocolError, match="protocol version 9"):
        InitialHandshake.parse(b"\x09" + b"4.0\x00" + bytes(20))


def test_ssl_request() -> None:
    req = SSLRequest(int(DEFAULT_CLIENT_CAPABILITIES))
    data = req.build()
    assert len(data) == 32
    assert SSLRequest.matches(data)
    assert SSLRequest.parse(data).capabilities & Capability.SSL


@pytest.mark.parametrize("caps", [
    int(DEFAULT_CLIENT_CAPABILITIES),
    int(DEFAULT_CLIENT_CAPABILITIES) & ~Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA,
    int(DEFAULT_CLIENT_CAPABILITIES) & ~Capability.CONNECT_ATTRS,
])
def test_handshake_response_round_trip(caps: int) -> None:
    resp = HandshakeResponse(caps, "binlake", b"\x01" * 32, "db1", "caching_sha2_password",
                             {"_client_name": "binlake", "k": "v" * 300} if caps & Capability.CONNECT_ATTRS else {})
    data = resp.build()
    assert not SSLRequest.matches(data)
    back = HandshakeResponse.parse(data)
    assert back.username == "binlake"
    assert back.auth_response == b"\x01" * 32
    assert back.database == "db1"
    assert back.capabilities & Capability.CONNECT_WITH_DB
    assert back.auth_plugin_name == "caching_sha2_password"
    assert back.attributes == resp.attributes


def test_handshake_response_repr_hides_auth_data() -> None:
    resp = HandshakeResponse(int(DEFAULT_CLIENT_CAPABILITIES), "u", b"secret-derived")
    assert "secret" not in repr(resp)


def test_pre41_response_refused() -> None:
    with pytest.raises(ProtocolError, match="pre-4.1"):
        HandshakeResponse.parse(bytes(40))
