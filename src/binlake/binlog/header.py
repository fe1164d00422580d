"""The 19-byte v4 event header, common to every event since MySQL 5.0."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from .constants import EventType
from .makers import slot_maker

_HEADER = struct.Struct("<IBIIIH")


@dataclass(frozen=True, slots=True)
class EventHeader:
    """The 19-byte common header every binlog event starts with."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int

    @property
    def type_name(self) -> str:
        return EventType.name_of(self.type_code)


make_header: Callable[[int, int, int, int, int, int], EventHeader] = slot_maker(EventHeader)
"""EventHeader(timestamp, type_code, server_id, event_size, log_pos, flags), positionally."""


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> EventHeader:
    """Parse a header; the caller guarantees 19 bytes are there."""
    return make_header(*_HEADER.unpack_from(buf, pos))


def pack_header(h: EventHeader) -> bytes:
    return _HEADER.pack(h.timestamp, h.type_code, h.server_id, h.event_size, h.log_pos, h.flags)
