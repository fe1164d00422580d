#!/usr/bin/env bash
# Install what binlake's tests and quickstart need, on Debian 12, idempotently.
#
# Used by .ci/run on a fresh machine and by the README's setup commands. Safe to run again:
# apt is skipped when MariaDB is already there, and pip only refreshes the editable install.
#   PYTHON=/path/to/python scripts/install-deps.sh   # choose the interpreter (default: python, else python3)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

LOG_NAME=install-deps
source scripts/lib.sh

have_mariadb() {
  { command -v mariadbd >/dev/null || [[ -x /usr/sbin/mariadbd ]]; } &&
    { command -v mariadb-install-db >/dev/null || [[ -x /usr/bin/mariadb-install-db ]]; }
}

install_mariadb() {
  if have_mariadb; then
    log "MariaDB server already installed, skipping apt"
    return
  fi
  # The tests start their own throwaway servers; keep the package from starting a system one
  # on port 3306 (policy-rc.d exit 101 = "don't start services"), unless a policy already exists.
  local policy=/usr/sbin/policy-rc.d added_policy=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod 755 "$policy"
    added_policy=1
  fi
  # apt_install exits on failure, so the policy is removed by a trap either way.
  if [[ "$added_policy" == 1 ]]; then trap 'as_root rm -f /usr/sbin/policy-rc.d' EXIT; fi
  apt_install mariadb-server mariadb-client time
  if [[ "$added_policy" == 1 ]]; then as_root rm -f "$policy"; trap - EXIT; fi
  if ! have_mariadb; then
    log "could not install mariadb-server" >&2
    exit 1
  fi
}

install_python() {
  "$PYTHON" -m pip install --disable-pip-version-check --progress-bar off -q -e '.[dev]'
}

# ---------------------------------------------------------------------------------------------
# Spark: a JDK and Maven, the `spark` extra, and the Delta Lake jars from Maven Central (cached).
install_spark_jars() {
  PYTHON="$PYTHON" bash scripts/spark-jars.sh
}
# ---------------------------------------------------------------------------------------------

install_mariadb
install_python
install_spark_jars
log "done"
