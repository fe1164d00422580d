"""Capability and status flags, command bytes and collation ids of the client/server protocol.

Both MySQL and MariaDB share the low 32 capability bits; MariaDB adds 32 "extended" bits that
travel in otherwise reserved bytes of the handshake, and signals itself by *clearing* bit 0
(CLIENT_LONG_PASSWORD, which MariaDB renamed CLIENT_MYSQL).
"""
from __future__ import annotations

import enum


class Capability(enum.IntFlag):
    """CLIENT_* capability flags (the 32 bits both servers understand)."""

    LONG_PASSWORD = 1 << 0  # MariaDB: CLIENT_MYSQL; a MariaDB server leaves it unset
    FOUND_ROWS = 1 << 1
    LONG_FLAG = 1 << 2
    CONNECT_WITH_DB = 1 << 3
    NO_SCHEMA = 1 << 4
    COMPRESS = 1 << 5
    ODBC = 1 << 6
    LOCAL_FILES = 1 << 7
    IGNORE_SPACE = 1 << 8
    PROTOCOL_41 = 1 << 9
    INTERACTIVE = 1 << 10
    SSL = 1 << 11
    IGNORE_SIGPIPE = 1 << 12
    TRANSACTIONS = 1 << 13
    RESERVED = 1 << 14
    SECURE_CONNECTION = 1 << 15
    MULTI_STATEMENTS = 1 << 16
    MULTI_RESULTS = 1 << 17
    PS_MULTI_RESULTS = 1 << 18
    PLUGIN_AUTH = 1 << 19
    CONNECT_ATTRS = 1 << 20
    PLUGIN_AUTH_LENENC_CLIENT_DATA = 1 << 21
    CAN_HANDLE_EXPIRED_PASSWORDS = 1 << 22
    SESSION_TRACK = 1 << 23
    DEPRECATE_EOF = 1 << 24
    OPTIONAL_RESULTSET_METADATA = 1 << 25
    ZSTD_COMPRESSION_ALGORITHM = 1 << 26
    QUERY_ATTRIBUTES = 1 << 27
    MULTI_FACTOR_AUTHENTICATION = 1 << 28
    CAPABILITY_EXTENSION = 1 << 29
    SSL_VERIFY_SERVER_CERT = 1 << 30
    REMEMBER_OPTIONS = 1 << 31


#: MariaDB's name for bit 0: set by MySQL servers, cleared by MariaDB servers.
CLIENT_MYSQL = Capability.LONG_PASSWORD


class ServerStatus(enum.IntFlag):
    """SERVER_STATUS_* bits carried by OK and EOF packets."""

    IN_TRANS = 0x0001
    AUTOCOMMIT = 0x0002
    MORE_RESULTS_EXISTS = 0x0008
    NO_GOOD_INDEX_USED = 0x0010
    NO_INDEX_USED = 0x0020
    CURSOR_EXISTS = 0x0040
    LAST_ROW_SENT = 0x0080
    DB_DROPPED = 0x0100
    NO_BACKSLASH_ESCAPES = 0x0200
    METADATA_CHANGED = 0x0400
    QUERY_WAS_SLOW = 0x0800
    PS_OUT_PARAMS = 0x1000
    IN_TRANS_READONLY = 0x2000
    SESSION_STATE_CHANGED = 0x4000


class Command(enum.IntEnum):
    """COM_* command bytes (first byte of every command-phase client packet)."""

    SLEEP = 0x00
    QUIT = 0x01
    INIT_DB = 0x02
    QUERY = 0x03
    FIELD_LIST = 0x04
    CREATE_DB = 0x05
    DROP_DB = 0x06
    REFRESH = 0x07
    SHUTDOWN = 0x08
    STATISTICS = 0x09
    PROCESS_INFO = 0x0A
    CONNECT = 0x0B
    PROCESS_KILL = 0x0C
    DEBUG = 0x0D
    PING = 0x0E
    TIME = 0x0F
    DELAYED_INSERT = 0x10
    CHANGE_USER = 0x11
    BINLOG_DUMP = 0x12
    TABLE_DUMP = 0x13
    CONNECT_OUT = 0x14
    REGISTER_SLAVE = 0x15
    STMT_PREPARE = 0x16
    STMT_EXECUTE = 0x17
    STMT_SEND_LONG_DATA = 0x18
    STMT_CLOSE = 0x19
    STMT_RESET = 0x1A
    SET_OPTION = 0x1B
    STMT_FETCH = 0x1C
    DAEMON = 0x1D
    BINLOG_DUMP_GTID = 0x1E
    RESET_CONNECTION = 0x1F


#: utf8mb4_general_ci: the one utf8mb4 collation id that every MySQL and MariaDB knows.
UTF8MB4_GENERAL_CI = 45
#: the "binary" pseudo-collation (BLOB/BINARY columns).
BINARY_COLLATION = 63

#: What binlake asks for as a client (intersected with what the server offers).
DEFAULT_CLIENT_CAPABILITIES = (
    Capability.LONG_PASSWORD
    | Capability.LONG_FLAG
    | Capability.PROTOCOL_41
    | Capability.TRANSACTIONS
    | Capability.SECURE_CONNECTION
    | Capability.MULTI_RESULTS
    | Capability.PS_MULTI_RESULTS
    | Capability.PLUGIN_AUTH
    | Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA
    | Capability.CONNECT_ATTRS
    | Capability.DEPRECATE_EOF
)

#: What binlake's own primary offers (SSL is added when it has a certificate).
DEFAULT_SERVER_CAPABILITIES = (
    Capability.LONG_PASSWORD
    | Capability.FOUND_ROWS
    | Capability.LONG_FLAG
    | Capability.CONNECT_WITH_DB
    | Capability.PROTOCOL_41
    | Capability.TRANSACTIONS
    | Capability.SECURE_CONNECTION
    | Capability.MULTI_RESULTS
    | Capability.PS_MULTI_RESULTS
    | Capability.PLUGIN_AUTH
    | Capability.CONNECT_ATTRS
    | Capability.PLUGIN_AUTH_LENENC_CLIENT_DATA
    | Capability.DEPRECATE_EOF
)
