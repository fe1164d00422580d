"""A local SparkSession with Delta Lake and binlake's data source, tuned for small CDC batches.

Spark's defaults suit clusters: 200 shuffle partitions, adaptive re-planning and a web UI
cost seconds per micro-batch on a laptop. Jars come from the local cache (see `jars.py`), so
a session start needs no network; an empty cache is filled with Maven, and only without Maven
does Spark resolve `spark.jars.packages` through Ivy itself.
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .._util.memory import total_memory
from .jars import DELTA_COORDINATE, check_pyspark_version, download_jars, local_jars

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger("binlake.sync")

_CORES = max(1, min(8, os.cpu_count() or 2))

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": str(_CORES),
    "spark.default.parallelism": str(_CORES),
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    # Adaptive execution runs every shuffle stage as its own job; for small CDC batches that
    # overhead dominates.
    "spark.sql.adaptive.enabled": "false",
    "spark.databricks.delta.snapshotPartitions": str(_CORES),
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(_CORES),
    # Auto compaction (on for the tables binlake creates) rewrites files below this size.
    # Delta's default, half its 128 MiB target, takes in every snapshot chunk's file (20-30
    # MB of Parquet for 64 MiB of rows), so each new table was rewritten whole right after
    # its snapshot. 16 MiB still gathers the micro-batches' small files, and keeps a table
    # at most one file per 16 MiB of data.
    "spark.databricks.delta.autoCompact.minFileSize": str(16 * 2**20),
}


def local_driver_memory(conf: Mapping[str, Any] | None = None) -> str | None:
    """The driver heap a local session gets when nobody chose one: a quarter of the
    machine's memory, 1 to 8 GiB. In local mode the driver's JVM is the whole executor, and
    Spark's 1 GiB default runs out on wide rows (a Parquet read batch of 4,096 rows of
    35 KB). None when the user set it (`--conf`, SPARK_DRIVER_MEMORY, spark-defaults.conf)."""
    if conf and "spark.driver.memory" in conf or os.environ.get("SPARK_DRIVER_MEMORY"):
        return None
    if "spark.driver.memory" in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        return None
    for folder in (os.environ.get("SPARK_CONF_DIR"),
                   os.environ.get("SPARK_HOME") and os.path.join(os.environ["SPARK_HOME"], "conf")):
        defaults = Path(folder, "spark-defaults.conf") if folder else None
        if defaults is not None and defaults.is_file() and any(
                line.split()[:1] == ["spark.driver.memory"]
                for line in defaults.read_text(errors="replace").splitlines()):
            return None
    total = total_memory()
    if total is None:
        return None
    gib = max(1, min(8, total // 4 // 2**30))
    return f"{gib}g"


def build_session(app_name: str = "binlake", *, master: str = "local[*]",
                  jars_dir: str | Path | None = None, conf: Mapping[str, Any] | None = None,
                  register: bool = True) -> "SparkSession":
    """Start (or return the running) SparkSession with Delta and `format("binlake")`."""
    from pyspark.sql import SparkSession

    check_pyspark_version()
    # Python workers must be this interpreter (the one with binlake and pyarrow installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in {**LOCAL_CONF, **DELTA_CONF}.items():
        builder = builder.config(key, value)
    memory = local_driver_memory(conf) if master.startswith("local") else None
    if memory is not None:
        builder = builder.config("spark.driver.memory", memory)
    folder = Path(jars_dir) if jars_dir else None
    jars = local_jars(folder)
    if jars is None and shutil.which("mvn"):
        # Preferred over Ivy: Ivy trips over POM-only entries that Maven leaves in ~/.m2
        # ("download failed: ...slf4j-api.jar", seen here), and re-resolves on every start.
        jars = download_jars(folder)
    if jars:
        builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    else:
        builder = builder.config("spark.jars.packages", DELTA_COORDINATE)
    for key, value in (conf or {}).items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    _quiet_expected_warnings(spark)
    if register:
        register_sources(spark)
    return spark


def _quiet_expected_warnings(spark: "SparkSession") -> None:
    """The apply step local-checkpoints a batch's net changes on purpose (one computation for
    the MERGE and the tombstones); Spark warns at every such RDD that its lineage is cut.
    Only that logger is raised to ERROR, and only in sessions binlake starts."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
        level = jvm.org.apache.logging.log4j.Level.ERROR
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.rdd.MapPartitionsRDD", level)
    except Exception:  # noqa: BLE001 - cosmetic: another logging backend, keep its warnings
        pass


def register_sources(spark: "SparkSession") -> None:
    """Make `format("binlake")` (binlog files with `spark.read`, a live primary with
    `spark.readStream`) and `format("binlake-snapshot")` (the initial snapshot) available."""
    from .snapshot import SnapshotDataSource
    from .stream_source import BinlakeDataSource

    spark.dataSource.register(BinlakeDataSource)
    spark.dataSource.register(SnapshotDataSource)


class SessionStart:
    """`build_session` in a background thread: the JVM starts while the caller does its
    MySQL-side work (schema history, chunk planning, small tables' reads); `get()` waits for
    the session and raises what the start raised. Started off the main thread, Spark does not
    install its SIGINT handler (the sync installs its own around the stream)."""

    def __init__(self, app_name: str = "binlake", **kwargs: Any) -> None:
        self._session: "SparkSession | None" = None
        self._error: BaseException | None = None
        self._t0 = time.monotonic()
        self.seconds: float | None = None
        """Seconds the start took, once it is done."""
        self._thread = threading.Thread(target=self._run, args=(app_name, kwargs),
                                        name="spark-session-start", daemon=True)
        self._thread.start()

    def _run(self, app_name: str, kwargs: dict[str, Any]) -> None:
        try:
            self._session = build_session(app_name, **kwargs)
            self.seconds = round(time.monotonic() - self._t0, 2)
            log.info("spark session ready", extra={"start_s": self.seconds})
        except BaseException as exc:  # noqa: BLE001 - handed to the caller of get()
            self._error = exc

    def get(self) -> "SparkSession":
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._session is not None
        return self._session
