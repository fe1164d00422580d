"""The public API: every name in binlake.__all__ resolves, and importing binlake stays light."""
from __future__ import annotations

import subprocess
import sys

import binlake


def test_every_exported_name_resolves() -> None:
    for name in binlake.__all__:
        assert getattr(binlake, name) is not None, name
    assert binlake.BinlogStream.__module__ == "binlake.replica.stream"
    assert issubclass(binlake.DecodeError, binlake.BinlakeError)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        binlake.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("binlake.no_such_name resolved")


def test_import_binlake_loads_no_decoder() -> None:
    code = "import sys, binlake; print(sorted(m for m in sys.modules if m.startswith('binlake')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['binlake']"
