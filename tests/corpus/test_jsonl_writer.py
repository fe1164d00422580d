"""`--output jsonl` is written in C (cdcjson.records_jsonl, speedups/jsonl_lines.h): its bytes
must be those of the Python twin (cdcjson.record_line: to_json_dict and json.dumps), on every
corpus file, errors included."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import binlake.cdcjson as cdcjson
from binlake.cli import main

from corpus_index import corpus_files


def decode_both(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> tuple[object, object, int]:
    """(C run, Python twin run, lines the C writer left to the twin) of `binlake decode`."""
    left = [0]
    twin_line = cdcjson.record_line

    def counted(rec: object) -> str:
        left[0] += 1
        return twin_line(rec)

    with monkeypatch.context() as m:
        m.setattr(cdcjson, "record_line", counted)
        got = CliRunner().invoke(main, ["decode", *args])
    with monkeypatch.context() as m:
        m.setattr(cdcjson, "records_jsonl", cdcjson.records_jsonl_python)
        want = CliRunner().invoke(main, ["decode", *args])
    return got, want, left[0]


def test_c_lines_are_the_python_twins_on_every_corpus_file(
        corpus_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compared = lines = left = 0
    for path in corpus_files(corpus_dir):
        if "encrypt" in path.name:
            continue
        got, want, twin = decode_both(monkeypatch, [str(path)])
        assert (got.exit_code, got.output) == (want.exit_code, want.output), path
        compared += 1
        lines += got.output.count("\n")
        left += twin
    assert compared > 15 and lines > 1000
    if cdcjson.records_jsonl is not cdcjson.records_jsonl_python:  # the C writer is built
        assert left < lines / 4, (left, lines)  # most lines were C's
