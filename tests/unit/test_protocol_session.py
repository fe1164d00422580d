"""ClientConnection against ServerConnection, in memory: no sockets, both sides sans-IO.

Covers every auth path binlake needs (native, caching_sha2 fast/full over "TLS"/full over RSA,
auth switches both ways, refusals) and the command phase both ways (queries, result sets,
replication commands, raw packet streams larger than 16 MiB).
"""
from __future__ import annotations

import pytest

from binlake.protocol import NEED_DATA, auth, client, server
from binlake.protocol.auth import Account, AuthError, Sha2Cache
from binlake.protocol.capabilities import DEFAULT_CLIENT_CAPABILITIES, Capability, Command
from binlake.protocol.client import ClientConnection, ClientState
from binlake.protocol.packets import MAX_PAYLOAD, PacketStream
from binlake.protocol.results import ErrPacket, OkPacket
from binlake.protocol.server import ServerConnection

NATIVE = auth.NATIVE_PASSWORD
SHA2 = auth.CACHING_SHA2_PASSWORD
PASSWORD = "s3cret-pässword"


@pytest.fixture(scope="module")
def rsa_key():
    return auth.generate_rsa_key()


def payloads(chunks: list[bytes]) -> list[bytes]:
    """Split recorded wire bytes back into logical payloads (sequence ids not checked)."""
    rx = PacketStream(check_sequence=False)
    rx.feed(b"".join(chunks))
    out = []
    while (p := rx.next_packet_copy()) is not None:
        out.append(p)
    return out


class Pair:
    """Moves bytes between a client and a server until neither has anything more to say."""

    def __init__(self, c: ClientConnection, s: ServerConnection) -> None:
        self.c, self.s = c, s
        self.c2s: list[bytes] = []
        self.s2c: list[bytes] = []
        self.client_events: list[object] = []
        self.server_events: list[object] = []

    def _to_server(self) -> bool:
        data = self.c.data_to_send()
        if data:
            self.c2s.append(data)
            self.s.receive_data(data)
        return bool(data)

    def _to_client(self) -> bool:
        data = self.s.data_to_send()
        if data:
            self.s2c.append(data)
            self.c.receive_data(data)
        return bool(data)

    def run(self, on_server_event=None) -> "Pair":
        for _ in range(100):
            moved = self._to_client()
            while (ev := self.c.next_event()) is not NEED_DATA:
                self.client_events.append(ev)
                if isinstance(ev, client.StartTLS):
                    moved |= self._to_server()  # the SSLRequest goes out in clear
                    self.c.tls_started()  # a real edge would wrap its socket here
            moved |= self._to_server()
            while (ev := self.s.next_event()) is not NEED_DATA:
                self.server_events.append(ev)
                if isinstance(ev, server.TLSRequested):
                    # the fake TLS layer passes records through unchanged: what followed the
                    # SSLRequest is "decrypted" and handed back after the handshake
                    trailing = self.s.take_trailing_data()
                    self.s.tls_started()
                    self.s.receive_data(trailing)
                elif on_server_event is not None:
                    on_server_event(self.s, ev)
            if not moved and not self.s._out and not self.c._out:
                return self
        raise AssertionError("the conversation did not settle")

    def sent_by_server(self) -> list[bytes]:
        return payloads(self.s2c)

    def sent_by_client(self) -> list[bytes]:
        return payloads(self.c2s)

    def client_outcome(self):
        return next(ev for ev in self.client_events if isinstance(ev, (client.Authenticated, ErrPacket)))


def connect(account: Account, password: str | None = PASSWORD, *, default_plugin: str = SHA2,
            cache: Sha2Cache | None = None, rsa=None, server_tls: bool = False, client_tls: str = "disable",
            user: str = "repl", **client_opts) -> Pair:
    s = ServerConnection({"repl": account}, default_plugin=default_plugin, sha2_cache=cache,
                         rsa_private_key=rsa, tls_available=server_tls)
    c = ClientConnection(user, password, tls=client_tls, **client_opts)
    return Pair(c, s).run()


def assert_ok(pair: Pair, plugin: str) -> None:
    out = pair.client_outcome()
    assert isinstance(out, client.Authenticated), out
    assert out.plugin == plugin
    assert pair.c.state is ClientState.READY
    assert isinstance(pair.server_events[-1], server.Authenticated)
    assert pair.server_events[-1].plugin == plugin


def assert_denied(pair: Pair, code: int = 1045) -> ErrPacket:
    out = pair.client_outcome()
    assert isinstance(out, ErrPacket), out
    assert out.code == code
    assert pair.c.state is ClientState.CLOSED
    assert pair.s.state is server.ServerState.CLOSED
    return out


def password_bytes_seen(chunks: list[bytes]) -> bool:
    return PASSWORD.encode() in b"".join(chunks)


# -- mysql_native_password ----------------------------------------------------------------------


def test_native_ok() -> None:
    pair = connect(Account(PASSWORD, NATIVE), default_plugin=NATIVE)
    assert_ok(pair, NATIVE)
    assert not password_bytes_seen(pair.c2s)
    assert pair.server_events[-1].user == "repl"
    assert pair.server_events[-1].attributes["_client_name"] == "binlake"


def test_native_wrong_password() -> None:
    pair = connect(Account(PASSWORD, NATIVE), "wrong", default_plugin=NATIVE)
    err = assert_denied(pair)
    assert err.sql_state == "28000"
    assert err.message == "Access denied for user 'repl'@'localhost' (using password: YES)"
    assert isinstance(pair.server_events[-1], server.AuthenticationFailed)


def test_native_empty_password() -> None:
    assert_ok(connect(Account("", NATIVE), None, default_plugin=NATIVE), NATIVE)
    err = assert_denied(connect(Account(PASSWORD, NATIVE), None, default_plugin=NATIVE))
    assert "using password: NO" in err.message


def test_unknown_user() -> None:
    assert_denied(connect(Account(PASSWORD, SHA2), user="nobody"))


def test_native_scramble_matches_the_documented_formula() -> None:
    import hashlib

    nonce = b"abcdefghijklmnopqrst"
    s1 = hashlib.sha1(b"pw").digest()
    expected = bytes(a ^ b for a, b in zip(s1, hashlib.sha1(nonce + hashlib.sha1(s1).digest()).digest()))
    assert auth.scramble_native("pw", nonce) == expected
    assert auth.verify_native(auth.native_password_hash("pw"), nonce, expected)
    assert not auth.verify_native(auth.native_password_hash("other"), nonce, expected)


# -- caching_sha2_password ----------------------------------------------------------------------


def test_sha2_fast_auth_with_cached_hash() -> None:
    cache = Sha2Cache()
    cache.put("repl", PASSWORD)
    pair = connect(Account(PASSWORD, SHA2), cache=cache)
    assert_ok(pair, SHA2)
    assert b"\x01\x03" in pair.sent_by_server()  # fast_auth_success
    assert b"\x01\x04" not in pair.sent_by_server()
    assert not password_bytes_seen(pair.c2s)


def test_sha2_fast_auth_wrong_password() -> None:
    cache = Sha2Cache()
    cache.put("repl", PASSWORD)
    assert_denied(connect(Account(PASSWORD, SHA2), "wrong", cache=cache))


def test_sha2_full_auth_over_tls_then_fast() -> None:
    cache = Sha2Cache()
    pair = connect(Account(PASSWORD, SHA2), cache=cache, server_tls=True, client_tls="require")
    assert_ok(pair, SHA2)
    assert isinstance(pair.client_events[1], client.StartTLS)
    assert pair.c.secure and pair.s.secure
    assert b"\x01\x04" in pair.sent_by_server()  # perform_full_authentication
    assert PASSWORD.encode() + b"\x00" in pair.sent_by_client()  # in clear: the channel is "TLS"
    assert "repl" in cache
    again = connect(Account(PASSWORD, SHA2), cache=cache)  # no TLS needed any more
    assert_ok(again, SHA2)
    assert b"\x01\x03" in again.sent_by_server()


def test_sha2_full_auth_over_tls_wrong_password() -> None:
    cache = Sha2Cache()
    assert_denied(connect(Account(PASSWORD, SHA2), "wrong", cache=cache, server_tls=True, client_tls="require"))
    assert "repl" not in cache


def test_sha2_full_auth_rsa_with_key_retrieval(rsa_key) -> None:
    cache = Sha2Cache()
    pair = connect(Account(PASSWORD, SHA2), cache=cache, rsa=rsa_key, allow_public_key_retrieval=True)
    assert_ok(pair, SHA2)
    sent = pair.sent_by_client()
    assert b"\x02" in sent  # request_public_key
    assert any(p.startswith(b"\x01-----BEGIN PUBLIC KEY-----") for p in pair.sent_by_server())
    assert len(sent[-1]) == 256  # one RSA-2048 block
    assert not password_bytes_seen(pair.c2s)
    assert "repl" in cache


def test_sha2_full_auth_rsa_with_known_key(rsa_key) -> None:
    pem = auth.public_key_pem(rsa_key)
    pair = connect(Account(PASSWORD, SHA2), rsa=rsa_key, server_public_key=pem)
    assert_ok(pair, SHA2)
    assert b"\x02" not in pair.sent_by_client()


def test_sha2_full_auth_rsa_wrong_password(rsa_key) -> None:
    assert_denied(connect(Account(PASSWORD, SHA2), "wrong", rsa=rsa_key, allow_public_key_retrieval=True))


def test_sha2_full_auth_without_tls_or_key_fails_clearly(rsa_key) -> None:
    with pytest.raises(AuthError, match="not encrypted") as info:
        connect(Account(PASSWORD, SHA2), rsa=rsa_key)
    assert "allow_public_key_retrieval" in info.value.hint


def test_sha2_key_request_to_a_server_without_key() -> None:
    assert_denied(connect(Account(PASSWORD, SHA2), allow_public_key_retrieval=True))


def test_server_refuses_cleartext_on_insecure_channel(rsa_key) -> None:
    # a client that wrongly believes its channel is secure sends the password in clear
    pair = connect(Account(PASSWORD, SHA2), rsa=rsa_key, secure_transport=True)
    assert_denied(pair)
    assert "unencrypted" in pair.server_events[-1].reason


def test_sha2_scramble_matches_the_documented_formula() -> None:
    import hashlib

    nonce = b"abcdefghijklmnopqrst"
    m1 = hashlib.sha256(b"pw").digest()
    m3 = hashlib.sha256(hashlib.sha256(m1).digest() + nonce).digest()
    expected = bytes(a ^ b for a, b in zip(m1, m3))
    assert auth.scramble_caching_sha2("pw", nonce) == expected
    assert auth.verify_caching_sha2(auth.sha2_cache_entry("pw"), nonce, expected)


def test_rsa_envelope_round_trip(rsa_key) -> None:
    nonce = bytes(range(1, 21))
    long_pw = "p" * 100  # longer than the nonce: the XOR repeats it
    ct = auth.rsa_encrypt_password(long_pw, nonce, auth.public_key_pem(rsa_key))
    assert auth.rsa_decrypt_password(ct, nonce, rsa_key) == long_pw.encode()


# -- auth switch -------------------------------------------------------------------------------


def test_switch_from_sha2_to_native() -> None:
    pair = connect(Account(PASSWORD, NATIVE), default_plugin=SHA2)
    assert_ok(pair, NATIVE)
    assert any(p.startswith(b"\xfemysql_native_password\x00") for p in pair.sent_by_server())
    assert pair.c.auth_plugin == NATIVE


def test_switch_from_native_to_sha2_fast() -> None:
    cache = Sha2Cache()
    cache.put("repl", PASSWORD)
    pair = connect(Account(PASSWORD, SHA2), default_plugin=NATIVE, cache=cache)
    assert_ok(pair, SHA2)
    assert any(p.startswith(b"\xfecaching_sha2_password\x00") for p in pair.sent_by_server())


def test_switch_from_native_to_sha2_full_rsa(rsa_key) -> None:
    pair = connect(Account(PASSWORD, SHA2), default_plugin=NATIVE, rsa=rsa_key, allow_public_key_retrieval=True)
    assert_ok(pair, SHA2)


def test_switch_then_wrong_password() -> None:
    assert_denied(connect(Account(PASSWORD, NATIVE), "wrong", default_plugin=SHA2))


# -- TLS policy ----------------------------------------------------------------------------------


def test_server_requires_tls() -> None:
    s = ServerConnection({"repl": Account(PASSWORD, NATIVE)}, require_tls=True, tls_available=True)
    pair = Pair(ClientConnection("repl", PASSWORD), s).run()
    assert_denied(pair, code=3159)


def test_client_requires_tls_server_has_none() -> None:
    with pytest.raises(client.TLSUnavailable):
        connect(Account(PASSWORD, SHA2), client_tls="require")


def test_client_prefers_tls_server_has_none() -> None:
    cache = Sha2Cache()
    cache.put("repl", PASSWORD)
    pair = connect(Account(PASSWORD, SHA2), cache=cache, client_tls="prefer")
    assert_ok(pair, SHA2)
    assert not pair.c.secure


def test_server_never_reads_past_the_ssl_request() -> None:
    s = ServerConnection({"repl": Account(PASSWORD)}, tls_available=True)
    c = ClientConnection("repl", PASSWORD, tls="require")
    c.receive_data(s.data_to_send())
    assert isinstance(c.next_event(), client.Greeting)
    assert isinstance(c.next_event(), client.StartTLS)
    ssl_request = c.data_to_send()
    assert len(ssl_request) == 36
    assert s.next_event() is NEED_DATA
    assert s.recv_size() == 4  # the header first
    s.receive_data(ssl_request[:4])
    assert s.next_event() is NEED_DATA
    assert s.recv_size() == 32  # then exactly the rest of the packet
    # an edge that over-reads gets the TLS bytes back instead of losing them
    s.receive_data(ssl_request[4:] + b"\x16\x03\x01client-hello")
    assert isinstance(s.next_event(), server.TLSRequested)
    with pytest.raises(Exception, match="followed the SSLRequest"):
        s.tls_started()
    assert s.take_trailing_data() == b"\x16\x03\x01client-hello"
    s.tls_started()
    assert s.secure


def test_no_password_in_reprs() -> None:
    c = ClientConnection("repl", PASSWORD)
    acct = Account(PASSWORD)
    ca = auth.ClientAuth(SHA2, b"n" * 20, PASSWORD)
    for obj in (c, acct, ca, server.RegisterReplica(1, "h", "u", PASSWORD)):
        assert PASSWORD not in repr(obj)


# -- command phase -------------------------------------------------------------------------------


def ready_pair(**client_opts) -> Pair:
    cache = Sha2Cache()
    cache.put("repl", PASSWORD)
    pair = connect(Account(PASSWORD, SHA2), cache=cache, **client_opts)
    assert_ok(pair, SHA2)
    pair.client_events.clear()
    pair.server_events.clear()
    return pair


def answer(s: ServerConnection, ev) -> None:
    if isinstance(ev, server.Query):
        if ev.sql == "SELECT 1":
            s.send_result_set(["1"], [("1",)])
        elif ev.sql.startswith("SELECT big"):
            s.send_result_set(["n", "s"], [(i, None if i % 2 else "x" * i) for i in range(500)])
        elif ev.sql.startswith("INSERT"):
            s.send_ok(affected_rows=len(ev.sql), last_insert_id=7)
        else:
            s.send_error(1146, "Table 'x.nope' doesn't exist", "42S02")
    elif isinstance(ev, (server.Ping, server.RegisterReplica)):
        s.send_ok()


@pytest.mark.parametrize("deprecate_eof", [True, False])
def test_query_result_set(deprecate_eof: bool) -> None:
    caps = DEFAULT_CLIENT_CAPABILITIES
    if not deprecate_eof:
        caps &= ~Capability.DEPRECATE_EOF
    pair = ready_pair(capabilities=caps)
    pair.c.send_query("SELECT big")
    pair.run(answer)
    assert isinstance(pair.server_events[0], server.Query)
    cols = next(e for e in pair.client_events if isinstance(e, client.ColumnsReceived)).columns
    assert [c.name for c in cols] == ["n", "s"]
    rows = [r for e in pair.client_events if isinstance(e, client.Rows) for r in e.rows]
    assert rows == [(str(i), None if i % 2 else "x" * i) for i in range(500)]
    assert isinstance(pair.client_events[-1], client.ResultSetDone)
    assert pair.c.state is ClientState.READY
    # and the connection is reusable
    pair.client_events.clear()
    pair.c.send_query("SELECT 1")
    pair.run(answer)
    assert [r for e in pair.client_events if isinstance(e, client.Rows) for r in e.rows] == [("1",)]


def test_ok_error_ping() -> None:
    pair = ready_pair()
    pair.c.send_query("INSERT x")
    pair.run(answer)
    assert pair.client_events[-1] == OkPacket(8, 7, pair.s.status_flags, 0, "")
    pair.c.send_query("SELECT * FROM nope")
    pair.run(answer)
    err = pair.client_events[-1]
    assert isinstance(err, ErrPacket) and (err.code, err.sql_state) == (1146, "42S02")
    pair.c.send_ping()
    pair.run(answer)
    assert isinstance(pair.server_events[-1], server.Ping)
    assert isinstance(pair.client_events[-1], OkPacket)


def test_query_larger_than_16_mib() -> None:
    pair = ready_pair()
    sql = "INSERT " + "y" * (MAX_PAYLOAD + 100)
    pair.c.send_query(sql)
    pair.run(answer)
    assert pair.server_events[-1].sql == sql
    assert pair.client_events[-1].affected_rows == len(sql)


def test_replication_commands_and_raw_stream() -> None:
    pair = ready_pair()
    reg = server.RegisterReplica(server_id=99, hostname="replica-1", user="repl", password=PASSWORD, port=3307)
    pair.c.send_command(Command.REGISTER_SLAVE, reg.build()[1:])
    pair.run(answer)
    assert pair.server_events[-1] == reg
    assert isinstance(pair.client_events[-1], OkPacket)

    big_event = b"\x00" + bytes(range(256)) * ((MAX_PAYLOAD + 300) // 256)
    events = [b"\x00small-event", big_event, b"\x00" + b"z" * MAX_PAYLOAD]  # the last needs an empty trailer

    def stream(s: ServerConnection, ev) -> None:
        if isinstance(ev, server.BinlogDump):
            # the caller may poll for more events between its replies: the sequence must survive
            assert s.next_event() is NEED_DATA
            for e in events:
                s.send_packet(e)
            assert s.next_event() is NEED_DATA
            s.send_eof()

    dump = server.BinlogDump(position=4, server_id=99, filename="mariadb-bin.000001")
    pair.c.send_command(Command.BINLOG_DUMP, dump.build()[1:], response="raw")
    pair.run(stream)
    assert pair.server_events[-1] == dump
    got = [e.payload for e in pair.client_events if isinstance(e, client.Packet)]
    assert got[:3] == events
    assert got[3][0] == 0xFE  # the EOF ending the dump
    pair.c.end_raw()
    assert pair.c.state is ClientState.READY


def test_semi_sync_ack_out_of_band() -> None:
    pair = ready_pair()
    pair.c.send_command(Command.BINLOG_DUMP, server.BinlogDump(4, 1, "f").build()[1:], response="raw")
    with pytest.raises(Exception, match="only sent during a raw stream"):
        ClientConnection("u").send_out_of_band(b"x")

    def stream(s: ServerConnection, ev) -> None:
        if isinstance(ev, server.BinlogDump):
            s.send_packet(b"\x00\xef\x01event-needing-ack")

    pair.run(stream)
    pair.c.send_out_of_band(b"\xef" + bytes(8) + b"f")
    ack = pair.c.data_to_send()
    assert ack[3] == 0 and ack[4:] == b"\xef" + bytes(8) + b"f"  # sequence id 0
    # whatever numbering the server continues with is accepted
    pair.s.stream.seq = 42
    pair.s.send_packet(b"\x00next-event")
    pair.c.receive_data(pair.s.data_to_send())
    assert pair.c.next_event() == client.Packet(b"\x00next-event")
    assert pair.c.state is ClientState.RAW


def test_binlog_dump_gtid_round_trip() -> None:
    cmd = server.BinlogDumpGtid(server_id=5, filename="", position=4, gtid_data=b"\x01" * 48)
    data = cmd.build()
    assert data[0] == Command.BINLOG_DUMP_GTID
    assert server.BinlogDumpGtid.parse(data[1:]) == cmd
    no_gtid = server.BinlogDumpGtid(server_id=5, filename="bin.000002", position=1234, flags=0)
    assert server.BinlogDumpGtid.parse(no_gtid.build()[1:]) == no_gtid


def test_quit_closes_both_sides() -> None:
    pair = ready_pair()
    pair.c.send_quit()
    assert pair.c.state is ClientState.CLOSED
    pair.run()
    assert isinstance(pair.server_events[-1], server.Quit)
    assert pair.s.state is server.ServerState.CLOSED


def test_command_while_busy_is_refused() -> None:
    pair = ready_pair()
    pair.c.send_query("SELECT 1")
    with pytest.raises(Exception, match="cannot send a command"):
        pair.c.send_query("SELECT 2")
