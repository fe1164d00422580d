"""The DDL corpus (tests/unit/ddl_corpus/*.sql): every statement either updates the model to
the expected shape or is ignored as irrelevant, and the test says which.

The same files run against a real MariaDB in tests/integration/test_schema_history.py, which
compares the model with the server's information_schema after each statement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from binlake.binlog.events import QueryEvent
from binlake.binlog.header import EventHeader
from binlake.errors import SchemaError
from binlake.schema.tracker import SchemaTracker

CORPUS = Path(__file__).parent / "ddl_corpus"
SCHEMA = "corpus"


@dataclass
class Case:
    title: str
    expect: str = ""
    shapes: list[str] = field(default_factory=list)
    server: bool = True
    sql_mode: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def sql(self) -> str:
        return "\n".join(self.lines).strip()

    def expected_change(self) -> tuple[str, list[str]] | None:
        """(kind, sorted table names) or None for `ignored`; `error` is checked separately."""
        if self.expect == "ignored":
            return None
        kind, _, rest = self.expect.partition(" ")
        return kind, sorted(t.strip() for t in rest.split(",") if t.strip())


def load_cases(path: Path) -> list[Case]:
    cases: list[Case] = []
    for line in path.read_text().splitlines():
        if line.startswith("-- case:"):
            cases.append(Case(line[len("-- case:"):].strip()))
        elif not cases:
            continue
        elif line.startswith("-- expect:"):
            cases[-1].expect = line[len("-- expect:"):].strip()
        elif line.startswith("-- shape:"):
            cases[-1].shapes.append(line[len("-- shape:"):].strip())
        elif line.startswith("-- server:"):
            cases[-1].server = "skip" not in line
        elif line.startswith("-- sql_mode:"):
            cases[-1].sql_mode = line[len("-- sql_mode:"):].strip()
        elif line.startswith("--") and not cases[-1].lines:
            continue
        else:
            cases[-1].lines.append(line)
    return [c for c in cases if c.sql]


def query_event(sql: str, pos: int, schema: str = SCHEMA, file: str = "binlog.000001",
                sql_mode: int = 0x54200000, status: dict | None = None) -> QueryEvent:
    """A QUERY event as the decoder would hand it over (status vars as MariaDB 10.11 writes)."""
    header = EventHeader(timestamp=1700000000, type_code=2, server_id=1, event_size=100,
                         log_pos=pos + 100, flags=0)
    sv = {"sql_mode": sql_mode, "charset": {"client": 45, "connection": 45, "server": 45}}
    sv.update(status or {})
    return QueryEvent(header=header, file=file, offset=pos, end=pos + 100, thread_id=1,
                      exec_time=0, error_code=0, schema=schema, query=sql, status_vars=sv)


MODE_BITS = {"REAL_AS_FLOAT": 1, "PIPES_AS_CONCAT": 2, "ANSI_QUOTES": 4,
             "NO_BACKSLASH_ESCAPES": 1 << 20}
DEFAULT_MODE = 0x54200000  # MariaDB 10.11: STRICT_TRANS_TABLES, ERROR_FOR_DIVISION_BY_ZERO, ...


def mode_bits(names: str) -> int:
    bits = DEFAULT_MODE
    for n in filter(None, (x.strip() for x in names.split(","))):
        bits |= MODE_BITS[n]
    return bits


def corpus_files() -> list[Path]:
    return sorted(CORPUS.glob("*.sql"))


def test_corpus_is_there() -> None:
    files = corpus_files()
    assert len(files) >= 3
    assert sum(len(load_cases(f)) for f in files) >= 80


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.stem)
def test_corpus_file(path: Path) -> None:
    tracker = SchemaTracker()  # DDL-only: every table is created inside the corpus
    pos = 4
    for case in load_cases(path):
        ev = query_event(case.sql, pos, sql_mode=mode_bits(case.sql_mode))
        pos += 1000
        where = f"{path.name}: {case.title}"
        if case.expect == "error":
            with pytest.raises(SchemaError):
                tracker.on_query(ev)
            continue
        change = tracker.on_query(ev)
        expected = case.expected_change()
        if expected is None:
            assert change is None, f"{where}: expected to be ignored, got {change}"
        else:
            assert change is not None, f"{where}: expected {case.expect}, was ignored"
            assert (change.kind, sorted(change_names(change))) == expected, where
        cat = tracker.history.head_catalog()
        for shape in case.shapes:
            name = shape.split("(", 1)[0]
            table = cat.table(SCHEMA, name)
            assert table is not None, f"{where}: {name} missing"
            assert table.describe() == f"{SCHEMA}.{shape}", where


def change_names(change) -> list[str]:
    return sorted({t for _, t in change.tables})
