"""What `binlake stream` and `binlake sync` check on the server before they start.

A replica needs privileges that a plain SQL user lacks, and each one fails in its own place
and words when missing (a bare 1227 from SHOW MASTER STATUS, an empty schema history from an
information_schema that hides the tables). So they are checked first, together, and a
missing one is reported in one line: which privilege, what for, and the GRANT that fixes it.
`sync` runs these checks before it starts Spark. No Spark here.

- REPLICATION SLAVE: reading the binlog (COM_REGISTER_SLAVE needs it too, so it is the probe).
- BINLOG MONITOR (MariaDB 10.5+) / REPLICATION CLIENT: the binlog's end (SHOW MASTER STATUS),
  for a start at the end and for --until-end.
- SELECT on the streamed tables: the schema history's bootstrap and the snapshot.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ..errors import BinlakeError, ConfigError, ServerError
from ..cdc.table_patterns import compile_patterns, parse_patterns
from . import dialogue as dlg
from .connection import MySQLConnection
from .._util.versions import version_tuple

ER_SPECIFIC_ACCESS_DENIED = 1227
ER_ACCESS_DENIED = 1045
ER_TABLEACCESS_DENIED = 1142
_PRIVILEGES_RE = re.compile(r"the (.+?) privilege\(s\)")
_SYSTEM_SCHEMAS = ("information_schema", "performance_schema", "sys")  # (never in the binlog)
_SHOWN_TABLES = 3


class MissingPrivilege(BinlakeError):
    """The server account lacks a privilege binlake needs; names it and the GRANT."""


@dataclass(frozen=True)
class Needs:
    """What the run will do on the server."""

    binlog_status: str | None = None
    """Read the binlog's end (SHOW MASTER STATUS): what for (None: not needed)."""
    select: str | None = None
    """Read the tables' shapes or rows: what for (None: not needed)."""
    unmatched_is_error: bool = False
    """A --tables pattern that matches no table is an error (sync), else a warning."""


def check(conn: MySQLConnection, tables: str | None, needs: Needs, *, server_id: int,
          warn: Callable[[str], None], option: str = "--tables") -> None:
    """Check the privileges and the table patterns on `conn`; MissingPrivilege or
    ConfigError in one line, `warn` for what is only suspicious."""
    patterns = parse_patterns(tables, option) if tables is not None else None
    account = _account(conn)
    missing: list[tuple[str, str]] = []  # (privilege, what for)
    if not _may_replicate(conn, server_id):
        missing.append(("REPLICATION SLAVE", "to read the binlog"))
    if needs.binlog_status:
        names = _binlog_status_denied(conn)
        if names:
            missing.append((" or ".join(names), f"to read where the binlog ends "
                                                f"({needs.binlog_status})"))
    if missing:
        privs = ", ".join(p.split(" or ")[0] for p, _ in missing)
        raise MissingPrivilege(
            f"{account} on {conn.host}:{conn.port} lacks "
            + " and ".join(f"{p}, needed {why}" for p, why in missing),
            hint=f"GRANT {privs} ON *.* TO {account}")
    if (needs.select is None and patterns is None) or serves_files(conn):
        return
    _check_tables(conn, patterns, needs, account, warn, option)


def serves_files(conn: MySQLConnection) -> bool:
    """Is the server `binlake serve`? It serves binlog files and has no tables to check."""
    return "-binlake" in conn.server_version.lower()


def _account(conn: MySQLConnection) -> str:
    """The account the server matched, as 'user'@'host' (for GRANT statements)."""
    try:
        text = conn.query("SELECT CURRENT_USER()").rows[0][0] or ""
    except BinlakeError:
        text = ""
    user, _, host = text.rpartition("@")
    if not user:
        return f"'{conn.user}'"
    return f"'{user}'@'{host}'"


def _may_replicate(conn: MySQLConnection, server_id: int) -> bool:
    """Does the account hold REPLICATION SLAVE? COM_REGISTER_SLAVE asks for just that. The
    probe registers under another id than the stream's (the probe's connection drops it)."""
    try:
        conn.command(dlg.COM_REGISTER_SLAVE,
                     dlg.register_slave_payload(server_id ^ 0x40000000, "binlake-preflight", port=0))
    except ServerError as exc:
        # MariaDB refuses it with 1045 (Access denied for user), MySQL with 1227.
        return exc.code not in (ER_SPECIFIC_ACCESS_DENIED, ER_ACCESS_DENIED)
    return True


def _binlog_status_denied(conn: MySQLConnection) -> list[str]:
    """The privileges the server names when it refuses SHOW MASTER STATUS (SUPER left out:
    never the one to grant a replica); [] when it answers."""
    mysql84 = conn.flavor == "mysql" and version_tuple(conn.server_version) >= (8, 4, 0)
    try:
        rs = conn.query("SHOW BINARY LOG STATUS" if mysql84 else "SHOW MASTER STATUS")
    except ServerError as exc:
        if exc.code != ER_SPECIFIC_ACCESS_DENIED:
            raise
        m = _PRIVILEGES_RE.search(exc.server_message)
        names = [n.strip() for n in m.group(1).split(",")] if m else []
        names = [n for n in names if n != "SUPER"] or ["REPLICATION CLIENT"]
        if conn.flavor == "mariadb" and "BINLOG MONITOR" in names:
            names = ["BINLOG MONITOR"]  # REPLICATION CLIENT is its alias since 10.5
        return names
    if not rs.rows:
        raise ConfigError(f"{conn.host}:{conn.port} has binary logging disabled",
                          hint="start the server with log_bin and binlog_format=ROW")
    return []


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(part: str) -> bool:
    return not any(c in part for c in "*?[")


def _grant_target(pattern: str) -> str:
    db, table = pattern.split(".", 1)
    if not _literal(db):
        return "*.*"
    return f"{_quote(db)}.{_quote(table) if _literal(table) else '*'}"


def _check_tables(conn: MySQLConnection, patterns: list[str] | None, needs: Needs,
                  account: str, warn: Callable[[str], None], option: str) -> None:
    visible = [(str(db), str(t)) for db, t in conn.query(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE IN "
        "('BASE TABLE', 'SYSTEM VERSIONED') AND TABLE_SCHEMA NOT IN ("
        + ", ".join(f"'{s}'" for s in _SYSTEM_SCHEMAS) + ")").rows]
    global_select = _has_global_select(conn, account)
    where = f"{conn.host}:{conn.port}"
    if patterns is None:
        wanted = visible
        if not global_select and needs.select is not None:
            text = (f"{account} on {where} can read no table: SELECT on the streamed tables "
                    f"is needed {needs.select}")
            fix = (f"GRANT SELECT ON *.* TO {account}, or on the streamed databases only and "
                   f"name them with {option}")
            if not wanted:
                raise MissingPrivilege(text, hint=fix)
            # Tables it may not see are invisible here too: say that only these are known.
            warn(f"binlake: warning: {account} on {where} has no SELECT on *.*: the tables "
                 f"it cannot see are not known {needs.select} ({fix})")
    else:
        wanted = []
        for p in patterns:
            rx = compile_patterns([p])
            hits = [k for k in visible if rx.match(f"{k[0]}.{k[1]}")]
            wanted += hits
            if hits:
                continue
            if global_select:
                text = f"{option} pattern {p!r} matches no table on {where}"
                fix = "check the pattern (SHOW TABLES lists the tables)"
            else:
                text = (f"{option} pattern {p!r} matches no table that {account} can see on "
                        f"{where} (no such table, or no privilege on it)")
                fix = f"GRANT SELECT ON {_grant_target(p)} TO {account}"
            if needs.select is not None and not global_select:
                raise MissingPrivilege(f"{text}: SELECT on it is needed {needs.select}", hint=fix)
            if needs.unmatched_is_error:
                raise ConfigError(text, hint=fix)
            warn(f"binlake: warning: {text} ({fix})")
    if needs.select is None or global_select:
        return
    readable = _select_databases(conn, account)
    denied = [k for k in dict.fromkeys(wanted)
              if not any(rx.fullmatch(k[0]) for rx in readable) and not _may_select(conn, k)]
    if denied:
        dbs = list(dict.fromkeys(db for db, _ in denied))
        shown = ", ".join(f"{db}.{t}" for db, t in denied[:_SHOWN_TABLES])
        more = f" and {len(denied) - _SHOWN_TABLES} more" if len(denied) > _SHOWN_TABLES else ""
        raise MissingPrivilege(
            f"{account} on {where} lacks SELECT on {shown}{more}, needed {needs.select}",
            hint="; ".join(f"GRANT SELECT ON {_quote(db)}.* TO {account}" for db in dbs[:3])
            + ("; ..." if len(dbs) > 3 else ""))


def _has_global_select(conn: MySQLConnection, account: str) -> bool:
    """Does the account hold SELECT on *.* (then every table can be read)? Through a role
    it does not show here: the tables are then probed one by one."""
    grantee = account.replace("\\", "\\\\").replace("'", "''")
    try:
        rows = conn.query("SELECT 1 FROM information_schema.USER_PRIVILEGES WHERE "
                          f"PRIVILEGE_TYPE = 'SELECT' AND GRANTEE = '{grantee}' LIMIT 1").rows
    except BinlakeError:
        return False
    return bool(rows)


def _select_databases(conn: MySQLConnection, account: str) -> list["re.Pattern[str]"]:
    """The database grants the account may SELECT from as a whole (GRANT SELECT ON db.*), as
    expressions (a grant's name is a LIKE pattern: '_' and '%' match, '\\' escapes): their
    tables need no probe each."""
    grantee = account.replace("\\", "\\\\").replace("'", "''")
    try:
        rows = conn.query("SELECT TABLE_SCHEMA FROM information_schema.SCHEMA_PRIVILEGES WHERE "
                          f"PRIVILEGE_TYPE = 'SELECT' AND GRANTEE = '{grantee}'").rows
    except BinlakeError:
        return []
    return [re.compile(_like(str(r[0]))) for r in rows if r[0]]


def _like(pattern: str) -> str:
    out, escaped = [], False
    for c in pattern:
        if escaped:
            out.append(re.escape(c))
            escaped = False
        elif c == "\\":
            escaped = True
        else:
            out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
    return "".join(out)


def _may_select(conn: MySQLConnection, key: tuple[str, str]) -> bool:
    try:
        conn.query(f"SELECT 1 FROM {_quote(key[0])}.{_quote(key[1])} LIMIT 0")
    except ServerError as exc:
        if exc.code in (ER_TABLEACCESS_DENIED, ER_SPECIFIC_ACCESS_DENIED):
            return False
        raise
    return True


SYNC_PROBE_SERVER_ID = 6449600
"""The replica id `sync`'s privilege probe registers under (flipped as check() does)."""


def check_sync(url: str, tables: str, warn: Callable[[str], None]) -> None:
    """`binlake sync`'s checks, before Spark starts: the URL, the connection, the privileges
    (REPLICATION SLAVE, the binlog's end, SELECT on every table) and the --tables patterns
    (one that matches no table is an error: there would be nothing to sync)."""
    from .url import ServerURL

    server = ServerURL.parse(url)
    parse_patterns(tables)
    with MySQLConnection.connect(server.host, server.port, server.user, server.password,
                                 **server.connect_kwargs()) as conn:
        check(conn, tables, Needs(binlog_status="for the snapshot and the stream's start",
                                  select="for the snapshot and the schema history",
                                  unmatched_is_error=True),
              server_id=SYNC_PROBE_SERVER_ID, warn=warn)
