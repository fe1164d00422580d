"""The C JSON lines (and text) writer against its Python twin on binlogs a real MariaDB writes: the
benchmark's workload, and a table of the value rules' edge cases (unsigned 64-bit, DECIMAL
scale, zero dates, fsp, TIME past 99 hours, BINARY padding, FLOAT, JSON text, minimal
images); `binlake decode` and `binlake stream` (a --out file) print the same bytes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import binlake.cdc.jsontext as cdcjson
from binlake.bench.workload import Workload, load
from binlake.cli.program import main

pytestmark = pytest.mark.integration

EDGE_DDL = """CREATE TABLE jl_edge (
    id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
    i TINYINT, u BIGINT UNSIGNED, d DECIMAL(20,6), z DECIMAL(5,0), f FLOAT, g DOUBLE,
    dt DATETIME(3), ts TIMESTAMP(6) NULL, da DATE, t TIME(2), y YEAR,
    b BINARY(6), vb VARBINARY(20), s VARCHAR(40) CHARACTER SET utf8mb4,
    l VARCHAR(20) CHARACTER SET latin1, e ENUM('x','y"q'), st SET('a','b','c'),
    bt BIT(10), j JSON, tx TEXT
) DEFAULT CHARSET=utf8mb4"""

EDGE_ROWS = [
    "(18446744073709551615, -128, 18446744073709551615, -12345678901234.000001, 0, 3.4e38,"
    " -1.5e-300, '0999-01-02 03:04:05.678', '2038-01-19 03:14:07.999999', '0001-01-01',"
    " '-838:59:59.99', 1901, 'ab', x'00ff', 'quote\" back\\\\ tab\t nl\n ctl\\Z 😀',"
    " 'caf\\xe9', 'y\"q', 'a,c', b'1010101010', '{\"a\": [1, 2.50, \"x\"]}', REPEAT('é', 300))",
    "(1, NULL, 0, 0.5, -99999, 1.17549e-38, 0.1, '2024-02-29 23:59:59.001', NULL, '2024-02-29',"
    " '123:00:00.5', 2155, '', '', '', '', '', '', b'0', 'null', '')",
    "(2, 1, 1, -0.000001, 1, -0, 1e308, '0000-00-00 00:00:00', '0000-00-00 00:00:00',"
    " '0000-00-00', '00:00:00', 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
]


@pytest.fixture(scope="module")
def binlogs(mariadb) -> list[str]:
    """The bench workload (3,000 changes) and the edge table, in whole binlog files."""
    result = load(mariadb, Workload(3000, seed=5))
    mariadb.sql("DROP TABLE IF EXISTS jl_edge", EDGE_DDL,
                "SET SESSION sql_mode = ''", "SET time_zone = '+00:00'",
                "INSERT INTO jl_edge VALUES " + ", ".join(EDGE_ROWS),
                "UPDATE jl_edge SET s = CONCAT(s, 'x'), d = d + 1",
                "SET SESSION binlog_row_image = 'MINIMAL'",
                "UPDATE jl_edge SET i = 7 WHERE id = 1",
                "DELETE FROM jl_edge WHERE id = 2",
                "FLUSH BINARY LOGS")
    names = sorted(p.name for p in Path(mariadb.binlog_dir).glob("mariadb-bin.[0-9]*"))
    keep = [n for n in names if n >= result.first_file]
    return [str(Path(mariadb.binlog_dir) / n) for n in keep]


def test_c_text_is_the_python_twins(binlogs: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    got = CliRunner().invoke(main, ["decode", "--output", "text", *binlogs])
    with monkeypatch.context() as m:
        m.setattr(cdcjson, "records_text", cdcjson.records_text_python)
        want = CliRunner().invoke(main, ["decode", "--output", "text", *binlogs])
    assert got.exit_code == 0, got.output[-2000:]
    assert got.output == want.output
    assert got.output.count("### ") > 3000
    assert '###     u=18446744073709551615\n' in got.output
    assert '###     j="{\\"a\\": [1, 2.50, \\"x\\"]}"\n' in got.output


def test_c_lines_are_the_python_twins(binlogs: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    got = CliRunner().invoke(main, ["decode", *binlogs])
    with monkeypatch.context() as m:
        m.setattr(cdcjson, "records_jsonl", cdcjson.records_jsonl_python)
        want = CliRunner().invoke(main, ["decode", *binlogs])
    assert got.exit_code == 0, got.output[-2000:]
    assert got.output == want.output
    lines = got.output.splitlines()
    assert len(lines) > 3000
    edge = [x for x in lines if '"table":"jl_edge"' in x]
    assert len(edge) == 3 + 3 + 1 + 1
    first = edge[0]
    assert '"u":18446744073709551615' in first and '"d":"-12345678901234.000001"' in first
    assert '"dt":"0999-01-02T03:04:05.678"' in first and '"t":"-838:59:59.99"' in first
    assert '"b":"YWIAAAAA"' in first and '"e":"y\\"q"' in first
    assert '"da":"0000-00-00"' in edge[2] and '"dt":"0000-00-00 00:00:00.000"' in edge[2]
    assert '"before":{"id":1},"after":{"i":7},' in edge[6]  # minimal images: absent left out


def test_stream_out_file_has_the_decode_lines(mariadb, binlogs: list[str], tmp_path: Path) -> None:
    """A --out file of `binlake stream` over the same range holds decode's lines."""
    out = tmp_path / "changes.jsonl"
    start = f"{Path(binlogs[0]).name}:4"
    run = subprocess.run([sys.executable, "-m", "binlake.cli", "stream", mariadb.url, "--start",
                          start, "--until-end", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    want = CliRunner().invoke(main, ["decode", *binlogs]).output
    # (the stream reads past the range, and a stream's records name its files as it does)
    assert out.read_text(encoding="utf-8").startswith(want)


def test_tables_filter_lines_are_the_twins(binlogs: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["decode", "--tables", "binlake_bench.narrow,binlake_test.jl_edge", *binlogs]
    got = CliRunner().invoke(main, args)
    with monkeypatch.context() as m:
        m.setattr(cdcjson, "records_jsonl", cdcjson.records_jsonl_python)
        want = CliRunner().invoke(main, args)
    assert got.exit_code == 0 and got.output == want.output
    assert '"table":"wide"' not in got.output and got.output.count('"table":"narrow"') > 100


def test_values_of_unusual_types_go_to_the_formatters(binlogs: list[str]) -> None:
    """Records whose values are not their column's usual type (NaN, an int past 64 bits, a
    str subclass, bytes in a text column, a dict image, a statement record): the C writer
    hands them to the Python formatters or the twin, and writes the twin's bytes."""
    from binlake.cdc.changes import ChangeRecord, iter_changes
    from binlake.binlog.files import read_events

    recs = [r for f in binlogs for r in iter_changes(read_events(f))
            if r.table == "jl_edge" and r.op == "insert"]
    assert len(recs) == 3
    names = list(recs[0].table_map.column_names)
    row = list(recs[0].after_values)

    class Text(str):
        pass

    odd = {"g": float("nan"), "u": 2 ** 70, "s": Text("sub"), "l": b"\x00\xff", "f": float("inf"),
           "d": 1.5, "t": None}
    for name, value in odd.items():
        row[names.index(name)] = value
    made = [ChangeRecord("insert", r.schema, r.table, None, tuple(row), r.primary_key, r.file,
                         r.pos, r.end_pos, 9, 2, None, r.timestamp, r.table_map) for r in recs]
    dict_image = ChangeRecord("delete", "s", "t", {"id": 1, "s": "x"}, None, None, None, 4, 5,
                              0, None, "0-1-2", 7, recs[0].table_map)
    statement = ChangeRecord("truncate", "s", "t", None, None, None, "f", 4, 5, 0, None, None, 7,
                             None, "TRUNCATE t")
    for batch in (made, [dict_image, statement, *recs]):
        assert cdcjson.records_jsonl(batch) == cdcjson.records_jsonl_python(batch)
        assert cdcjson.records_text(batch) == cdcjson.records_text_python(batch)
    assert b'"g":NaN' in cdcjson.records_jsonl(made) and b'"inner":2' in cdcjson.records_jsonl(made)
