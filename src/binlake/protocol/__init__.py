"""The MySQL/MariaDB client/server protocol, sans-IO (after h11).

Everything in this package is pure: objects take bytes and give back events and bytes to send.
Sockets, TLS wrapping and timeouts live in ``binlake.replica.connection`` only.

- packets: framing (PacketStream), wire: int/string encodings
- handshake: greeting, SSLRequest, HandshakeResponse41
- auth: native and caching_sha2 password plugins, client and server side
- results: OK/ERR/EOF and text result sets
- client: ClientConnection; server: ServerConnection
"""
from .auth import Account, AuthError, Sha2Cache
from .capabilities import Capability, Command, ServerStatus
from .client import (
    NEED_DATA,
    Authenticated,
    ClientConnection,
    ClientState,
    ColumnsReceived,
    Greeting,
    Packet,
    ResultSetDone,
    Rows,
    StartTLS,
    TLSUnavailable,
)
from .packets import MAX_PAYLOAD, PacketStream
from .results import ColumnDefinition, EofPacket, ErrPacket, OkPacket, ResultSet

_SERVER_NAMES = ("BinlogDump", "BinlogDumpGtid", "RegisterReplica", "ServerConnection")


def __getattr__(name: str) -> object:
    """The server side is imported on first use: a replica does not pay for it at start-up."""
    if name in _SERVER_NAMES:
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Account", "AuthError", "Sha2Cache", "Capability", "Command", "ServerStatus", "NEED_DATA",
    "Authenticated", "ClientConnection", "ClientState", "ColumnsReceived", "Greeting", "Packet",
    "ResultSetDone", "Rows", "StartTLS", "TLSUnavailable", "MAX_PAYLOAD", "PacketStream",
    "ColumnDefinition", "EofPacket", "ErrPacket", "OkPacket", "ResultSet", "BinlogDump",
    "BinlogDumpGtid", "RegisterReplica", "ServerConnection",
]
