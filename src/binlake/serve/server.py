"""The socket edge of binlake's primary: a threaded TCP server, one thread per connection.

Each connection runs a ``ServerConnection`` (protocol) and, once authenticated, a ``Session``
(primary.py). This module only moves bytes: it flushes what the protocol queued, reads when it
needs input, wraps the socket in TLS when the client asks, and during a binlog dump interleaves
sending events with reading the replica's semi-sync ACKs and waiting for heartbeats.
"""
from __future__ import annotations

import logging
import select
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Mapping
from urllib.parse import quote, urlencode

from ..errors import BinlakeError, ConfigError
from ..protocol import NEED_DATA
from ..protocol.auth import CACHING_SHA2_PASSWORD, NATIVE_PASSWORD, Account, Sha2Cache, generate_rsa_key, public_key_pem
from ..protocol.capabilities import DEFAULT_SERVER_CAPABILITIES, Capability
from ..protocol.server import (
    Authenticated,
    AuthenticationFailed,
    OtherCommand,
    Quit,
    ServerConnection,
    ServerState,
    TLSRequested,
)
from .primary import SEMI_SYNC_MAGIC, BinlogDumpRun, DumpStatus, Primary, Session, kv

if TYPE_CHECKING:  # pragma: no cover
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

log = logging.getLogger("binlake.serve")

_RECV = 1 << 16


def _peer(addr: tuple) -> str:
    """host:port of a client ([host]:port for IPv6)."""
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Gone(Exception):
    """The client closed the connection (or the server is stopping)."""


def load_rsa_key(path: str | Path) -> "RSAPrivateKey":
    """A PEM RSA private key (caching_sha2_password_private_key_path)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load the RSA private key {path}: {exc}",
                          hint="give an unencrypted PEM RSA private key") from None
    if not isinstance(key, RSAPrivateKey):
        raise ConfigError(f"{path} is not an RSA private key")
    return key


def save_rsa_key(key: "RSAPrivateKey", path: str | Path) -> None:
    from cryptography.hazmat.primitives import serialization

    Path(path).write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))


class PrimaryServer:
    """Serve a Primary on host:port (127.0.0.1 by default; port 0 picks a free one)."""

    def __init__(
        self,
        primary: Primary,
        accounts: Mapping[str, Account],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls_cert: str | Path | None = None,
        tls_key: str | Path | None = None,
        require_tls: bool = False,
        rsa_key: "RSAPrivateKey | None" = None,
        default_plugin: str | None = None,
        io_timeout: float = 60.0,
    ) -> None:
        self.primary = primary
        self.accounts = dict(accounts)
        self.io_timeout = io_timeout
        self.require_tls = require_tls
        self.tls_context: ssl.SSLContext | None = None
        if tls_cert is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            try:
                ctx.load_cert_chain(str(tls_cert), str(tls_key) if tls_key is not None else None)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(f"cannot load the TLS certificate/key {tls_cert}: {exc}",
                                  hint="both must be PEM and the key must match the certificate") from None
            self.tls_context = ctx
        elif require_tls:
            raise ConfigError("require_tls needs a TLS certificate and key")
        self.rsa_key = rsa_key if rsa_key is not None else generate_rsa_key()
        self.default_plugin = default_plugin or (NATIVE_PASSWORD if primary.mariadb else CACHING_SHA2_PASSWORD)
        self.sha2_cache = Sha2Cache()
        try:
            self._listener = socket.create_server((host, port), backlog=64)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._listener.settimeout(0.2)
        self.host, self.port = self._listener.getsockname()[:2]
        primary.config.port = self.port
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._clients: dict[int, socket.socket] = {}
        self._sessions: dict[int, Session] = {}
        self._threads: list[threading.Thread] = []
        self._next_id = 1
        self._accept_thread: threading.Thread | None = None
        self.connections_served = 0

    def __repr__(self) -> str:
        return f"PrimaryServer({self.host}:{self.port}, {self.primary!r})"

    # -- facts --------------------------------------------------------------------------------

    @property
    def public_key_pem(self) -> bytes:
        """The RSA public key a caching_sha2 client may be given (server_public_key_path)."""
        return public_key_pem(self.rsa_key)

    def url(self, user: str, password: str | None = None, **options: object) -> str:
        """mysql://user:pw@host:port/?options — the URL `binlake stream` takes."""
        cred = quote(user, safe="") + (f":{quote(password, safe='')}" if password is not None else "")
        query = ("/?" + urlencode({k: str(v) for k, v in options.items()})) if options else ""
        return f"mysql://{cred}@{self.host}:{self.port}{query}"

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> "PrimaryServer":
        """Accept connections in a background thread."""
        self._accept_thread = threading.Thread(target=self.serve_forever, name=f"binlake-serve-{self.port}",
                                               daemon=True)
        self._accept_thread.start()
        return self

    def serve_forever(self) -> None:
        while not self._stop.is_set():
            try:
                sock, addr = self._listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                if self._stop.is_set():
                    return
                raise
            with self._lock:
                cid = self._next_id
                self._next_id += 1
                self._clients[cid] = sock
                self.connections_served += 1
                t = threading.Thread(target=self._serve, args=(sock, addr, cid), daemon=True,
                                     name=f"binlake-serve-conn-{cid}")
                self._threads = [x for x in self._threads if x.is_alive()]
                self._threads.append(t)
            t.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection, wait for their threads."""
        self._stop.set()
        try:
            self._listener.close()
        except OSError:
            pass
        self.drop_connections()
        if self._accept_thread is not None and self._accept_thread is not threading.current_thread():
            self._accept_thread.join(timeout)
        deadline = time.monotonic() + timeout
        for t in list(self._threads):
            t.join(max(0.0, deadline - time.monotonic()))

    def dumps(self) -> list[BinlogDumpRun]:
        """The binlog dumps of the connections open now (what each replica is being sent)."""
        with self._lock:
            sessions = list(self._sessions.values())
        return [s.dump for s in sessions if s.dump is not None]

    def drop_connections(self) -> int:
        """Cut every client connection (as a crash or network failure would); returns how many."""
        with self._lock:
            socks = list(self._clients.values())
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(socks)

    def __enter__(self) -> "PrimaryServer":
        if self._accept_thread is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one connection -------------------------------------------------------------------------

    def _new_connection(self, cid: int, client_host: str) -> ServerConnection:
        caps = int(DEFAULT_SERVER_CAPABILITIES)
        if self.primary.mariadb:
            caps &= ~int(Capability.LONG_PASSWORD)  # a MariaDB server clears CLIENT_MYSQL
        return ServerConnection(
            self.accounts, server_version=self.primary.greeting_version, connection_id=cid,
            default_plugin=self.default_plugin, tls_available=self.tls_context is not None,
            require_tls=self.require_tls, rsa_private_key=self.rsa_key, sha2_cache=self.sha2_cache,
            capabilities=caps, client_host=client_host)

    def _serve(self, sock: socket.socket, addr: tuple, cid: int) -> None:
        sock.settimeout(self.io_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        conn = self._new_connection(cid, addr[0])
        session: Session | None = None
        try:
            while not self._stop.is_set():
                if session is not None and session.dump is not None and session.dump.status is not DumpStatus.DONE:
                    self._run_dump(sock, conn, session)
                    continue
                ev = conn.next_event()
                self._flush(sock, conn)
                if ev is NEED_DATA:
                    if conn.state is ServerState.CLOSED:
                        return
                    conn.receive_data(self._recv(sock, conn.recv_size(_RECV)))
                    continue
                if isinstance(ev, TLSRequested):
                    assert self.tls_context is not None
                    sock = self.tls_context.wrap_socket(sock, server_side=True)
                    with self._lock:
                        self._clients[cid] = sock
                    conn.tls_started()
                elif isinstance(ev, Authenticated):
                    session = self.primary.session(conn, user=ev.user, host=addr[0])
                    with self._lock:
                        self._sessions[cid] = session
                    log.info("connection %d: accepted %s", cid,
                             kv({"user": ev.user, "peer": _peer(addr), "plugin": ev.plugin,
                                 "tls": isinstance(sock, ssl.SSLSocket)}))
                elif isinstance(ev, AuthenticationFailed):
                    log.info("connection %d: refused %s", cid,
                             kv({"user": ev.user, "peer": _peer(addr), "reason": ev.reason}))
                    self._flush(sock, conn)
                    return
                elif session is not None:
                    session.handle(ev, time.monotonic())
                self._flush(sock, conn)
                if session is not None and session.closed:
                    return
        except _Gone:
            pass
        except (OSError, ssl.SSLError) as exc:
            log.debug("connection %d: %s", cid, exc)
        except BinlakeError as exc:
            log.warning("connection %d closed: %s", cid, exc)
        finally:
            if session is not None:
                session.close()
                dump = session.dump
                if dump is not None:
                    log.info("connection %d: closed %s", cid,
                             kv({"events_sent": dump.events_sent, "bytes_sent": dump.bytes_sent,
                                 "at": f"{dump.file.name}:{dump.position}" if dump.file else "-",
                                 **({"until_reached": True} if dump.until_reached else {})}))
            with self._lock:
                self._clients.pop(cid, None)
                self._sessions.pop(cid, None)
            try:
                sock.close()
            except OSError:
                pass

    def _recv(self, sock: socket.socket, size: int) -> bytes:
        while True:
            try:
                data = sock.recv(size)
            except (TimeoutError, socket.timeout):
                if self._stop.is_set():
                    raise _Gone from None
                continue  # an idle client: keep waiting, like wait_timeout would for hours
            if not data:
                raise _Gone
            return data

    @staticmethod
    def _flush(sock: socket.socket, conn: ServerConnection) -> None:
        data = conn.data_to_send()
        if data:
            sock.sendall(data)

    def _run_dump(self, sock: socket.socket, conn: ServerConnection, session: Session) -> None:
        """Send the dump's events until it is done, reading ACKs and waiting with heartbeats."""
        dump = session.dump
        assert dump is not None
        while True:
            now = time.monotonic()
            status = dump.status
            if status is DumpStatus.MORE:
                status = dump.pump(now)
            self._flush(sock, conn)
            if status is DumpStatus.DONE:
                return
            if self._stop.is_set():
                raise _Gone
            wait = 0.0 if status is DumpStatus.MORE else min(dump.wait_time(now), 1.0)
            if self._readable(sock, wait):
                data = sock.recv(_RECV)
                if not data:
                    raise _Gone
                # ACKs come in on their own sequence; the dump's outgoing sequence goes on
                saved = conn.stream.seq
                conn.receive_data(data)
                while True:
                    ev = conn.next_event()
                    if ev is NEED_DATA:
                        break
                    if isinstance(ev, OtherCommand) and ev.command == SEMI_SYNC_MAGIC:
                        session.on_ack(ev.payload)
                    elif isinstance(ev, Quit):
                        session.close()
                        raise _Gone
                    else:
                        log.warning("ignoring %s received during a binlog dump", type(ev).__name__)
                conn.stream.seq = saved
            if dump.status is DumpStatus.WAITING:
                dump.tick(time.monotonic())

    @staticmethod
    def _readable(sock: socket.socket, timeout: float) -> bool:
        if isinstance(sock, ssl.SSLSocket) and sock.pending():
            return True
        r, _, _ = select.select([sock], [], [], timeout)
        return bool(r)
