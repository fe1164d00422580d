"""OK/ERR/EOF packets, column definitions and text rows; result sets with and without DEPRECATE_EOF."""
from __future__ import annotations

import pytest

from binlake.binlog.constants import ColumnType
from binlake.errors import ProtocolError, ServerError
from binlake.protocol import results, wire
from binlake.protocol.capabilities import Capability, ServerStatus
from binlake.protocol.client import ClientConnection, ClientState, ColumnsReceived, NEED_DATA, ResultSetDone, Rows
from binlake.protocol.packets import PacketStream
from binlake.protocol.results import ColumnDefinition, EofPacket, ErrPacket, OkPacket

P41 = Capability.PROTOCOL_41
DEPRECATE = Capability.PROTOCOL_41 | Capability.DEPRECATE_EOF


def test_ok_round_trip_plain() -> None:
    ok = OkPacket(affected_rows=300, last_insert_id=70000, status_flags=ServerStatus.AUTOCOMMIT | ServerStatus.IN_TRANS,
                  warnings=2, info="Rows matched: 1")
    data = ok.build(P41)
    assert data[0] == 0x00
    assert OkPacket.parse(data, P41) == ok


def test_ok_with_session_track() -> None:
    caps = P41 | Capability.SESSION_TRACK
    ok = OkPacket(1, 2, ServerStatus.SESSION_STATE_CHANGED, 0, "info", b"\x00\x05\x04abcd")
    assert OkPacket.parse(ok.build(caps), caps) == ok


def test_ok_from_real_bytes() -> None:
    # a MariaDB reply to an INSERT: 1 row, insert id 5, autocommit, no warnings
    assert OkPacket.parse(b"\x00\x01\x05\x02\x00\x00\x00", P41) == OkPacket(1, 5, 2, 0, "")


def test_err_parse_with_and_without_sql_state() -> None:
    data = b"\xff\x7a\x04#42S02Table 'x.no_such_table' doesn't exist"
    err = ErrPacket.parse(data)
    assert (err.code, err.sql_state) == (1146, "42S02")
    assert err.message.endswith("doesn't exist")
    assert ErrPacket.parse(err.build()) == err
    # pre-handshake errors have no '#' marker
    early = ErrPacket.parse(b"\xff\x10\x04Too many connections")
    assert (early.code, early.sql_state, early.message) == (1040, "", "Too many connections")


def test_err_to_server_error() -> None:
    exc = ErrPacket(1045, "Access denied", "28000").to_error(hint="check the credentials")
    assert isinstance(exc, ServerError)
    assert (exc.code, exc.sql_state, exc.server_message) == (1045, "28000", "Access denied")
    assert "check the credentials" in str(exc)


def test_eof_and_terminators() -> None:
    eof = EofPacket(3, ServerStatus.MORE_RESULTS_EXISTS).build()
    assert results.is_eof(eof)
    assert EofPacket.parse(eof).more_results
    assert results.is_result_terminator(eof, P41)
    term = results.build_terminator(DEPRECATE, ServerStatus.AUTOCOMMIT, 1)
    assert term[0] == 0xFE and term[1:3] == b"\x00\x00"  # OK layout: affected rows, insert id
    assert results.is_result_terminator(term, DEPRECATE)
    assert results.parse_terminator(term, DEPRECATE).warnings == 1
    # a row that starts with 0xFE (an 8-byte length) is 16 MiB or more: never a terminator
    assert not results.is_result_terminator(b"\xfe" + bytes(0xFFFFFF), DEPRECATE)


def test_column_definition_round_trip() -> None:
    col = ColumnDefinition("id", ColumnType.LONGLONG, 63, 20, 0x4203, 0, "db", "t", "t_org", "id_org")
    assert ColumnDefinition.parse(col.build()) == col


def test_text_row_values() -> None:
    values = [None, "", "héllo 🎉", "x" * 251, "y" * 70000, None]
    payload = results.build_text_row(values)
    assert results.parse_text_row(payload, 6) == tuple(values)
    assert results.parse_text_row(memoryview(payload), 6) == tuple(values)


def test_text_row_binary_survives() -> None:
    raw = bytes(range(256))
    (value,) = results.parse_text_row(wire.lenenc_bytes(raw), 1)
    assert value.encode("utf-8", "surrogateescape") == raw


@pytest.mark.parametrize("payload,n", [(b"\x03ab", 1), (b"\x01a", 2), (b"\x01a\x01b", 1)])
def test_text_row_malformed(payload: bytes, n: int) -> None:
    with pytest.raises(ProtocolError):
        results.parse_text_row(payload, n)


def _client_in_result_state(caps: int) -> ClientConnection:
    c = ClientConnection("u", "pw")
    c.capabilities = caps
    c.state = ClientState.READY
    c.send_query("SELECT ...")
    c.data_to_send()
    return c


@pytest.mark.parametrize("caps", [P41, DEPRECATE], ids=["eof", "deprecate-eof"])
def test_result_set_build_then_parse(caps: int) -> None:
    cols = [ColumnDefinition("a"), "b"]
    rows = [("1", None), ("two", "🎉"), (3, b"\xff")]
    payloads = results.build_result_set(cols, rows, caps)
    # the EOF after the column definitions exists only without DEPRECATE_EOF
    n_eof = sum(1 for p in payloads[:-1] if results.is_eof(p))
    assert n_eof == (1 if caps == P41 else 0)
    assert results.is_result_terminator(payloads[-1], caps)
    tx = PacketStream()
    tx.seq = 1
    c = _client_in_result_state(caps)
    c.receive_data(b"".join(tx.frame(p) for p in payloads))
    events = []
    while (ev := c.next_event()) is not NEED_DATA:
        events.append(ev)
    assert isinstance(events[0], ColumnsReceived)
    assert [col.name for col in events[0].columns] == ["a", "b"]
    got = [r for ev in events if isinstance(ev, Rows) for r in ev.rows]
    assert got == [("1", None), ("two", "🎉"), ("3", "\udcff")]
    assert isinstance(events[-1], ResultSetDone)
    assert c.state is ClientState.READY


def test_rows_arriving_in_pieces_are_batched() -> None:
    payloads = results.build_result_set(["n"], [(str(i),) for i in range(1000)], DEPRECATE)
    tx = PacketStream()
    tx.seq = 1
    data = b"".join(tx.frame(p) for p in payloads)
    c = _client_in_result_state(DEPRECATE)
    rows = []
    done = False
    for i in range(0, len(data), 333):
        c.receive_data(data[i:i + 333])
        while (ev := c.next_event()) is not NEED_DATA:
            if isinstance(ev, Rows):
                rows.extend(ev.rows)
            elif isinstance(ev, ResultSetDone):
                done = True
    assert done and rows == [(str(i),) for i in range(1000)]


def test_error_in_the_middle_of_rows() -> None:
    tx = PacketStream()
    tx.seq = 1
    payloads = results.build_result_set(["n"], [("1",)], DEPRECATE)[:-1]
    payloads.append(ErrPacket(1317, "Query execution was interrupted", "70100").build())
    c = _client_in_result_state(DEPRECATE)
    c.receive_data(b"".join(tx.frame(p) for p in payloads))
    events = []
    while (ev := c.next_event()) is not NEED_DATA:
        events.append(ev)
    assert isinstance(events[-1], ErrPacket) and events[-1].code == 1317
    assert c.state is ClientState.READY


def test_multiple_results() -> None:
    tx = PacketStream()
    tx.seq = 1
    more = ServerStatus.AUTOCOMMIT | ServerStatus.MORE_RESULTS_EXISTS
    payloads = results.build_result_set(["a"], [("1",)], DEPRECATE, more)
    payloads.append(OkPacket(status_flags=ServerStatus.AUTOCOMMIT).build(DEPRECATE))
    c = _client_in_result_state(DEPRECATE)
    c.receive_data(b"".join(tx.frame(p) for p in payloads))
    kinds = []
    while (ev := c.next_event()) is not NEED_DATA:
        kinds.append(type(ev).__name__)
    assert kinds == ["ColumnsReceived", "Rows", "ResultSetDone", "OkPacket"]
    assert c.state is ClientState.READY
