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

PYTHON="${PYTHON:-$(command -v python || command -v python3 || true)}"
if [[ -z "$PYTHON" ]]; then
  echo "spark-jars: no python or python3 on PATH" >&2
  exit 1
fi

log() { printf 'spark-jars: %s\n' "$*"; }
as_root() {
  if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  local try
  for try in 1 2 3; do
    if as_root apt-get update -q && as_root apt-get install -y -q --no-install-recommends "$@"; then
      return 0
    fi
    log "apt attempt $try failed, retrying"
    sleep $((try * 5))
  done
  log "could not install $*" >&2
  exit 1
}

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
