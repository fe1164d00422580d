"""Session fixtures: real MariaDB servers and the shared binlog corpus.

Tests talk to a real server because binlake's job is to read what a real server writes.
Set BINLAKE_TEST_URL=mysql://user:pw@host:port to use your own server for `mariadb` instead of
starting one (it needs the binlog on, binlog_format=ROW and a user with replication rights).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from binlake.devtools.devserver import DevServer, ExternalServer

REPO_ROOT = Path(__file__).resolve().parent.parent
INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a real MariaDB (started by the fixtures)")
    config.addinivalue_line("markers", "spark: needs Spark (pyspark and the Delta/Iceberg jars)")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/integration needs a server, so mark it without relying on authors."""
    for item in items:
        if INTEGRATION_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer | ExternalServer]:
    """A running server with FULL row metadata and FULL row image, shared by the session."""
    url = os.environ.get("BINLAKE_TEST_URL")
    if url:
        yield ExternalServer(url).start()
        return
    server = DevServer(tmp_path_factory.mktemp("mariadb")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mariadb_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., DevServer]]:
    """Make a private DevServer: ``mariadb_factory(binlog_row_metadata="MINIMAL")``.

    Pass ``start=False`` to get it unstarted.  Every server made here is stopped at session end;
    a test may stop, kill or restart its own server at will.
    """
    made: list[DevServer] = []

    def make(start: bool = True, **opts: Any) -> DevServer:
        server = DevServer(tmp_path_factory.mktemp("mariadb-own"), **opts)
        made.append(server)
        return server.start() if start else server

    try:
        yield make
    finally:
        for server in made:
            server.stop()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared binlog corpus: $BINLAKE_CORPUS, else <repo>/../shared/corpus."""
    env = os.environ.get("BINLAKE_CORPUS")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        pytest.fail(
            f"binlog corpus not found at {path}: set BINLAKE_CORPUS to the corpus directory "
            "or check out shared/ beside the repository",
            pytrace=False,
        )
    return path
