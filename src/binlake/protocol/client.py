"""The client side of the protocol as a sans-IO state machine (after h11).

Feed it received bytes (``receive_data`` or, without copying, ``recv_buffer``/``commit``), take
the bytes it wants sent (``data_to_send``) and pull typed events (``next_event``) until it says
NEED_DATA; handling a packet may queue a reply, so send ``data_to_send()`` before waiting for
more input. It never touches a socket, so the same code runs under blocking sockets, asyncio, or
in memory against binlake's own ServerConnection in tests.

Phases: greeting → (SSLRequest + StartTLS) → handshake response → auth (switch, more data)
→ command phase (queries with text result sets, generic commands, raw packet streams).
"""
from __future__ import annotations

import collections
import enum
from dataclasses import dataclass

from .. import __version__
from ..errors import BinlakeError, ProtocolError
from . import results
from .auth import (AUTH_MORE_DATA, AUTH_SWITCH, ED25519, AuthError, AuthSwitchRequest, ClientAuth,
                   NATIVE_PASSWORD)
from .capabilities import DEFAULT_CLIENT_CAPABILITIES, UTF8MB4_GENERAL_CI, Capability, Command
from .handshake import HandshakeResponse, InitialHandshake, SSLRequest
from .packets import DEFAULT_BUFFER_SIZE, PacketEndpoint, PacketStream, frame
from .results import ColumnDefinition, ErrPacket, OkPacket, Row


class TLSUnavailable(BinlakeError):
    """TLS was required but the server does not offer it."""

    hint = "enable TLS on the server (ssl-cert/ssl-key) or connect with ssl_mode PREFERRED/DISABLED"


# -- events ------------------------------------------------------------------------------------


class NeedData:
    """The type of NEED_DATA (for the event unions of both sides)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


#: next_event() result when more bytes must be received first.
NEED_DATA = NeedData()


@dataclass
class Greeting:
    """The server's initial handshake arrived (informational)."""

    handshake: InitialHandshake


@dataclass
class StartTLS:
    """The SSLRequest is queued: send it, wrap the transport in TLS, then call tls_started()."""


@dataclass
class Authenticated:
    """Authentication succeeded; the connection is in the command phase."""

    ok: OkPacket
    plugin: str


@dataclass
class ColumnsReceived:
    """A text result set begins; its rows follow as Rows events."""

    columns: list[ColumnDefinition]


@dataclass
class Rows:
    """A batch of result rows (as many as had arrived)."""

    rows: list[Row]


@dataclass
class PackedRows:
    """A batch of result rows left unparsed (`send_query(packed=True)`): each row's payload
    appended to `data` by `results.pack_text_row`."""

    data: bytearray
    count: int


@dataclass
class ResultSetDone:
    """The rows of a result set ended; ``ok.more_results`` says whether another result follows."""

    ok: OkPacket


@dataclass
class Packet:
    """One raw payload of a command whose replies are not OK/ERR/result sets (binlog dump)."""

    payload: bytes


Event = (Greeting | StartTLS | Authenticated | OkPacket | ErrPacket | ColumnsReceived | Rows
         | PackedRows | ResultSetDone | Packet | NeedData)


class ClientState(enum.Enum):
    GREETING = "greeting"
    TLS = "tls"  # waiting for the caller to finish the TLS handshake
    AUTH = "auth"
    READY = "ready"  # command phase, idle
    RESULT = "result"  # waiting for OK/ERR/column count
    COLUMNS = "columns"
    COLUMNS_EOF = "columns-eof"
    ROWS = "rows"
    RAW = "raw"
    CLOSED = "closed"


TLS_MODES = ("disable", "prefer", "require")


class ClientConnection(PacketEndpoint):
    """A client connection's protocol state; see the module docstring for the flow.

    ``tls``: "disable" never asks for TLS, "prefer" asks if the server offers it, "require" raises
    TLSUnavailable when it does not. Certificate checks are the transport's business.
    """

    def __init__(
        self,
        user: str,
        password: str | bytes | None = None,
        *,
        database: str | None = None,
        tls: str = "disable",
        server_public_key: bytes | None = None,
        allow_public_key_retrieval: bool = False,
        secure_transport: bool = False,
        connect_attrs: dict[str, str] | None = None,
        capabilities: int = DEFAULT_CLIENT_CAPABILITIES,
        character_set: int = UTF8MB4_GENERAL_CI,
        max_packet_size: int = 1 << 30,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
    ) -> None:
        if tls not in TLS_MODES:
            raise ValueError(f"tls must be one of {TLS_MODES}, not {tls!r}")
        self.user = user
        self._password = password
        self.database = database
        self.tls_mode = tls
        self.server_public_key = server_public_key
        self.allow_public_key_retrieval = allow_public_key_retrieval
        #: True once TLS is up (or the transport is otherwise private, e.g. a Unix socket)
        self.secure = secure_transport
        self.connect_attrs = (
            {"_client_name": "binlake", "_client_version": __version__}
            if connect_attrs is None else dict(connect_attrs)
        )
        self._wanted_caps = int(capabilities)
        self.character_set = character_set
        self.max_packet_size = max_packet_size
        self.stream = PacketStream(buffer_size)
        self.state = ClientState.GREETING
        self.handshake: InitialHandshake | None = None
        #: negotiated capabilities (what both sides support)
        self.capabilities = 0
        self.auth_plugin: str | None = None
        self._auth: ClientAuth | None = None
        self._out: list[bytes | memoryview] = []
        self._events: collections.deque[Event] = collections.deque()
        self._columns: list[ColumnDefinition] = []
        self._ncols = 0
        self._packed = False

    def __repr__(self) -> str:
        return f"ClientConnection(user={self.user!r}, state={self.state.value}, secure={self.secure})"

    # -- facts about the server ------------------------------------------------------------

    @property
    def server_version(self) -> str:
        return self.handshake.version if self.handshake else ""

    @property
    def is_mariadb(self) -> bool:
        return bool(self.handshake and self.handshake.is_mariadb)

    @property
    def connection_id(self) -> int:
        return self.handshake.connection_id if self.handshake else 0

    # -- byte plumbing ------------------------------------------------------------------------


    def _send(self, payload: bytes) -> None:
        self._out.append(self.stream.frame(payload))

    # -- command phase API ------------------------------------------------------------------

    def _start_command(self, payload: bytes, state: ClientState) -> None:
        if self.state is not ClientState.READY:
            raise ProtocolError(f"cannot send a command while the connection is in state {self.state.value}")
        self.stream.reset_sequence()
        self._send(payload)
        self.state = state

    def send_query(self, sql: str | bytes, *, packed: bool = False) -> None:
        """COM_QUERY; replies arrive as OkPacket/ErrPacket or ColumnsReceived, Rows…, ResultSetDone.
        `packed`: rows arrive as PackedRows (unparsed, for `results.split_text_rows`)."""
        text = sql.encode("utf-8") if isinstance(sql, str) else sql
        self._start_command(bytes((Command.QUERY,)) + text, ClientState.RESULT)
        self._packed = packed

    def send_command(self, command: int, payload: bytes = b"", *, response: str = "ok") -> None:
        """Any command. response: "ok" (OK/ERR/result set), "raw" (Packet events until
        end_raw()), or "none" (nothing comes back, e.g. COM_QUIT)."""
        if response not in ("ok", "raw", "none"):
            raise ValueError(f"unknown response kind {response!r}")
        state = {"ok": ClientState.RESULT, "raw": ClientState.RAW, "none": ClientState.READY}[response]
        self._start_command(bytes((command,)) + bytes(payload), state)
        if command == Command.QUIT:
            self.state = ClientState.CLOSED

    def send_ping(self) -> None:
        self.send_command(Command.PING)

    def send_quit(self) -> None:
        self.send_command(Command.QUIT, response="none")

    def send_out_of_band(self, payload: bytes) -> None:
        """One packet outside the command flow (semi-sync ACK during a binlog stream).

        It goes out with sequence id 0 and leaves the connection's state alone; the sequence
        id of the server's next packet is accepted as it comes.
        """
        if self.state is not ClientState.RAW:
            raise ProtocolError("out-of-band packets are only sent during a raw stream")
        data, _ = frame(payload, 0)
        self._out.append(data)
        self.stream.resync()

    def end_raw(self) -> None:
        """Leave raw mode (the binlog layer saw the end of the stream) back to idle."""
        if self.state is ClientState.RAW:
            self.state = ClientState.READY

    # -- TLS -------------------------------------------------------------------------------------

    def tls_started(self) -> None:
        """The caller finished the TLS handshake: the response can go out, and passwords may too."""
        if self.state is not ClientState.TLS:
            raise ProtocolError("tls_started() without a pending StartTLS")
        self.secure = True
        self._send_response()

    # -- events ------------------------------------------------------------------------------

    def next_event(self) -> Event:
        """The next event, or NEED_DATA when more bytes are needed."""
        if self._events:
            return self._events.popleft()
        stream = self.stream
        while True:
            if self.state is ClientState.ROWS:
                ev = self._read_rows()
                if ev is not None:
                    return ev
                if self._events:
                    return self._events.popleft()
                return NEED_DATA
            payload = stream.next_packet()
            if payload is None:
                return NEED_DATA
            ev = self._handle(payload)
            if ev is not None:
                return ev
            if self._events:
                return self._events.popleft()

    def _handle(self, payload: memoryview) -> Event | None:
        state = self.state
        if state is ClientState.RAW:
            return Packet(bytes(payload))
        if not len(payload):
            raise ProtocolError(f"empty packet from the server in state {state.value}")
        first = payload[0]
        if state is ClientState.RESULT:
            return self._on_result(payload, first)
        if state is ClientState.COLUMNS:
            self._columns.append(ColumnDefinition.parse(payload))
            if len(self._columns) == self._ncols:
                if self.capabilities & Capability.DEPRECATE_EOF:
                    self.state = ClientState.ROWS
                    return ColumnsReceived(self._columns)
                self.state = ClientState.COLUMNS_EOF
            return None
        if state is ClientState.COLUMNS_EOF:
            if not results.is_eof(payload):
                raise ProtocolError("expected EOF after the column definitions")
            self.state = ClientState.ROWS
            return ColumnsReceived(self._columns)
        if state is ClientState.AUTH:
            return self._on_auth(payload, first)
        if state is ClientState.GREETING:
            return self._on_greeting(payload, first)
        if state is ClientState.READY:
            raise ProtocolError("the server sent a packet while no command was running")
        raise ProtocolError(f"unexpected packet in state {state.value}")

    # -- connection phase -------------------------------------------------------------------

    def _on_greeting(self, payload: memoryview, first: int) -> Event:
        if first == results.ERR_HEADER:
            self.state = ClientState.CLOSED
            return ErrPacket.parse(payload)
        hs = InitialHandshake.parse(payload)
        self.handshake = hs
        server_caps = hs.capabilities
        if not server_caps & Capability.PROTOCOL_41:
            raise ProtocolError("the server does not speak protocol 4.1", hint="MySQL >= 4.1 or MariaDB is needed")
        caps = self._wanted_caps & server_caps
        caps |= Capability.PROTOCOL_41 | (self._wanted_caps & Capability.LONG_PASSWORD)
        if self.database:
            caps |= Capability.CONNECT_WITH_DB & server_caps
        use_tls = False
        if self.tls_mode != "disable":
            if server_caps & Capability.SSL:
                use_tls = True
                caps |= Capability.SSL
            elif self.tls_mode == "require":
                self.state = ClientState.CLOSED
                raise TLSUnavailable("TLS is required but the server does not offer it")
        self.capabilities = caps
        plugin = hs.auth_plugin_name
        if not ClientAuth.supports(plugin) or plugin == ED25519:
            plugin = NATIVE_PASSWORD  # the greeting's nonce is 20 bytes: ed25519 comes by a switch
        self.auth_plugin = plugin
        if use_tls:
            self._send(SSLRequest(caps, self.max_packet_size, self.character_set).build())
            self.state = ClientState.TLS
            self._events.append(StartTLS())
        else:
            self._send_response()
        return Greeting(hs)

    def _new_auth(self, plugin: str, nonce: bytes) -> ClientAuth:
        return ClientAuth(plugin, nonce, self._password, secure=self.secure,
                          server_public_key=self.server_public_key,
                          allow_public_key_retrieval=self.allow_public_key_retrieval)

    def _send_response(self) -> None:
        hs = self.handshake
        assert hs is not None and self.auth_plugin is not None
        self._auth = self._new_auth(self.auth_plugin, hs.auth_plugin_data)
        auth_data = self._auth.initial_response()
        caps = self.capabilities
        if len(auth_data) > 250 and not caps & Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA:
            raise AuthError("the auth response is too long for this server")
        resp = HandshakeResponse(
            capabilities=caps,
            username=self.user,
            auth_response=auth_data,
            database=self.database if caps & Capability.CONNECT_WITH_DB else None,
            auth_plugin_name=self.auth_plugin,
            attributes=self.connect_attrs,
            max_packet_size=self.max_packet_size,
            character_set=self.character_set,
        )
        self._send(resp.build())
        self.state = ClientState.AUTH

    def _on_auth(self, payload: memoryview, first: int) -> Event | None:
        if first == results.OK_HEADER:
            self.state = ClientState.READY
            self._auth = None
            self._password = None  # not needed any more: do not keep it around
            return Authenticated(OkPacket.parse(payload, self.capabilities), self.auth_plugin or "")
        if first == results.ERR_HEADER:
            self.state = ClientState.CLOSED
            return ErrPacket.parse(payload)
        if first == AUTH_SWITCH:
            req = AuthSwitchRequest.parse(payload)
            if not ClientAuth.supports(req.plugin_name):
                self.state = ClientState.CLOSED
                raise AuthError(f"the server asks for authentication plugin {req.plugin_name!r}, "
                                "which binlake does not support",
                                hint="use mysql_native_password, caching_sha2_password or ed25519 "
                                     "for this account")
            self.auth_plugin = req.plugin_name
            # ed25519's nonce is 32 random bytes (no NUL terminator to strip: it may end in 0)
            nonce = req.plugin_data[:32] if req.plugin_name == ED25519 else req.nonce
            self._auth = self._new_auth(req.plugin_name, nonce)
            self._send(self._auth.initial_response())
            return None
        if first == AUTH_MORE_DATA:
            if self._auth is None:
                raise ProtocolError("auth data from the server outside authentication")
            reply = self._auth.on_more_data(bytes(payload[1:]))
            if reply is not None:
                self._send(reply)
            return None
        raise ProtocolError(f"unexpected packet 0x{first:02x} during authentication")

    # -- command phase ----------------------------------------------------------------------

    def _on_result(self, payload: memoryview, first: int) -> Event | None:
        if first == results.OK_HEADER:
            ok = OkPacket.parse(payload, self.capabilities)
            self.state = ClientState.RESULT if ok.more_results else ClientState.READY
            return ok
        if first == results.ERR_HEADER:
            self.state = ClientState.READY
            return ErrPacket.parse(payload)
        if first == results.LOCAL_INFILE_HEADER:
            # binlake never offers CLIENT_LOCAL_FILES; answer with an empty file so the
            # connection stays usable, the server then reports an error
            self._send(b"")
            return None
        if first == results.EOF_HEADER and len(payload) < 9:
            # a bare EOF (e.g. COM_SET_OPTION / COM_DEBUG replies on old servers)
            self.state = ClientState.READY
            eof = results.EofPacket.parse(payload)
            return OkPacket(status_flags=eof.status_flags, warnings=eof.warnings)
        self._ncols = results.parse_column_count(payload)
        self._columns = []
        if self._ncols == 0:
            raise ProtocolError("result set with zero columns")
        self.state = ClientState.COLUMNS
        return None

    def _read_rows(self) -> Event | None:
        """Parse every complete row already buffered into one Rows event."""
        stream = self.stream
        ncols = self._ncols
        caps = self.capabilities
        parse = results.parse_text_row
        rows: list[Row] = []
        packed = bytearray() if self._packed else None
        pack = results.pack_text_row
        count = 0
        while True:
            payload = stream.next_packet()
            if payload is None:
                break
            first = payload[0] if len(payload) else -1
            if first == results.EOF_HEADER and results.is_result_terminator(payload, caps):
                ok = results.parse_terminator(payload, caps)
                self.state = ClientState.RESULT if ok.more_results else ClientState.READY
                self._events.append(ResultSetDone(ok))
                break
            if first == results.ERR_HEADER:
                self.state = ClientState.READY
                self._events.append(ErrPacket.parse(payload))
                break
            if packed is not None:
                pack(packed, payload)
                count += 1
            else:
                rows.append(parse(payload, ncols))
        if packed is not None and count:
            return PackedRows(packed, count)
        if rows:
            return Rows(rows)
        return None
