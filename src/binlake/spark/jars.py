"""Delta Lake jars for Spark: one pinned Delta + Spark pair, fetched once into a local cache.

`spark.jars.packages` resolves through Ivy on every session start, needs the network each
time, and adds every transitive jar (older jackson, parquet, hadoop) next to Spark's own.
Instead, `mvn dependency:copy-dependencies` fetches the closure once into a cache folder and
we drop every jar whose artifact Spark already ships, so Spark's versions always win.

Run `python -m binlake.spark.jars` (scripts/spark-jars.sh does) to fill the cache.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import BinlakeError

# Verified pair (runs here): pyspark 4.2.0 with io.delta:delta-spark_4.2_2.13:4.4.0.
# Maven Central has no 4.4.1 build of delta-spark_4.2 (the PyPI wheel 4.4.1 names one).
SPARK_MINOR = "4.2"
SCALA = "2.13"
DELTA_VERSION = "4.4.0"
DELTA_ARTIFACT = f"delta-spark_{SPARK_MINOR}_{SCALA}"
DELTA_COORDINATE = f"io.delta:{DELTA_ARTIFACT}:{DELTA_VERSION}"
_MANIFEST = "binlake-jars.txt"


class JarsError(BinlakeError):
    """The Delta jars could not be found or fetched."""


def default_jars_dir() -> Path:
    """$BINLAKE_JARS_DIR, else ~/.cache/binlake/jars/<delta artifact>-<version>."""
    env = os.environ.get("BINLAKE_JARS_DIR")
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "binlake" / "jars" / f"{DELTA_ARTIFACT}-{DELTA_VERSION}"


def check_pyspark_version() -> str:
    """The installed pyspark version; raises if it is not the minor the jars are built for."""
    import pyspark

    version = pyspark.__version__
    if ".".join(version.split(".")[:2]) != SPARK_MINOR:
        raise JarsError(
            f"pyspark {version} does not match {DELTA_COORDINATE} (built for Spark {SPARK_MINOR})",
            hint=f"pip install 'pyspark=={SPARK_MINOR}.0'",
        )
    return version


def local_jars(directory: Path | None = None) -> list[Path] | None:
    """The cached jars if a complete download is in `directory`, else None."""
    directory = Path(directory) if directory else default_jars_dir()
    manifest = directory / _MANIFEST
    if not manifest.is_file():
        return None
    names = [n for n in manifest.read_text().split() if n]
    jars = [directory / n for n in names]
    if not jars or not all(j.is_file() for j in jars):
        return None
    return jars


def _artifact_name(jar: str) -> str:
    """'jackson-core-2.13.5.jar' -> 'jackson-core' (artifact id without version)."""
    m = re.match(r"(.+?)-\d", jar)
    return m.group(1) if m else jar.removesuffix(".jar")


def _spark_shipped_artifacts() -> set[str]:
    import pyspark

    jars_dir = Path(pyspark.__file__).parent / "jars"
    return {_artifact_name(p.name) for p in jars_dir.glob("*.jar")}


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>binlake</groupId><artifactId>binlake-spark-jars</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>
      <version>{version}</version></dependency>
  </dependencies>
</project>
"""


def download_jars(directory: Path | None = None, *, mvn: str | None = None,
                  coordinate: str = DELTA_COORDINATE, quiet: bool = True) -> list[Path]:
    """Fetch `coordinate` and its runtime closure with Maven; idempotent, atomic per folder."""
    directory = Path(directory) if directory else default_jars_dir()
    found = local_jars(directory)
    if found:
        return found
    mvn = mvn or shutil.which("mvn")
    if not mvn:
        raise JarsError("Maven (mvn) is not installed", hint="apt-get install maven")
    group, artifact, version = coordinate.split(":")
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="binlake-jars-", dir=directory.parent) as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(_POM.format(group=group, artifact=artifact, version=version))
        out = work / "jars"
        cmd = [mvn, "-B", *(["-q"] if quiet else []), "-f", str(work / "pom.xml"),
               "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={out}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise JarsError(f"mvn could not fetch {coordinate}:\n{tail}",
                            hint="check access to Maven Central (or a mirror in ~/.m2/settings.xml)")
        shipped = _spark_shipped_artifacts()
        keep = sorted(p.name for p in out.glob("*.jar") if _artifact_name(p.name) not in shipped)
        for p in out.glob("*.jar"):
            if p.name not in keep:
                p.unlink()
        (out / _MANIFEST).write_text("\n".join(keep) + "\n")
        if directory.exists():
            shutil.rmtree(directory)
        out.rename(directory)
    jars = local_jars(directory)
    if not jars:
        raise JarsError(f"no jars landed in {directory}")
    return jars


def main(argv: list[str] | None = None) -> int:
    """CLI: download (if needed) and print the jar folder."""
    ap = argparse.ArgumentParser(prog="python -m binlake.spark.jars", description=__doc__)
    ap.add_argument("--dir", type=Path, default=None, help="cache folder (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="only report whether the cache is complete")
    args = ap.parse_args(argv)
    directory = args.dir or default_jars_dir()
    if args.check:
        ok = local_jars(directory) is not None
        print(f"{directory}: {'complete' if ok else 'missing'}")
        return 0 if ok else 1
    try:
        jars = download_jars(directory)
    except JarsError as exc:
        print(f"binlake: {exc}", file=sys.stderr)
        return 1
    print(f"{directory}: {len(jars)} jars for {DELTA_COORDINATE}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
