"""The driver heap a local Spark session gets when the user chose none."""
from __future__ import annotations

from pathlib import Path

import pytest

from binlake.spark.session import local_driver_memory

_ENV = ("SPARK_DRIVER_MEMORY", "PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "SPARK_HOME")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_quarter_of_the_machine_between_1_and_8_gib(clean_env: pytest.MonkeyPatch) -> None:
    import os

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    expected = max(1, min(8, total // 4 // 2**30))
    assert local_driver_memory() == f"{expected}g"
    assert local_driver_memory({"spark.sql.shuffle.partitions": "2"}) == f"{expected}g"


def test_the_users_choice_wins(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert local_driver_memory({"spark.driver.memory": "2g"}) is None
    clean_env.setenv("SPARK_DRIVER_MEMORY", "3g")
    assert local_driver_memory() is None
    clean_env.delenv("SPARK_DRIVER_MEMORY")
    clean_env.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.driver.memory=3g pyspark-shell")
    assert local_driver_memory() is None
    clean_env.delenv("PYSPARK_SUBMIT_ARGS")
    (tmp_path / "spark-defaults.conf").write_text("spark.executor.memory 2g\n")
    clean_env.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert local_driver_memory() is not None  # another setting only
    (tmp_path / "spark-defaults.conf").write_text("# heap\nspark.driver.memory   6g\n")
    assert local_driver_memory() is None


def test_batch_bytes_follow_the_machines_memory() -> None:
    from binlake.spark.sync import default_max_bytes_per_trigger

    mib, gib = 2**20, 2**30
    assert default_max_bytes_per_trigger(2 * gib) == 64 * mib  # floor
    assert default_max_bytes_per_trigger(12 * gib) == 128 * mib
    assert default_max_bytes_per_trigger(64 * gib) == 256 * mib  # ceiling
    assert 64 * mib <= default_max_bytes_per_trigger() <= 256 * mib  # this machine
