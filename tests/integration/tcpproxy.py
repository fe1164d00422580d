"""A tiny TCP proxy for replica tests: forwards 127.0.0.1:<port> to a server and can break
the link on purpose, the two ways networks break it.

- ``cut_after(n)``: the next link closes (both sides) after forwarding ``n`` bytes from the
  server, usually in the middle of a packet: a reset connection.
- ``freeze()``: the current links stop forwarding but stay open: a dead link that only a
  timeout (heartbeats) can detect. New links work normally.
- ``corrupt(old, new)``: the first `old` in a chunk the server sends becomes `new` (same
  length), once: bytes damaged on the way, as a checksum exists to catch.
- ``refuse_dumps()``: a link closes when the client sends a binlog dump request, before
  forwarding it: a primary that refuses the dump (as Dolt does a non-blocking GTID dump).
"""
from __future__ import annotations

import socket
import threading
from collections import deque


class _Link:
    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.frozen = threading.Event()
        self.closed = threading.Event()
        self.cut_at: int | None = None
        self.from_server = 0

    def close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for s in (self.client, self.upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


class TcpProxy:
    """Forward connections to (host, port); see the module docstring for the failure modes."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.links: list[_Link] = []
        self._cuts: deque[int] = deque()
        self._corrupt: tuple[bytes, bytes] | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self.refusing = False
        self.refused = 0
        threading.Thread(target=self._accept, name="tcpproxy-accept", daemon=True).start()

    @property
    def links_opened(self) -> int:
        return len(self.links)

    def cut_after(self, *server_bytes: int) -> None:
        """The next links (one per number) close after forwarding that many server bytes."""
        with self._lock:
            self._cuts.extend(server_bytes)

    def corrupt(self, old: bytes, new: bytes) -> None:
        """The first `old` found in one chunk from a server becomes `new` (same length)."""
        assert len(old) == len(new) and old != new
        with self._lock:
            self._corrupt = (old, new)

    def refuse_dumps(self) -> None:
        """From now on, close each link whose client sends COM_BINLOG_DUMP(_GTID)."""
        self.refusing = True

    def freeze(self) -> None:
        """Stop forwarding on every open link without closing it."""
        with self._lock:
            for link in self.links:
                link.frozen.set()

    def close(self) -> None:
        self._stopped = True
        self._listener.close()
        for link in self.links:
            link.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            link = _Link(client, upstream)
            with self._lock:
                if self._cuts:
                    link.cut_at = self._cuts.popleft()
                self.links.append(link)
            threading.Thread(target=self._pump, args=(link, client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(link, upstream, client, True), daemon=True).start()

    def _pump(self, link: _Link, src: socket.socket, dst: socket.socket, from_server: bool) -> None:
        while not link.closed.is_set():
            try:
                data = src.recv(65536)
            except OSError:
                break
            if not data:
                break
            if link.frozen.is_set():
                link.closed.wait()  # swallow nothing, forward nothing: a silent, open link
                return
            if (not from_server and self.refusing and len(data) >= 5 and data[3] == 0
                    and data[4] in (0x12, 0x1E)):  # a dump command, packet sequence 0
                self.refused += 1
                link.close()
                return
            if from_server and self._corrupt is not None:
                with self._lock:
                    if self._corrupt is not None and self._corrupt[0] in data:
                        data = data.replace(*self._corrupt, 1)
                        self._corrupt = None
            if from_server and link.cut_at is not None:
                room = link.cut_at - link.from_server
                if len(data) >= room:
                    try:
                        dst.sendall(data[:room])
                    except OSError:
                        pass
                    link.close()
                    return
            try:
                dst.sendall(data)
            except OSError:
                break
            if from_server:
                link.from_server += len(data)
        link.close()
