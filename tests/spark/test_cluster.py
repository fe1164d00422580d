"""`binlake sync --master spark://...` on a Spark standalone cluster the test starts itself (a
Master and a Worker from the pyspark install, on 127.0.0.1): the snapshot's chunks and the
MERGEs run in the worker's executor, and the Delta tables end equal to MariaDB.

It takes minutes (two JVMs besides the driver's), so it runs only when asked:
`BINLAKE_CLUSTER_TEST=1 python -m pytest -q -n 0 tests/spark/test_cluster.py`.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("pyspark")

pytestmark = [
    pytest.mark.spark, pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("BINLAKE_CLUSTER_TEST"),
                       reason="minutes long: set BINLAKE_CLUSTER_TEST=1 to run it"),
]

DB = "binlake_test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ)
    # The executors import binlake: on a real cluster it is installed on every node.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env["PYSPARK_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, Any]]:
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    work = tmp_path / "work"
    env = _env()
    procs = [subprocess.Popen(
        [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(ui)],
        env=env, stdout=open(logs / "master.log", "wb"), stderr=subprocess.STDOUT)]
    try:
        procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host",
             "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port", str(worker_ui),
             "--work-dir", str(work)],
            env=env, stdout=open(logs / "worker.log", "wb"), stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 120
        while True:  # the master's JSON page lists the worker once it registered
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json", timeout=2) as r:
                    state = json.loads(r.read())
                if any(w.get("state") == "ALIVE" for w in state.get("workers", [])):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise AssertionError("the standalone cluster did not come up:\n"
                                     + (logs / "master.log").read_text()[-2000:]
                                     + (logs / "worker.log").read_text()[-2000:])
            time.sleep(1)
        yield {"url": url, "work": work, "env": env}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_sync_on_a_standalone_cluster(cluster: dict[str, Any], mariadb: Any, spark: Any,
                                      tmp_path: Path) -> None:
    mariadb.sql("DROP TABLE IF EXISTS cl_a",
                "CREATE TABLE cl_a (id INT PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2))",
                "INSERT INTO cl_a SELECT seq, CONCAT('v', seq), seq / 4 FROM seq_1_to_3000")
    wh = tmp_path / "wh"

    def sync() -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "binlake.cli", "sync", mariadb.url, "--tables",
             f"{DB}.cl_a", "--warehouse", str(wh), "--once", "--master", cluster["url"],
             "--chunk-size", "1000"],
            env=cluster["env"], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]

    sync()  # the snapshot: three chunks, read by the worker's executor
    mariadb.sql("UPDATE cl_a SET v = 'changed' WHERE id % 7 = 0", "DELETE FROM cl_a WHERE id > 2900",
                "INSERT INTO cl_a VALUES (5000, 'new', 1.25)")
    sync()  # the catch-up: its MERGE runs there too
    got = spark.read.format("delta").load(str(wh / DB / "cl_a"))
    rows = sorted((r["id"], r["v"], str(r["d"])) for r in got.select("id", "v", "d").collect())
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT id, v, d FROM cl_a ORDER BY id")
        want = sorted((int(i), str(v), str(d)) for i, v, d in cur.fetchall())
    assert rows == want
    # Both runs' executors lived in the worker: their logs are in its work dir.
    apps = [p for p in cluster["work"].iterdir() if p.name.startswith("app-")]
    assert len(apps) == 2, apps
    assert all(any(p.rglob("stderr")) for p in apps)
