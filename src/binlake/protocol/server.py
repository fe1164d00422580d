"""The server side of the protocol as a sans-IO state machine, so binlake can act as a primary.

ServerConnection greets, authenticates one user (mysql_native_password or caching_sha2_password,
the latter with fast auth from a shared cache, or full auth over TLS or with an RSA key pair),
then hands each command to the caller as an event and builds the replies the caller asks for.
Like ClientConnection it never does I/O: feed bytes in, pull events, and send ``data_to_send()``
after each event and before waiting for input (auth steps queue replies without an event).

The replication command payloads (COM_REGISTER_SLAVE, COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID) are
in replication.py, with both parse and build, since binlake's replica sends what its primary reads.
"""
from __future__ import annotations

import collections
import enum
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from ..errors import ProtocolError
from . import results
from .auth import (
    CACHING_SHA2_PASSWORD,
    ER_ACCESS_DENIED,
    NATIVE_PASSWORD,
    Account,
    AuthSwitchRequest,
    ServerAuth,
    ServerAuthResult,
    Sha2Cache,
)
from .capabilities import (
    DEFAULT_SERVER_CAPABILITIES,
    UTF8MB4_GENERAL_CI,
    Capability,
    Command,
    ServerStatus,
)
from .client import NEED_DATA, NeedData
from .handshake import HandshakeResponse, InitialHandshake, SSLRequest
from .packets import PacketEndpoint, PacketStream
from .replication import BinlogDump, BinlogDumpGtid, RegisterReplica
from .results import ColumnDefinition, ErrPacket, OkPacket

if TYPE_CHECKING:  # pragma: no cover
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

ER_SECURE_TRANSPORT_REQUIRED = 3159
ER_UNKNOWN_COM_ERROR = 1047


# -- events ------------------------------------------------------------------------------------


@dataclass
class TLSRequested:
    """The client sent an SSLRequest: wrap the transport (server side), then call tls_started()."""


@dataclass
class Authenticated:
    """The client is in; the OK has been queued."""

    user: str
    database: str | None
    plugin: str
    attributes: dict[str, str]
    capabilities: int


@dataclass
class AuthenticationFailed:
    """The client was refused; the ERR has been queued and the connection should be closed."""

    user: str
    reason: str


@dataclass
class Query:
    sql: str


@dataclass
class InitDB:
    schema: str


@dataclass
class Ping:
    pass


@dataclass
class Quit:
    pass


@dataclass
class OtherCommand:
    """A command binlake's server has no event for; reply (usually with an error) yourself."""

    command: int
    payload: bytes


ServerEvent = (TLSRequested | Authenticated | AuthenticationFailed | Query | InitDB | Ping | Quit
               | RegisterReplica | BinlogDump | BinlogDumpGtid | OtherCommand | NeedData)


class ServerState(enum.Enum):
    GREETED = "greeted"  # waiting for SSLRequest or HandshakeResponse
    TLS = "tls"  # waiting for the caller to finish TLS
    RESPONSE = "response"  # TLS done, waiting for the HandshakeResponse
    AUTH = "auth"  # in a plugin exchange
    COMMAND = "command"
    CLOSED = "closed"


def _new_nonce() -> bytes:
    """20 random bytes in 1..127: printable-ish and never NUL, like MySQL's scrambles."""
    return bytes(b % 127 + 1 for b in os.urandom(20))


AccountLookup = Mapping[str, Account] | Callable[[str], "Account | None"]


class ServerConnection(PacketEndpoint):
    """One server-side connection: greeting and auth, then commands as events."""

    def __init__(
        self,
        accounts: AccountLookup,
        *,
        server_version: str = "8.0.36-binlake",
        connection_id: int = 1,
        default_plugin: str = CACHING_SHA2_PASSWORD,
        tls_available: bool = False,
        require_tls: bool = False,
        secure_transport: bool = False,
        rsa_private_key: "RSAPrivateKey | None" = None,
        sha2_cache: Sha2Cache | None = None,
        capabilities: int = DEFAULT_SERVER_CAPABILITIES,
        status_flags: int = ServerStatus.AUTOCOMMIT,
        character_set: int = UTF8MB4_GENERAL_CI,
        client_host: str = "localhost",
        nonce: bytes | None = None,
        buffer_size: int = 64 * 1024,
    ) -> None:
        self._accounts = accounts
        self.default_plugin = default_plugin
        self.require_tls = require_tls
        self.secure = secure_transport
        self.rsa_private_key = rsa_private_key
        self.sha2_cache = sha2_cache if sha2_cache is not None else Sha2Cache()
        self.status_flags = int(status_flags)
        self.client_host = client_host
        self.nonce = nonce if nonce is not None else _new_nonce()
        caps = int(capabilities)
        if tls_available:
            caps |= Capability.SSL
        else:
            caps &= ~Capability.SSL
        self.server_capabilities = caps
        #: negotiated with the client once its response arrives
        self.capabilities = caps
        self.stream = PacketStream(buffer_size)
        self.state = ServerState.GREETED
        self.user: str | None = None
        self.database: str | None = None
        self._response: HandshakeResponse | None = None
        self._auth: ServerAuth | None = None
        self._switching = False
        self._used_password = False
        self._out: list[bytes | memoryview] = []
        self._events: collections.deque[ServerEvent] = collections.deque()
        self.handshake = InitialHandshake(
            server_version=server_version,
            connection_id=connection_id,
            auth_plugin_data=self.nonce,
            capabilities=caps,
            character_set=character_set,
            status_flags=self.status_flags,
            auth_plugin_name=default_plugin,
        )
        self._send(self.handshake.build())

    def __repr__(self) -> str:
        return f"ServerConnection(user={self.user!r}, state={self.state.value}, secure={self.secure})"

    # -- byte plumbing ------------------------------------------------------------------------


    def _send(self, payload: bytes | bytearray | memoryview) -> None:
        if len(payload) < 0xFFFFFF:
            self._out.append(self.stream.frame(payload))
        else:
            self._out.extend(self.stream.frame_parts(payload))

    def recv_size(self, default: int = 65536) -> int:
        """How much to read next: before TLS is settled, exactly the rest of the client's first
        packet, because a client sends its TLS ClientHello right behind the SSLRequest."""
        if self.state is ServerState.GREETED:
            return self.stream.wanted()
        return default

    def take_trailing_data(self) -> bytes:
        """After TLSRequested: bytes already received past the SSLRequest (the start of the TLS
        handshake); an edge that over-read must hand them to its TLS layer."""
        return self.stream.take_buffered()

    def tls_started(self) -> None:
        """The caller finished the server-side TLS handshake."""
        if self.state is not ServerState.TLS:
            raise ProtocolError("tls_started() without a pending TLSRequested")
        if self.stream.buffered():
            raise ProtocolError("bytes that followed the SSLRequest are still in the packet buffer",
                                hint="read with recv_size() before TLS, or feed take_trailing_data() "
                                     "to the TLS layer")
        self.secure = True
        self.state = ServerState.RESPONSE

    # -- replies (command phase) ------------------------------------------------------------

    def send_ok(self, affected_rows: int = 0, last_insert_id: int = 0, *, info: str = "",
                warnings: int = 0, status_flags: int | None = None) -> None:
        flags = self.status_flags if status_flags is None else status_flags
        self._send(OkPacket(affected_rows, last_insert_id, flags, warnings, info).build(self.capabilities))

    def send_error(self, code: int, message: str, sql_state: str = "HY000") -> None:
        self._send(ErrPacket(code, message, sql_state).build(self.capabilities))

    def send_eof(self, warnings: int = 0, status_flags: int | None = None) -> None:
        """End of a row stream / binlog stream: EOF, or OK-with-0xFE under DEPRECATE_EOF."""
        flags = self.status_flags if status_flags is None else status_flags
        self._send(results.build_terminator(self.capabilities, flags, warnings))

    def send_result_set(self, columns: Sequence[ColumnDefinition | str], rows: Iterable[Iterable[object]]) -> None:
        """A whole text result set (values: str/bytes/int/None…, rendered as text)."""
        for payload in results.build_result_set(columns, rows, self.capabilities, self.status_flags):
            self._send(payload)

    def send_packet(self, payload: bytes | bytearray | memoryview) -> None:
        """One raw payload (e.g. b"\\x00" + binlog event), split if 16 MiB or larger."""
        self._send(payload)

    # -- events ------------------------------------------------------------------------------

    def next_event(self) -> ServerEvent:
        if self._events:
            return self._events.popleft()
        while True:
            if self.state is ServerState.CLOSED or self.state is ServerState.TLS:
                return NEED_DATA
            stream = self.stream
            if self.state is ServerState.COMMAND and not stream.in_continuation:
                # every command starts at sequence id 0; keep ours if nothing new arrived, as
                # replies to the current command may still be going out
                saved = stream.seq
                stream.seq = 0
                payload = stream.next_packet()
                if payload is None:
                    if not stream.in_continuation:
                        stream.seq = saved
                    return NEED_DATA
            else:
                payload = stream.next_packet()
                if payload is None:
                    return NEED_DATA
            ev = self._handle(payload)
            if ev is not None:
                return ev

    def _handle(self, payload: memoryview) -> ServerEvent | None:
        state = self.state
        if state is ServerState.COMMAND:
            return self._on_command(payload)
        if state is ServerState.GREETED or state is ServerState.RESPONSE:
            return self._on_response(payload)
        if state is ServerState.AUTH:
            return self._on_auth_data(bytes(payload))
        raise ProtocolError(f"unexpected packet in server state {state.value}")

    # -- connection phase -------------------------------------------------------------------

    def _on_response(self, payload: memoryview) -> ServerEvent | None:
        if self.state is ServerState.GREETED and SSLRequest.matches(payload):
            if not self.server_capabilities & Capability.SSL:
                raise ProtocolError("client asked for TLS, which this server did not offer")
            req = SSLRequest.parse(payload)
            self.capabilities = req.capabilities & self.server_capabilities
            self.state = ServerState.TLS
            return TLSRequested()
        resp = HandshakeResponse.parse(payload)
        self._response = resp
        self.user = resp.username
        self.database = resp.database
        self.capabilities = (resp.capabilities & self.server_capabilities) | Capability.PROTOCOL_41
        if self.require_tls and not self.secure:
            return self._fail(resp.username, "insecure transport",
                              ER_SECURE_TRANSPORT_REQUIRED, "HY000",
                              "Connections using insecure transport are prohibited "
                              "while --require_secure_transport=ON.")
        account = self._lookup(resp.username)
        if account is None:
            return self._deny(resp.username, "unknown user", bool(resp.auth_response))
        self._auth = ServerAuth(resp.username, account, self.nonce, secure=self.secure,
                                cache=self.sha2_cache, rsa_private_key=self.rsa_private_key)
        client_plugin = resp.auth_plugin_name or NATIVE_PASSWORD
        self.state = ServerState.AUTH
        if client_plugin != account.plugin or not resp.capabilities & Capability.PLUGIN_AUTH:
            if not resp.capabilities & Capability.PLUGIN_AUTH:
                return self._deny(resp.username, "client cannot switch auth plugins", True)
            self._switching = True
            self._send(AuthSwitchRequest(account.plugin, self.nonce + b"\x00").build())
            return None
        self._used_password = bool(resp.auth_response)
        return self._apply(self._auth.first(resp.auth_response))

    def _lookup(self, user: str) -> Account | None:
        accounts = self._accounts
        if callable(accounts) and not isinstance(accounts, Mapping):
            return accounts(user)
        return accounts.get(user)

    def _on_auth_data(self, data: bytes) -> ServerEvent | None:
        assert self._auth is not None
        if self._switching:
            self._switching = False
            self._used_password = bool(data)
            return self._apply(self._auth.first(data))
        return self._apply(self._auth.more(data))

    def _apply(self, result: ServerAuthResult) -> ServerEvent | None:
        for reply in result.replies:
            self._send(reply)
        assert self._auth is not None and self._response is not None
        if result.outcome is None:
            return None
        resp = self._response
        if result.outcome == "fail":
            return self._deny(resp.username, result.reason, self._used_password)
        self.send_ok()
        self.state = ServerState.COMMAND
        plugin = self._auth.plugin
        self._auth = None
        return Authenticated(resp.username, resp.database, plugin, resp.attributes, self.capabilities)

    def _deny(self, user: str, reason: str, used_password: bool) -> AuthenticationFailed:
        msg = (f"Access denied for user '{user}'@'{self.client_host}' "
               f"(using password: {'YES' if used_password else 'NO'})")
        return self._fail(user, reason, ER_ACCESS_DENIED, "28000", msg)

    def _fail(self, user: str, reason: str, code: int, state: str, message: str) -> AuthenticationFailed:
        self.send_error(code, message, state)
        self.state = ServerState.CLOSED
        self._auth = None
        return AuthenticationFailed(user, reason)

    # -- command phase ----------------------------------------------------------------------

    def _on_command(self, payload: memoryview) -> ServerEvent:
        if not len(payload):
            raise ProtocolError("empty command packet")
        cmd = payload[0]
        body = payload[1:]
        if cmd == Command.QUERY:
            return Query(str(body, "utf-8", "surrogateescape"))
        if cmd == Command.PING:
            return Ping()
        if cmd == Command.QUIT:
            self.state = ServerState.CLOSED
            return Quit()
        if cmd == Command.INIT_DB:
            return InitDB(str(body, "utf-8", "surrogateescape"))
        if cmd == Command.REGISTER_SLAVE:
            return RegisterReplica.parse(body)
        if cmd == Command.BINLOG_DUMP:
            return BinlogDump.parse(body)
        if cmd == Command.BINLOG_DUMP_GTID:
            return BinlogDumpGtid.parse(body)
        return OtherCommand(cmd, bytes(body))
