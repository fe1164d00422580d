# Shared helpers of binlake's install scripts (sourced, not run). Set LOG_NAME first.
#   PYTHON: the interpreter to install into (default: python, else python3)

PYTHON="${PYTHON:-$(command -v python || command -v python3 || true)}"
if [[ -z "$PYTHON" ]]; then
  echo "${LOG_NAME:-binlake}: no python or python3 on PATH" >&2
  exit 1
fi

log() { printf '%s: %s\n' "${LOG_NAME:-binlake}" "$*"; }

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
  if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi
}

# apt-get install with three tries (mirrors time out now and then); exits on failure.
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
