"""The benchmark's bytecode step: a cached file the importer would refuse is written again."""
from __future__ import annotations

import importlib.util
import os
import py_compile
from pathlib import Path

from binlake.bench.cli import _recompile_refused


def test_a_source_changed_within_its_bytecode_second_is_compiled_again(tmp_path: Path) -> None:
    src = tmp_path / "pkg" / "mod.py"
    src.parent.mkdir()
    src.write_text("X = 1\n")
    py_compile.compile(str(src), doraise=True)
    cached = Path(importlib.util.cache_from_source(str(src)))
    st = src.stat()
    assert _recompile_refused(tmp_path) == 0  # up to date: left alone

    src.write_text("X = 12345\n")  # another size, the same modification second
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    head = cached.read_bytes()[:16]
    assert int.from_bytes(head[12:16], "little") != src.stat().st_size  # refused as it is

    assert _recompile_refused(tmp_path) == 1
    head = cached.read_bytes()[:16]
    assert int.from_bytes(head[8:12], "little") == int(src.stat().st_mtime)
    assert int.from_bytes(head[12:16], "little") == src.stat().st_size
    assert _recompile_refused(tmp_path) == 0
