"""A throwaway local MariaDB with the binlog on, for tests, demos and the quickstart.

binlake reads binlogs, so every real test needs a real server whose binlog settings we control
(row metadata, row image, checksums, GTID strictness).  A DevServer owns one datadir under
``base_dir``, starts ``mariadbd`` with ``--no-defaults`` so no system config leaks in, and creates
a replication-capable user.  Several can run at once: each has its own directory and port.

Starting needs no client library: the user and database are created by ``--init-file`` and
readiness is checked by reading the server's greeting, so the product can start one without
PyMySQL.  Only :meth:`DevServer.connect` and :meth:`DevServer.sql` import PyMySQL.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from binlake.errors import BinlakeError

if TYPE_CHECKING:  # pragma: no cover
    import pymysql.connections

__all__ = ["DevServer", "DevServerError", "ExternalServer", "find_binary"]

# Debian puts mariadbd in /usr/sbin, which is not on every user's PATH.
_EXTRA_BIN_DIRS = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/libexec")
_READY_LINE = "ready for connections"
_BIND_FAILURES = ("Address already in use", "Do you already have another", "Can't start server: Bind")
_LOG_TAIL_LINES = 40
# sockaddr_un.sun_path is 108 bytes on Linux; stay clear of it.
_MAX_SOCKET_PATH = 100

_running: "weakref.WeakSet[DevServer]" = weakref.WeakSet()


class DevServerError(BinlakeError):
    """The local MariaDB could not be set up, started or stopped; carries the error log tail."""


def find_binary(*names: str) -> str | None:
    """First of ``names`` found on PATH or in the usual sbin/bin directories."""
    search = os.pathsep.join([os.environ.get("PATH", ""), *_EXTRA_BIN_DIRS])
    for name in names:
        found = shutil.which(name, path=search)
        if found:
            return found
    return None


def _free_port() -> int:
    """A port the kernel considers free on 127.0.0.1 now (it may be taken again before use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sql_str(value: str) -> str:
    """A single-quoted SQL string literal (for the init file, where no client escapes for us)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _run_sql(conn: Any, statements: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Execute on ``conn``, then close it; the rows of the last statement."""
    try:
        rows: list[tuple[Any, ...]] = []
        with conn.cursor() as cur:
            for stmt in statements:
                cur.execute(stmt)
                rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
        return rows
    finally:
        conn.close()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _BinlogStatus:
    """What tests and demos ask a server about its binlog (both kinds of server have `sql`)."""

    def sql(self, *statements: str, database: str | None = "binlake_test") -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def binlog_end(self) -> tuple[str, int]:
        """(file, offset) where the next event will be written (SHOW MASTER STATUS)."""
        file, pos = self.sql("SHOW MASTER STATUS", database=None)[0][:2]
        return str(file), int(pos)

    def binlog_end_gtid(self) -> tuple[str, int, str]:
        """binlog_end() and the MariaDB GTID position there (BINLOG_GTID_POS)."""
        file, pos = self.binlog_end()
        (gtid,), = self.sql(f"SELECT BINLOG_GTID_POS('{file}', {pos})", database=None)
        return file, pos, str(gtid or "")


@dataclass(eq=False)  # identity equality: servers are kept in a WeakSet for cleanup at exit
class DevServer(_BinlogStatus):
    """One local mariadbd whose datadir, socket, logs and binlogs live under ``base_dir``."""

    base_dir: Path
    port: int = 0
    server_id: int = 1
    binlog_row_metadata: str = "FULL"
    binlog_row_image: str = "FULL"
    extra_options: dict[str, str] = field(default_factory=dict)
    user: str = "binlake"
    password: str = "binlake-pw"

    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)
    _auto_port: bool = field(default=False, init=False, repr=False)
    _socket_dir: Path | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.base_dir = Path(self.base_dir).absolute()
        self._auto_port = self.port == 0

    # Paths -----------------------------------------------------------------------------------

    @property
    def datadir(self) -> Path:
        return self.base_dir / "data"

    @property
    def binlog_dir(self) -> Path:
        return self.base_dir / "binlog"

    @property
    def tmp_dir(self) -> Path:
        return self.base_dir / "tmp"

    @property
    def error_log(self) -> Path:
        """mariadbd's stdout and stderr, appended across starts."""
        return self.base_dir / "error.log"

    @property
    def pid_file(self) -> Path:
        return self.base_dir / "mariadbd.pid"

    @property
    def socket_path(self) -> Path:
        """Unix socket; moved to a short temp dir when base_dir is too deep for sun_path."""
        path = self.base_dir / "mariadbd.sock"
        if len(str(path)) <= _MAX_SOCKET_PATH:
            return path
        if self._socket_dir is None:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="binlake-sock-"))
        return self._socket_dir / "mariadbd.sock"

    @property
    def url(self) -> str:
        if not self.port:
            raise DevServerError("the dev server has no port until it is started")
        return f"mysql://{self.user}:{self.password}@127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def running(self) -> bool:
        return self.pid is not None

    # Lifecycle -------------------------------------------------------------------------------

    def start(self, timeout: float = 60) -> "DevServer":
        """Initialise the datadir if new, start mariadbd and wait until it serves clients."""
        if self.running:
            return self
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.binlog_dir.mkdir(parents=True, exist_ok=True)
        self._refuse_if_other_instance()
        deadline = time.monotonic() + timeout
        if not (self.datadir / "mysql").is_dir():
            self._install_datadir(timeout=max(1.0, deadline - time.monotonic()))
        self._write_init_file()
        attempts = 3 if self._auto_port else 1
        for attempt in range(attempts):
            if self._auto_port and (attempt > 0 or not self.port):
                self.port = _free_port()
            log_offset = self.error_log.stat().st_size if self.error_log.exists() else 0
            self._spawn()
            try:
                self._wait_ready(log_offset, deadline)
            except DevServerError:
                self._terminate(force=True)
                new_log = self._read_log(log_offset)
                if attempt + 1 < attempts and any(s in new_log for s in _BIND_FAILURES):
                    continue  # another process took our free port in the meantime
                raise
            _running.add(self)
            return self
        raise AssertionError("unreachable")  # pragma: no cover

    def stop(self, timeout: float = 30) -> None:
        """Clean shutdown: SIGTERM, then SIGKILL if mariadbd has not exited within ``timeout``."""
        self._terminate(force=False, timeout=timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash would: no flush, no clean binlog close (for recovery tests)."""
        self._terminate(force=True)

    def restart(self, timeout: float = 60) -> None:
        """Stop and start again on the same datadir and port."""
        self.stop()
        self.start(timeout=timeout)

    def __enter__(self) -> "DevServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Client helpers --------------------------------------------------------------------------

    def connect(self, database: str | None = "binlake_test", **kw: Any) -> "pymysql.connections.Connection[Any]":
        """A PyMySQL connection as the binlake user over TCP, autocommit on."""
        import pymysql  # only the helpers need a client library

        if not self.running and not self.port:
            raise DevServerError("the dev server is not started")
        params: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "database": database,
            "autocommit": True,
            "charset": "utf8mb4",
            "connect_timeout": 10,
        }
        params.update(kw)
        return pymysql.connect(**params)

    def sql(self, *statements: str, database: str | None = "binlake_test") -> list[tuple[Any, ...]]:
        """Run statements in one session; return the rows of the last one (empty if none)."""
        return _run_sql(self.connect(database=database), statements)

    # Internals -------------------------------------------------------------------------------

    def _options(self) -> list[str]:
        """mariadbd command-line options; extra_options override the defaults by name."""
        opts: dict[str, str | None] = {
            "datadir": str(self.datadir),
            "socket": str(self.socket_path),
            "pid_file": str(self.pid_file),
            "port": str(self.port),
            "bind_address": "127.0.0.1",
            "skip_networking": "0",
            "skip_name_resolve": None,
            "init_file": str(self.base_dir / "init.sql"),
            "log_bin": str(self.binlog_dir / "mariadb-bin"),
            "binlog_format": "ROW",
            "server_id": str(self.server_id),
            "gtid_strict_mode": "ON",
            "log_slave_updates": "ON",
            "binlog_row_metadata": self.binlog_row_metadata,
            "binlog_row_image": self.binlog_row_image,
            "binlog_checksum": "CRC32",
            "max_allowed_packet": "1G",
            # --no-defaults would leave latin1; real servers (and Debian's config) use utf8mb4.
            "character_set_server": "utf8mb4",
            "collation_server": "utf8mb4_general_ci",
            # Small, fast, and still safe against a process kill (the OS keeps written pages).
            "innodb_buffer_pool_size": "64M",
            "innodb_log_file_size": "48M",
            "innodb_flush_log_at_trx_commit": "2",
            "performance_schema": "OFF",
            # Its own temp dir: servers that share /tmp with other work lose temp files there.
            "tmpdir": str(self.tmp_dir),
        }
        if os.geteuid() == 0:
            opts["user"] = "root"  # mariadbd refuses to run as root unless told to
        for key, value in self.extra_options.items():
            opts[key.replace("-", "_")] = value
        args = []
        for key, value in opts.items():
            name = "--" + key.replace("_", "-")
            args.append(name if value is None or value == "" else f"{name}={value}")
        return args

    def _install_datadir(self, timeout: float) -> None:
        """mariadb-install-db into a scratch dir, renamed when done, so a half-made one never counts."""
        tool = find_binary("mariadb-install-db", "mysql_install_db")
        server = find_binary("mariadbd", "mysqld")
        if tool is None or server is None:
            raise DevServerError(
                "MariaDB server binaries not found (looked for mariadb-install-db and mariadbd)",
                hint="install them: apt-get install mariadb-server, or run scripts/install-deps.sh",
            )
        scratch = self.base_dir / "data.init"
        shutil.rmtree(scratch, ignore_errors=True)
        cmd = [
            tool,
            "--no-defaults",
            f"--datadir={scratch}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            "--innodb-log-file-size=48M",
            "--innodb-buffer-pool-size=64M",
        ]
        basedir = Path(server).resolve().parent.parent
        cmd.append(f"--basedir={basedir}")
        if os.geteuid() == 0:
            cmd.append("--user=root")
        log = self.base_dir / "install.log"
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "TMPDIR": str(self.tmp_dir)}  # (the bootstrap server's tmpdir)
        with open(log, "wb") as out:
            try:
                rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    timeout=timeout, env=env).returncode
            except subprocess.TimeoutExpired:
                rc = -1
        if rc != 0 or not (scratch / "mysql").is_dir():
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-_LOG_TAIL_LINES:])
            raise DevServerError(f"mariadb-install-db failed (exit {rc}) for {scratch}:\n{tail}")
        shutil.rmtree(self.datadir, ignore_errors=True)
        scratch.rename(self.datadir)

    def _write_init_file(self) -> None:
        """SQL mariadbd runs at every start, before it accepts clients: the user and test database.

        sql_log_bin=0 keeps this bookkeeping out of the binlog, so tests see only their own events.
        """
        user = _sql_str(self.user)
        pw = _sql_str(self.password)
        lines = ["SET sql_log_bin=0;"]
        for host in ("'%'", "'localhost'"):
            account = f"{user}@{host}"
            lines += [
                f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY {pw};",
                f"ALTER USER {account} IDENTIFIED BY {pw};",
                # ALL PRIVILEGES includes REPLICATION SLAVE, BINLOG MONITOR, REPLICATION MASTER
                # ADMIN, SLAVE MONITOR, ...; named anyway so the intent survives a reader.
                f"GRANT ALL PRIVILEGES ON *.* TO {account} WITH GRANT OPTION;",
                f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* TO {account};",
            ]
        lines.append("CREATE DATABASE IF NOT EXISTS binlake_test;")
        path = self.base_dir / "init.sql"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds the password
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")

    def _refuse_if_other_instance(self) -> None:
        """A mariadbd from an earlier process on this datadir would fail InnoDB's lock obscurely."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return
        if pid == os.getpid() or not _pid_alive(pid):
            return
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return
        if "mariadbd" in cmdline or "mysqld" in cmdline:
            raise DevServerError(
                f"a mariadbd (pid {pid}) is already running on {self.datadir}",
                hint=f"stop it first (kill {pid}) or use another base_dir",
            )

    def _spawn(self) -> None:
        server = find_binary("mariadbd", "mysqld")
        if server is None:
            raise DevServerError(
                "mariadbd not found on PATH or in /usr/sbin",
                hint="install it: apt-get install mariadb-server, or run scripts/install-deps.sh",
            )
        # --no-defaults must be the first option, or mariadbd reads /etc/mysql anyway.
        cmd = [server, "--no-defaults", *self._options()]
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.error_log, "ab")
        self._log.write(f"\n=== binlake devserver start {time.strftime('%Y-%m-%d %H:%M:%S')}: "
                        f"{' '.join(cmd)}\n".encode())
        self._log.flush()
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, close_fds=True)

    def _read_log(self, offset: int) -> str:
        try:
            with open(self.error_log, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _log_tail(self, offset: int) -> str:
        return "\n".join(self._read_log(offset).splitlines()[-_LOG_TAIL_LINES:])

    def _wait_ready(self, log_offset: int, deadline: float) -> None:
        """Wait for our process's 'ready' line and a MySQL greeting on our port."""
        assert self._proc is not None
        while True:
            rc = self._proc.poll()
            if rc is not None:
                raise DevServerError(
                    f"mariadbd exited with code {rc} during start; {self.error_log} ends with:\n"
                    + self._log_tail(log_offset)
                )
            text = self._read_log(log_offset)
            if _READY_LINE in text:
                errors = [ln for ln in text.splitlines() if ln.startswith("ERROR:")]
                if errors:  # a failed init-file statement is only logged; the user may be missing
                    raise DevServerError(
                        "the init file failed during start; " f"{self.error_log} ends with:\n"
                        + self._log_tail(log_offset)
                    )
                if self._greets():
                    return
            if time.monotonic() >= deadline:
                raise DevServerError(
                    f"mariadbd did not accept connections on port {self.port} in time; "
                    f"{self.error_log} ends with:\n" + self._log_tail(log_offset)
                )
            time.sleep(0.05)

    def _greets(self) -> bool:
        """True if a MySQL handshake (protocol 10) arrives on our port."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                head = s.recv(5)
                return len(head) == 5 and head[4] == 10
        except OSError:
            return False

    def _terminate(self, force: bool, timeout: float = 30) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL if force else signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._proc = None
        if self._socket_dir is not None:  # our private short socket dir; a new start makes another
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
        if self._log is not None:
            self._log.close()
            self._log = None
        _running.discard(self)


class ExternalServer(_BinlogStatus):
    """A server someone else runs (``BINLAKE_TEST_URL``), with DevServer's client surface.

    start and stop do not touch the server: start checks it is reachable and has the binlog on,
    and creates ``binlake_test``.  kill and restart are impossible and raise.
    """

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("mysql", "mariadb") or not parts.hostname:
            raise DevServerError(f"not a mysql:// URL: {url!r}",
                                 hint="expected mysql://user:password@host:port")
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or 3306
        self.user = unquote(parts.username or "root")
        self.password = unquote(parts.password or "")

    @property
    def binlog_dir(self) -> Path:
        """Where the server says its binlogs are; only readable if it runs on this machine."""
        rows = self.sql("SELECT @@log_bin_basename", database=None)
        return Path(str(rows[0][0])).parent

    def start(self, timeout: float = 60) -> "ExternalServer":
        deadline = time.monotonic() + timeout
        while True:
            try:
                rows = self.sql("SELECT @@log_bin, @@binlog_format", database=None)
                break
            except Exception as exc:  # noqa: BLE001 - any client error means 'not reachable yet'
                if time.monotonic() >= deadline:
                    raise DevServerError(f"cannot reach {self.host}:{self.port}: {exc}") from exc
                time.sleep(0.5)
        if not rows or str(rows[0][0]) != "1":
            raise DevServerError(f"{self.host}:{self.port} has the binlog off", hint="start it with log_bin")
        self.sql("CREATE DATABASE IF NOT EXISTS binlake_test", database=None)
        return self

    def stop(self, timeout: float = 30) -> None:
        """Nothing to do: we did not start it."""

    def kill(self) -> None:
        raise DevServerError("cannot kill an external server", hint="use mariadb_factory for crash tests")

    def restart(self, timeout: float = 60) -> None:
        raise DevServerError("cannot restart an external server", hint="use mariadb_factory")

    def connect(self, database: str | None = "binlake_test", **kw: Any) -> "pymysql.connections.Connection[Any]":
        """A PyMySQL connection to the external server, autocommit on."""
        import pymysql

        params: dict[str, Any] = {
            "host": self.host, "port": self.port, "user": self.user, "password": self.password,
            "database": database, "autocommit": True, "charset": "utf8mb4", "connect_timeout": 10,
        }
        params.update(kw)
        return pymysql.connect(**params)

    def sql(self, *statements: str, database: str | None = "binlake_test") -> list[tuple[Any, ...]]:
        """Run statements in one session; return the rows of the last one (empty if none)."""
        return _run_sql(self.connect(database=database), statements)

    def __enter__(self) -> "ExternalServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    """Never leave a mariadbd behind when the process that started it exits normally."""
    for server in list(_running):
        try:
            server.stop(timeout=10)
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass
