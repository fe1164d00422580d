"""The I/O edge: a blocking-socket MySQL/MariaDB client around the sans-IO ClientConnection.

Everything about bytes lives in ``binlake.protocol``; this module only owns the socket, the TLS
wrapping, timeouts, and turning OS/TLS failures into errors that say which host:port failed and
what to check. Passwords never appear in errors or reprs.

``read_packet()`` is the binlog hot path: the socket receives straight into the connection's
reusable buffer (``recv_into``) and the payload comes back as a memoryview into that buffer,
valid only until the next read (use ``read_packet_copy()`` to keep one).
"""
from __future__ import annotations

import select
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import ssl

from ..errors import BinlakeError, ConfigError, ProtocolError, ServerError
from ..protocol import client as proto
from ..protocol.capabilities import Command
from ..protocol.client import (
    NEED_DATA,
    Authenticated,
    ClientConnection,
    ClientState,
    ColumnsReceived,
    PackedRows,
    ResultSetDone,
    Rows,
    StartTLS,
    TLSUnavailable,
)
from ..protocol.packets import DEFAULT_BUFFER_SIZE
from ..protocol.results import ColumnDefinition, ErrPacket, OkPacket, ResultSet

__all__ = ["MySQLConnection", "ConnectionFailed", "ConnectionLost", "ReadTimeout", "ResultSet",
           "OkPacket", "connect", "SSL_MODES"]

SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
_TLS_POLICY = {"DISABLED": "disable", "PREFERRED": "prefer", "REQUIRED": "require",
               "VERIFY_CA": "require", "VERIFY_IDENTITY": "require"}

ER_ACCESS_DENIED = 1045
ER_DBACCESS_DENIED = 1044
ER_HOST_NOT_PRIVILEGED = 1130


class ConnectionFailed(BinlakeError):
    """The server could not be reached, TLS could not be set up, or the link failed."""


class ConnectionLost(ConnectionFailed):
    """An established connection was closed or reset by the peer or the network."""


class ReadTimeout(ConnectionFailed):
    """No data arrived within the read timeout."""


def _server_error(err: ErrPacket, user: str, host: str, port: int) -> ServerError:
    hint = None
    if err.code == ER_ACCESS_DENIED:
        hint = f"check the credentials: user name and password for {user!r} on {host}:{port}"
    elif err.code == ER_HOST_NOT_PRIVILEGED:
        hint = f"the account {user!r} may not connect from this host; check its host part"
    elif err.code == ER_DBACCESS_DENIED:
        hint = f"grant {user!r} access to that database, or connect without one"
    return err.to_error(hint)


class MySQLConnection:
    """A connected, authenticated client; build one with ``MySQLConnection.connect(...)``."""

    def __init__(self, sock: socket.socket, client: ClientConnection, host: str, port: int,
                 *, ssl_mode: str) -> None:
        self._sock: socket.socket | None = sock
        self._client = client
        self._stream = client.stream
        self.host = host
        self.port = port
        self.user = client.user
        self.ssl_mode = ssl_mode
        self._read_timeout: float | None = sock.gettimeout()

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        host: str,
        port: int = 3306,
        user: str = "root",
        password: str | None = None,
        *,
        database: str | None = None,
        ssl_mode: str = "PREFERRED",
        ssl_ca: str | Path | None = None,
        ssl_cert: str | Path | None = None,
        ssl_key: str | Path | None = None,
        connect_timeout: float | None = 10.0,
        read_timeout: float | None = None,
        server_public_key_path: str | Path | None = None,
        allow_public_key_retrieval: bool = False,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
    ) -> "MySQLConnection":
        """Open a TCP connection, negotiate TLS per ``ssl_mode``, authenticate.

        ssl_mode follows the MySQL client: DISABLED, PREFERRED (TLS if offered, unverified),
        REQUIRED (TLS or fail, unverified), VERIFY_CA (certificate chain checked against ssl_ca),
        VERIFY_IDENTITY (chain and host name checked).
        """
        mode = ssl_mode.upper() if isinstance(ssl_mode, str) else ""
        if mode not in SSL_MODES:
            raise ConfigError(f"unknown ssl_mode {ssl_mode!r}", hint=f"use one of {', '.join(SSL_MODES)}")
        pubkey = None
        if server_public_key_path is not None:
            try:
                pubkey = Path(server_public_key_path).read_bytes()
            except OSError as exc:
                raise ConfigError(f"cannot read server_public_key_path {server_public_key_path}: "
                                  f"{exc.strerror}") from exc
        if mode == "DISABLED":
            tls_context = None
        elif mode == "PREFERRED" and not (ssl_ca or ssl_cert or ssl_key):
            # Made only if the server offers TLS: importing `ssl` is a visible part of a short
            # run's start-up, for nothing on a server without TLS.
            def tls_context() -> ssl.SSLContext:
                return _ssl_context(mode, None, None, None)
        else:  # files to read: fail on them before connecting
            context = _ssl_context(mode, ssl_ca, ssl_cert, ssl_key)

            def tls_context() -> ssl.SSLContext:
                return context

        sock = _open_socket(host, port, connect_timeout)
        client = ClientConnection(
            user, password, database=database, tls=_TLS_POLICY[mode], server_public_key=pubkey,
            allow_public_key_retrieval=allow_public_key_retrieval, buffer_size=buffer_size,
        )
        conn = cls(sock, client, host, port, ssl_mode=mode)
        try:
            conn._handshake(tls_context)
            conn.read_timeout = read_timeout
        except BaseException:
            conn._abort()
            raise
        return conn

    def _handshake(self, tls_context: Callable[[], ssl.SSLContext] | None) -> None:
        client = self._client
        while True:
            try:
                ev = self._next_event(during="the handshake")
            except TLSUnavailable as exc:
                raise ConnectionFailed(
                    f"{self.where} does not offer TLS, but ssl_mode={self.ssl_mode} requires it",
                    hint=exc.hint,
                ) from None
            if isinstance(ev, StartTLS):
                self._flush()
                assert tls_context is not None
                self._start_tls(tls_context())
                client.tls_started()
            elif isinstance(ev, Authenticated):
                return
            elif isinstance(ev, ErrPacket):
                raise _server_error(ev, self.user, self.host, self.port)
            # Greeting: informational

    def _start_tls(self, context: ssl.SSLContext) -> None:
        import ssl

        assert self._sock is not None
        if self._stream.buffered():
            raise ProtocolError("the server sent data before the TLS handshake")
        server_name = self.host if context.check_hostname else None
        try:
            self._sock = context.wrap_socket(self._sock, server_hostname=server_name)
        except ssl.SSLCertVerificationError as exc:
            detail = exc.verify_message or exc.reason or str(exc)
            if self.ssl_mode == "VERIFY_IDENTITY" and exc.verify_code == 62:
                hint = "the certificate does not name this host; connect by the name it was issued for"
            else:
                hint = ("check ssl_ca: it must be the CA that signed the server's certificate "
                        "(ssl_mode REQUIRED encrypts without verifying)")
            raise ConnectionFailed(f"TLS certificate of {self.where} could not be verified: {detail}",
                                   hint=hint) from None
        except (ssl.SSLError, OSError) as exc:
            raise ConnectionFailed(f"TLS handshake with {self.where} failed: {exc}",
                                   hint="check the server's TLS setup and ssl_cert/ssl_key") from None

    # -- facts ------------------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def server_version(self) -> str:
        """Version string as the server reports it, without MariaDB's "5.5.5-" prefix."""
        return self._client.server_version

    @property
    def flavor(self) -> str:
        """"mariadb" or "mysql" (from the version string and the CLIENT_MYSQL capability)."""
        return "mariadb" if self._client.is_mariadb else "mysql"

    @property
    def connection_id(self) -> int:
        return self._client.connection_id

    @property
    def capabilities(self) -> int:
        return self._client.capabilities

    @property
    def auth_plugin(self) -> str | None:
        return self._client.auth_plugin

    @property
    def tls(self) -> bool:
        ssl = sys.modules.get("ssl")  # never imported: no TLS socket either
        return ssl is not None and isinstance(self._sock, ssl.SSLSocket)

    @property
    def tls_version(self) -> str | None:
        sock = self._sock
        ssl = sys.modules.get("ssl")
        return sock.version() if ssl is not None and isinstance(sock, ssl.SSLSocket) else None

    @property
    def closed(self) -> bool:
        return self._sock is None

    @property
    def read_timeout(self) -> float | None:
        """Seconds a read may wait (None: forever); settable, e.g. around heartbeats."""
        return self._read_timeout

    @read_timeout.setter
    def read_timeout(self, seconds: float | None) -> None:
        self._read_timeout = seconds
        if self._sock is not None:
            self._sock.settimeout(seconds)

    def set_read_timeout(self, seconds: float | None) -> None:
        self.read_timeout = seconds

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("tls" if self.tls else "plain")
        return (f"MySQLConnection({self.user!r}@{self.where}, {self.flavor} {self.server_version!r}, "
                f"{state})")

    # -- I/O --------------------------------------------------------------------------------

    def _require_open(self) -> socket.socket:
        if self._sock is None:
            raise ConnectionLost(f"the connection to {self.where} is closed")
        return self._sock

    def _flush(self) -> None:
        data = self._client.data_to_send()
        if data:
            sock = self._require_open()
            try:
                sock.sendall(data)
            except (TimeoutError, socket.timeout):
                self._abort()
                raise ReadTimeout(f"sending to {self.where} timed out") from None
            except OSError as exc:
                self._abort()
                raise ConnectionLost(f"the connection to {self.where} broke while sending: {exc}",
                                     hint="the server may have restarted or closed the connection; reconnect") from None

    def _receive(self, during: str) -> None:
        sock = self._require_open()
        try:
            n = sock.recv_into(self._stream.recv_buffer())
        except (TimeoutError, socket.timeout):
            t = sock.gettimeout()
            self._abort()
            raise ReadTimeout(f"no data from {self.where} within {t}s during {during}",
                              hint="the server is slow or unreachable; raise the timeout if this is expected") from None
        except OSError as exc:
            self._abort()
            if _is_tls_error(exc):
                raise ConnectionLost(f"TLS error from {self.where} during {during}: {exc}") from None
            raise ConnectionLost(f"the connection to {self.where} broke during {during}: {exc}",
                                 hint="the server may have restarted or closed the connection; reconnect") from None
        if n == 0:
            self._abort()
            raise ConnectionLost(f"{self.where} closed the connection during {during}",
                                 hint="check the server's error log (max_connections, wait_timeout, "
                                      "a killed connection)")
        self._stream.commit(n)

    def _next_event(self, during: str = "a command") -> proto.Event:
        client = self._client
        while True:
            ev = client.next_event()
            if ev is not NEED_DATA:
                return ev
            self._flush()
            self._receive(during)

    # -- commands ---------------------------------------------------------------------------

    def query(self, sql: str) -> ResultSet:
        """Run one statement and return its (first) result set: rows are tuples of str|None.

        A statement without a result set gives an empty ResultSet (no columns, no rows).
        """
        self._require_open()
        self._client.send_query(sql)
        self._flush()
        first: ResultSet | None = None
        current: ResultSet | None = None
        while True:
            ev = self._next_event()
            if isinstance(ev, Rows):
                assert current is not None
                current.rows.extend(ev.rows)
            elif isinstance(ev, ColumnsReceived):
                current = ResultSet(columns=ev.columns)
            elif isinstance(ev, ResultSetDone):
                assert current is not None
                current.status_flags = ev.ok.status_flags
                current.warnings = ev.ok.warnings
                if first is None:
                    first = current
                if not ev.ok.more_results:
                    return first
            elif isinstance(ev, OkPacket):
                if first is None:
                    first = ResultSet(status_flags=ev.status_flags, warnings=ev.warnings)
                if not ev.more_results:
                    return first
            elif isinstance(ev, ErrPacket):
                raise _server_error(ev, self.user, self.host, self.port)
            else:
                raise ProtocolError(f"unexpected {type(ev).__name__} after a query")

    def query_packed(self, sql: str) -> tuple[list[ColumnDefinition], bytearray, int]:
        """Run one statement with a single result set; its column definitions, its rows
        unparsed (`results.pack_text_row` each, for `results.split_text_rows`) and their
        count."""
        self._require_open()
        self._client.send_query(sql, packed=True)
        self._flush()
        columns: list[ColumnDefinition] | None = None
        data = bytearray()
        count = 0
        while True:
            ev = self._next_event()
            if isinstance(ev, PackedRows):
                if not data:
                    data = ev.data
                else:
                    data += ev.data
                count += ev.count
            elif isinstance(ev, ColumnsReceived):
                columns = ev.columns
            elif isinstance(ev, ResultSetDone):
                if ev.ok.more_results or columns is None:
                    raise ProtocolError("query_packed takes one statement with one result set")
                return columns, data, count
            elif isinstance(ev, ErrPacket):
                raise _server_error(ev, self.user, self.host, self.port)
            else:
                raise ProtocolError(f"unexpected {type(ev).__name__} after a query")

    def execute(self, sql: str) -> OkPacket:
        """Run a statement for its effect; returns the final OK (rows of any result are dropped)."""
        self._require_open()
        self._client.send_query(sql)
        self._flush()
        return self._await_ok()

    def _await_ok(self) -> OkPacket:
        while True:
            ev = self._next_event()
            if isinstance(ev, OkPacket):
                if not ev.more_results:
                    return ev
            elif isinstance(ev, ResultSetDone):
                if not ev.ok.more_results:
                    return ev.ok
            elif isinstance(ev, ErrPacket):
                raise _server_error(ev, self.user, self.host, self.port)
            elif not isinstance(ev, (ColumnsReceived, Rows)):
                raise ProtocolError(f"unexpected {type(ev).__name__} while waiting for OK")

    def ping(self) -> OkPacket:
        self._require_open()
        self._client.send_ping()
        self._flush()
        return self._await_ok()

    def command(self, cmd: int, payload: bytes = b"") -> OkPacket:
        """A command answered by OK/ERR (e.g. COM_REGISTER_SLAVE)."""
        self._require_open()
        self._client.send_command(cmd, payload)
        self._flush()
        return self._await_ok()

    def send_command(self, cmd: int, payload: bytes = b"") -> None:
        """Send a command whose replies are read raw with read_packet() (e.g. COM_BINLOG_DUMP).

        The connection stays in raw mode: every later packet is handed over unparsed.
        """
        self._require_open()
        self._client.send_command(cmd, payload, response="raw")
        self._flush()

    def send_raw(self, payload: bytes) -> None:
        """Send one packet in the middle of a raw stream without a reply (semi-sync ACK).

        Sequence id 0; the next packet read is accepted whatever its sequence id.
        """
        self._require_open()
        self._client.send_out_of_band(payload)
        self._flush()

    def read_packet(self) -> memoryview:
        """The next payload as a memoryview into the receive buffer.

        Contract: the view is valid only until the next read on this connection; consume or copy
        it before then (``read_packet_copy`` copies). Payloads of 16 MiB or more are reassembled.
        """
        stream = self._stream
        pkt = stream.next_packet()
        while pkt is None:
            self.receive_more()
            pkt = stream.next_packet()
        return pkt

    def _receive_failed(self) -> None:
        """Map the OSError being handled by read_packet (kept out of the hot loop)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (TimeoutError, socket.timeout)):
            raise ReadTimeout(f"no data from {self.where} within {self._read_timeout}s",
                              hint="expected during quiet periods; set a heartbeat below the read timeout") from None
        self._abort()
        raise ConnectionLost(f"the connection to {self.where} broke: {exc}",
                             hint="the server may have restarted or closed the connection; reconnect") from None

    def buffered_packet(self) -> memoryview | None:
        """The next payload if it is already received (read_packet's contract), else None:
        no socket call, so a caller that reads in a tight loop needs no interruption guard
        for it."""
        return self._stream.next_packet()

    def unread_packets(self) -> tuple[bytearray, int, int, int] | None:
        """The received bytes not read yet, for a caller that frames whole packets itself
        (PacketStream.unread; follow with skip_packets). No socket call."""
        return self._stream.unread()

    def wants_more(self) -> bool:
        """No whole packet is received yet (PacketStream.wants_more). No socket call."""
        return self._stream.wants_more()

    def receive_more(self) -> None:
        """One blocking receive into the buffer: read_packet's, and a caller's that frames
        packets itself and found no whole one there (wants_more)."""
        sock = self._require_open()
        stream = self._stream
        try:
            n = sock.recv_into(stream.recv_buffer())
        except OSError:
            self._receive_failed()
            raise  # unreachable: _receive_failed raises
        if n == 0:
            self._abort()
            raise ConnectionLost(f"{self.where} closed the connection",
                                 hint="the server may have restarted, or killed this connection")
        stream.commit(n)

    def data_waiting(self) -> bool:
        """Bytes are on their way: received by TLS but not handed out, or readable on the
        socket now (no wait). False on a closed connection."""
        sock = self._sock
        if sock is None:
            return False
        pending = getattr(sock, "pending", None)
        if pending is not None and pending():
            return True
        try:
            return bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):
            return False

    def skip_packets(self, pos: int, seq: int) -> None:
        """Whole packets up to `pos` of the receive buffer were read by the caller."""
        self._stream.advance(pos, seq)

    def read_packet_copy(self) -> bytes:
        """Like read_packet() but an owned bytes object."""
        return bytes(self.read_packet())

    def end_raw(self) -> None:
        """The raw stream ended (the caller saw its EOF/ERR); allow normal commands again."""
        self._client.end_raw()

    # -- closing ----------------------------------------------------------------------------

    def close(self) -> None:
        """Say COM_QUIT if idle, then close the socket; safe to call twice."""
        sock = self._sock
        if sock is None:
            return
        if self._client.state is ClientState.READY:
            try:
                self._client.send_command(Command.QUIT, response="none")
                sock.settimeout(1.0)
                sock.sendall(self._client.data_to_send())
            except (OSError, BinlakeError):
                pass
        self._abort()

    def _abort(self) -> None:
        sock = self._sock
        self._sock = None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> "MySQLConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        sock = getattr(self, "_sock", None)
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


def connect(host: str, port: int = 3306, user: str = "root", password: str | None = None,
            **options: Any) -> MySQLConnection:
    """Shorthand for MySQLConnection.connect(...)."""
    return MySQLConnection.connect(host, port, user, password, **options)


def _open_socket(host: str, port: int, timeout: float | None) -> socket.socket:
    where = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror as exc:
        raise ConnectionFailed(f"cannot resolve host {host!r} ({exc.strerror})",
                               hint="check the host name") from None
    except ConnectionRefusedError:
        raise ConnectionFailed(f"connection to {where} refused",
                               hint="is the server running and listening on that host and port?") from None
    except (TimeoutError, socket.timeout):
        raise ConnectionFailed(f"timed out after {timeout}s connecting to {where}",
                               hint="check that the host is reachable (firewall, address) "
                                    "or raise connect_timeout") from None
    except OSError as exc:
        raise ConnectionFailed(f"cannot connect to {where}: {exc.strerror or exc}",
                               hint="check the host, port and network") from None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    return sock


def _is_tls_error(exc: BaseException) -> bool:
    ssl = sys.modules.get("ssl")
    return ssl is not None and isinstance(exc, ssl.SSLError)


def _ssl_context(mode: str, ca: str | Path | None, cert: str | Path | None,
                 key: str | Path | None) -> ssl.SSLContext:
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if mode in ("VERIFY_CA", "VERIFY_IDENTITY"):
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.check_hostname = mode == "VERIFY_IDENTITY"
        try:
            if ca is not None:
                ctx.load_verify_locations(cafile=str(ca))
            else:
                ctx.load_default_certs()
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load ssl_ca {ca}: {exc}", hint="ssl_ca must be a PEM file of CA certificates") from None
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        try:
            ctx.load_cert_chain(str(cert), str(key) if key is not None else None)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot load ssl_cert/ssl_key ({cert}): {exc}",
                              hint="both must be PEM; the key must match the certificate") from None
    return ctx
