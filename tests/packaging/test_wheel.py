"""`pip wheel .` builds a wheel with the C extension; installed into a fresh venv, it decodes.

The venv sees the system's site-packages for binlake's dependencies (pyarrow, ...) but gets
binlake only from the wheel, with no source tree on its path.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(out), str(REPO)], check=True, capture_output=True)
    (found,) = out.glob("binlake-*.whl")
    return found


def test_the_wheel_carries_the_extension_and_the_type_marker(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("binlake/_speedups/_core") and n.endswith(".so") for n in names)
    assert "binlake/py.typed" in names
    assert not any(n.startswith("tests/") for n in names)


def test_binlake_decode_runs_from_the_installed_wheel(wheel: Path, tmp_path: Path,
                                                      corpus_dir: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # pip of the outer interpreter installs into the venv (no pip bootstrap download needed)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                    "--ignore-installed", "-q", str(wheel)], check=True, capture_output=True,
                   env=clean)
    where = subprocess.run([str(py), "-c", "import binlake, binlake._speedups._core as s;"
                            "print(binlake.__file__); print(s.__file__)"],
                           check=True, capture_output=True, text=True, cwd=tmp_path, env=clean)
    assert all(str(env_dir) in line for line in where.stdout.split()), where.stdout
    binlog = next(p for p in sorted(corpus_dir.rglob("*bin.0000*")) if p.stat().st_size > 2000)
    out = subprocess.run([str(env_dir / "bin" / "binlake"), "decode", "--output", "null",
                          "--stats", str(binlog)],
                         check=True, capture_output=True, text=True, cwd=tmp_path, env=clean)
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats["events"] > 0
