"""Errors are values with positions: every failure says where it happened and what to do.

binlake never skips what it cannot decode. Each error carries the binlog file and byte offset
(or the stream position) so that a user can look at the exact event with other tools.
"""
from __future__ import annotations


class BinlakeError(Exception):
    """Base class of every error binlake raises on purpose."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} ({self.hint})" if self.hint else text


class DecodeError(BinlakeError):
    """Bytes that do not form a valid binlog event; names the file, offset and event type."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        offset: int | None = None,
        event_type: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.reason = message
        self.file = file
        self.offset = offset
        self.event_type = event_type
        where = []
        if file is not None:
            where.append(str(file))
        if offset is not None:
            where.append(f"offset {offset}")
        if event_type is not None:
            where.append(event_type)
        prefix = f"{' '.join(where)}: " if where else ""
        super().__init__(prefix + message, hint=hint)

    def located(self, *, file: str | None = None, offset: int | None = None,
                hint: str | None = None) -> "DecodeError":
        """The same error with a file/offset filled in by an outer layer that knows them
        (and its own hint, where it knows better what to do)."""
        return type(self)(
            self.reason,
            file=self.file if self.file is not None else file,
            offset=self.offset if self.offset is not None else offset,
            event_type=self.event_type,
            hint=hint or self.hint or None,
        )


class TruncatedError(DecodeError):
    """The data ends inside an event (a file copied while written, or a cut stream)."""

    hint = "the binlog ends inside this event; if the server is still writing it, read again later"


class ChecksumError(DecodeError):
    """An event's CRC32 does not match its bytes."""

    hint = "the event is corrupt; restore the binlog from the server or a backup"


class UnknownEventError(DecodeError):
    """An event type binlake does not know; refused unless the user asked for raw pass-through."""

    hint = "upgrade binlake, or pass --allow-unknown-events to hand it on as raw bytes"


class SchemaError(BinlakeError):
    """Column names/types cannot be determined safely, or the history disagrees with a TABLE_MAP."""


class SchemaDriftError(SchemaError):
    """A TABLE_MAP does not match the table shape binlake tracked for that position."""


class ProtocolError(BinlakeError):
    """The peer sent bytes that violate the MySQL client/server protocol."""


class ServerError(BinlakeError):
    """An ERR packet from the server, with its error code and SQL state."""

    def __init__(self, code: int, message: str, sql_state: str = "", *, hint: str | None = None):
        self.code = code
        self.sql_state = sql_state
        self.server_message = message
        state = f" ({sql_state})" if sql_state else ""
        super().__init__(f"server error {code}{state}: {message}", hint=hint)


class ConfigError(BinlakeError):
    """Invalid user input: URL, options, key file."""
