"""`--output jsonl` and `--output text` are written in C (cdcjson.records_jsonl and
records_text, speedups/jsonl_lines.h): their bytes must be those of the Python twins
(cdcjson.record_line and record_text: to_json_dict and json.dumps), on every corpus file,
errors included."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import binlake.cdc.jsontext as cdcjson
from binlake.cli.program import main

from corpus_index import corpus_files

TWINS = {"jsonl": ("records_jsonl", "records_jsonl_python", "record_line"),
         "text": ("records_text", "records_text_python", "record_text")}


def decode_both(monkeypatch: pytest.MonkeyPatch, output: str, args: list[str]
                ) -> tuple[object, object, int]:
    """(C run, Python twin run, records the C writer left to the twin) of `binlake decode`."""
    writer, python_writer, line = TWINS[output]
    left = [0]
    twin_line = getattr(cdcjson, line)

    def counted(rec: object) -> str:
        left[0] += 1
        return twin_line(rec)

    with monkeypatch.context() as m:
        m.setattr(cdcjson, line, counted)
        got = CliRunner().invoke(main, ["decode", "--output", output, *args])
    with monkeypatch.context() as m:
        m.setattr(cdcjson, writer, getattr(cdcjson, python_writer))
        want = CliRunner().invoke(main, ["decode", "--output", output, *args])
    return got, want, left[0]


@pytest.mark.parametrize("output", ["jsonl", "text"])
def test_c_lines_are_the_python_twins_on_every_corpus_file(
        corpus_dir: Path, monkeypatch: pytest.MonkeyPatch, output: str) -> None:
    compared = lines = left = 0
    for path in corpus_files(corpus_dir):
        if "encrypt" in path.name:
            continue
        got, want, twin = decode_both(monkeypatch, output, [str(path)])
        assert (got.exit_code, got.output) == (want.exit_code, want.output), path
        compared += 1
        lines += got.output.count("\n###" if output == "text" else "\n")
        left += twin
    assert compared > 15 and lines > 1000
    if cdcjson.records_jsonl is not cdcjson.records_jsonl_python:  # the C writer is built
        assert left < lines / 4, (left, lines)  # most records were C's
