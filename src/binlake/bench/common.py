"""What the pipeline benchmarks (sync_bench, lag_bench, verify_bench) share: Connector/J's
jar, the throwaway server, CPU and memory read from /proc, load averages, the JSON document,
and the row-by-row comparison of Delta tables with MariaDB."""
from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .workload import SCHEMA, TABLES

JDBC_VERSION = "3.5.1"
JDBC_COORDINATE = f"org.mariadb.jdbc:mariadb-java-client:{JDBC_VERSION}"


def jdbc_jar() -> Path | None:
    """MariaDB Connector/J in the jar cache (scripts/spark-jars.sh puts it there)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    jar = cache / "binlake" / "jars" / "jdbc" / f"mariadb-java-client-{JDBC_VERSION}.jar"
    return jar if jar.exists() else None


def jar_conf(jar: Path) -> dict[str, str]:
    """Spark settings that put a jar on the driver's and the executors' class path."""
    return {"spark.driver.extraClassPath": str(jar), "spark.executor.extraClassPath": str(jar)}


def jdbc_source(server: Any, **extra: str) -> tuple[str, dict[str, str]]:
    """`spark.read.jdbc`'s URL and properties for the bench schema on `server` (its `port`,
    `user` and `password`), `extra` properties added."""
    # the mysql scheme makes Spark quote names with backticks (its MySQL dialect)
    url = f"jdbc:mysql://127.0.0.1:{server.port}/{SCHEMA}?permitMysqlScheme"
    props = {"user": server.user, "password": server.password, "driver": "org.mariadb.jdbc.Driver",
             "fetchsize": "10000", **extra}
    return url, props


def proc_status_kb(pid: int | str, key: str) -> int | None:
    """A process's /proc status field in kB (VmRSS: resident now, VmHWM: its peak); None
    when the process or the field cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def proc_stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state first, then the parent's
    pid; utime and stime at 11 and 12); OSError when the process is gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def proc_cpu_s(pid: int | str) -> float:
    """utime + stime of a local process, in seconds; OSError when the process is gone."""
    fields = proc_stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def jvm_pid(spark: Any) -> int | None:
    """The process id of a local Spark session's JVM; None when it cannot be asked."""
    try:
        return int(spark._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 - reported as unknown
        return None


def jvm_peak_rss_mb(spark: Any) -> float | None:
    pid = jvm_pid(spark)
    kb = proc_status_kb(pid, "VmHWM") if pid is not None else None
    return None if kb is None else round(kb / 1024, 1)


def driver_peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def rss_mb(pid: int | str = "self") -> float | None:
    """A process's resident memory now (VmRSS), MB."""
    kb = proc_status_kb(pid, "VmRSS")
    return None if kb is None else round(kb / 1024, 1)


def load_avg(ndigits: int | None = 1) -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded to `ndigits` (None: as the OS gives them)."""
    return [x if ndigits is None else round(x, ndigits) for x in os.getloadavg()]


def utc_stamp() -> str:
    """Now, as a run's JSON dates it: 'YYYY-MM-DD HH:MM UTC'."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def last_json_line(text: str) -> dict[str, Any] | None:
    """The last line of a program's output that is a JSON object (its stats or report line,
    after whatever else it printed); None when there is none."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return dict(json.loads(line))
    return None


def write_json(path: str | Path, doc: dict[str, Any]) -> None:
    """A run's document as indented JSON (values JSON cannot carry as their str)."""
    Path(path).write_text(json.dumps(doc, indent=2, default=str) + "\n")


SERVER_OPTIONS = {"innodb_buffer_pool_size": "256M", "innodb_flush_log_at_trx_commit": "0"}
"""The throwaway MariaDB's settings for loading a workload fast (no flush per commit)."""


def work_dir(workdir: Path | None, prefix: str) -> Path:
    """`workdir`, or a new temporary folder named with `prefix`; made if missing."""
    work = Path(workdir or tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    return work


def start_server(work: Path, options: dict[str, str] | None = SERVER_OPTIONS) -> Any:
    """A throwaway MariaDB in `work`/server, started (`stop_server` ends it)."""
    from ..devtools.devserver import DevServer

    return DevServer(work / "server", extra_options=dict(options or {})).start()


def stop_server(server: Any, work: Path, keep: bool) -> None:
    """Stop a bench's server and, unless `keep`, remove its work folder."""
    server.stop()
    if not keep:
        shutil.rmtree(work, ignore_errors=True)


def columns(server: Any, table: str) -> list[str]:
    rows = server.sql("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                      f"'{SCHEMA}' AND table_name = '{table}' ORDER BY ordinal_position",
                      database=None)
    return [r[0] for r in rows]


def column_types(server: Any, table: str) -> list[tuple[str, int]]:
    rows = server.sql("SELECT data_type, COALESCE(datetime_precision, 0) FROM "
                      f"information_schema.columns WHERE table_schema = '{SCHEMA}' AND "
                      f"table_name = '{table}' ORDER BY ordinal_position", database=None)
    return [(str(r[0]).lower(), int(r[1])) for r in rows]


def time_text(v: Any, scale: int) -> str:
    us = v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds
    sign, us = ("-", -us) if us < 0 else ("", us)
    h, rest = divmod(us, 3_600_000_000)
    m, rest = divmod(rest, 60_000_000)
    sec, frac = divmod(rest, 1_000_000)
    return f"{sign}{h:02d}:{m:02d}:{sec:02d}" + (f".{frac:06d}"[:scale + 1] if scale else "")


def normalizer(kind: str, scale: int) -> Callable[[Any], Any]:
    """One form for a value read through PyMySQL and through Spark where the two differ only
    in representation (BIT as bytes or int, FLOAT's printed digits, TIME as timedelta or text,
    wide integers and DECIMAL(65) as Decimal, int or text)."""
    from ..spark.compare import comparable

    def norm(v: Any) -> Any:
        if v is None:
            return None
        if kind == "bit":
            return ("i", int.from_bytes(v, "big") if isinstance(v, (bytes, bytearray)) else int(v))
        if kind == "float":
            return ("f", f"{float(v):.6g}")
        if kind == "time":
            return ("s", v if isinstance(v, str) else time_text(v, scale))
        if kind in ("bigint", "decimal"):
            return ("n", str(v))
        return comparable(v)

    return norm


def compare_tables(spark: Any, server: Any, warehouse: Path) -> dict[str, Any]:
    """Every Delta table against its MariaDB table, row by row by primary key (values made
    comparable); a mismatch names the first differing row's columns."""
    out: dict[str, Any] = {}
    for table in TABLES:
        names = columns(server, table)
        norms = [normalizer(k, sc) for k, sc in column_types(server, table)]
        conn = server.connect(database=SCHEMA)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT * FROM `{table}`")
                want = {r[0]: tuple(f(v) for f, v in zip(norms, r)) for r in cur.fetchall()}
        finally:
            conn.close()
        df = spark.read.format("delta").load(str(warehouse / SCHEMA / table))
        got: dict[Any, tuple[Any, ...]] = {}
        dup = 0
        for r in df.select(*names).toLocalIterator():
            dup += r[0] in got
            got[r[0]] = tuple(f(v) for f, v in zip(norms, r))
        bad = [k for k in want.keys() | got.keys() if want.get(k) != got.get(k)]
        entry: dict[str, Any] = {"rows": len(want), "equal": not bad and not dup,
                                 "differing": len(bad), "duplicate_keys": dup}
        if bad:
            k = min(bad)
            w, g = want.get(k), got.get(k)
            entry["first"] = {"id": k, "columns": {
                n: [str(a), str(b)] for n, a, b in zip(names, w or [None] * len(names),
                                                        g or [None] * len(names)) if a != b}}
        out[table] = entry
    return out
