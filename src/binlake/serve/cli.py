"""`binlake serve`: binlog files behind a replication primary of binlake's own."""
from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import BinlakeError

_PLUGINS = ("caching_sha2_password", "mysql_native_password")


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", "-P", type=int, default=3306, show_default=True,
              help="TCP port; 0 picks a free one (the first output line names it).")
@click.option("--flavor", type=click.Choice(["auto", "mysql", "mariadb"]), default="auto", show_default=True,
              help="Server to act as; auto follows the newest file's FORMAT_DESCRIPTION.")
@click.option("--server-version", default=None,
              help="Version to announce (default 8.4.3-binlake or 10.11.9-MariaDB-binlake); "
                   "8.4+ answers SHOW BINARY LOG STATUS and refuses SHOW MASTER STATUS, like MySQL.")
@click.option("--server-id", type=int, default=1, show_default=True)
@click.option("--server-uuid", default=None, help="Default: the uuid of the newest GTID in the files.")
@click.option("--user", "-u", default="repl", show_default=True, help="The account replicas log in with.")
@click.option("--password", default=None, help="Its password (else $BINLAKE_SERVE_PASSWORD).")
@click.option("--auth", "plugin", type=click.Choice(_PLUGINS), default=None,
              help="The account's auth plugin (default: caching_sha2_password for MySQL, "
                   "mysql_native_password for MariaDB).")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None,
              help="PEM certificate: offer TLS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None,
              help="PEM private key of --tls-cert.")
@click.option("--require-tls", is_flag=True, help="Refuse clients that do not use TLS.")
@click.option("--rsa-key", type=click.Path(dir_okay=False), default=None,
              help="PEM RSA private key for caching_sha2 full auth without TLS; written with a new "
                   "key if the file does not exist (default: a new key each run).")
@click.option("--semi-sync", is_flag=True, help="Act as a semi-sync source: request and read ACKs.")
@click.option("--verbose", "-v", count=True, help="Log connections (-v) and protocol details (-vv).")
def serve(paths: tuple[str, ...], host: str, port: int, flavor: str, server_version: str | None,
          server_id: int, server_uuid: str | None, user: str, password: str | None, plugin: str | None,
          tls_cert: str | None, tls_key: str | None, require_tls: bool, rsa_key: str | None,
          semi_sync: bool, verbose: int) -> None:
    """Serve binlog files (directories or files) to replicas as a MySQL or MariaDB primary.

    Replicas (binlake stream, MySQL/MariaDB replicas, python-mysql-replication, Debezium…)
    connect, register and dump by file/position or by GTID; a blocking dump waits at the end
    of the newest file, tailing it and sending heartbeats.

    \b
    Examples:
      binlake serve /var/lib/mysql-binlogs --port 3307 --password secret
      binlake serve binlog.000001 binlog.000002 --port 0 --flavor mysql --server-version 8.4.3
      binlake serve ./mariadb-logs --flavor mariadb --auth mysql_native_password --semi-sync
    """
    from ..protocol.auth import Account, generate_rsa_key
    from .primary import Primary, ServeConfig
    from .server import PrimaryServer, load_rsa_key, save_rsa_key
    from .store import BinlogStore

    logging.basicConfig(level=logging.WARNING - 10 * verbose, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if password is None:
        password = os.environ.get("BINLAKE_SERVE_PASSWORD")
    if password is None:
        raise click.UsageError("give --password or set BINLAKE_SERVE_PASSWORD")
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    try:
        store = BinlogStore(list(paths))
        if flavor == "auto":
            flavor = "mariadb" if store.mariadb else "mysql"
        primary = Primary(store, ServeConfig(flavor=flavor, server_version=server_version,
                                             server_id=server_id, server_uuid=server_uuid,
                                             semi_sync=semi_sync))
        key = None
        if rsa_key is not None:
            if Path(rsa_key).exists():
                key = load_rsa_key(rsa_key)
            else:
                key = generate_rsa_key()
                save_rsa_key(key, rsa_key)
        plugin = plugin or ("mysql_native_password" if flavor == "mariadb" else "caching_sha2_password")
        server = PrimaryServer(primary, {user: Account(password, plugin)}, host=host, port=port,
                               tls_cert=tls_cert, tls_key=tls_key, require_tls=require_tls, rsa_key=key)
    except BinlakeError as exc:
        raise click.ClickException(str(exc)) from None
    end_file, end_pos = store.end()
    _announce({"listening": f"{server.host}:{server.port}", "flavor": flavor, "version": primary.version,
               "files": len(store.files), "end": f"{end_file}:{end_pos}", "tls": tls_cert is not None,
               "semi_sync": semi_sync})
    import signal

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def _announce(obj: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed: scripts and tests read the port from it."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover
    serve()
