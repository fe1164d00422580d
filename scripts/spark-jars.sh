#!/usr/bin/env bash
# Set up binlake's Spark side, idempotently: a JDK and Maven (apt), the `spark` extra (pip),
# and the Delta Lake jars in ~/.cache/binlake/jars (Maven Central, once).
#
# Called from scripts/install-deps.sh (install_spark_jars). Safe to run again: each step is
# skipped when its result is already there. Sessions then start without network access.
#   PYTHON=/path/to/python scripts/spark-jars.sh
#   BINLAKE_JARS_DIR=/some/dir scripts/spark-jars.sh      # another cache folder
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LOG_NAME=spark-jars
source scripts/lib.sh

need=()
command -v java >/dev/null || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need+=(maven)
if ((${#need[@]})); then
  apt_install "${need[@]}"
else
  log "java and maven already installed, skipping apt"
fi

if ! "$PYTHON" -c 'import pyspark' 2>/dev/null; then
  "$PYTHON" -m pip install --disable-pip-version-check --progress-bar off -q -e '.[spark]'
fi

# MariaDB Connector/J: only the pipeline benchmark's spark.read.jdbc floor uses it
# (binlake bench --sync); keep the version in step with binlake.bench.common.JDBC_VERSION.
JDBC_VERSION=3.5.1
JDBC_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/binlake/jars/jdbc"
if [[ ! -f "$JDBC_DIR/mariadb-java-client-$JDBC_VERSION.jar" ]]; then
  mkdir -p "$JDBC_DIR"
  mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy \
    -Dartifact="org.mariadb.jdbc:mariadb-java-client:$JDBC_VERSION" -DoutputDirectory="$JDBC_DIR" \
    || log "MariaDB Connector/J download failed (only binlake bench --sync needs it)"
else
  log "MariaDB Connector/J already cached"
fi

if "$PYTHON" -m binlake.spark.jars --check >/dev/null; then
  log "Delta jars already cached: $("$PYTHON" -m binlake.spark.jars --check)"
  exit 0
fi
for try in 1 2 3; do
  if "$PYTHON" -m binlake.spark.jars; then
    exit 0
  fi
  log "jar download attempt $try failed, retrying"
  sleep $((try * 5))
done
exit 1
