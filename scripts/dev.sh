#!/usr/bin/env bash
# gpu-planner's one entry point for a fresh machine with only Python 3.11+ and pip.
#   bash scripts/dev.sh app     install what the app needs into .venv, then start Streamlit on the bundled catalog,
#                               on 127.0.0.1:8501 only (GPUPLAN_APP_ADDRESS=0.0.0.0 / GPUPLAN_APP_PORT for a team server)
#   bash scripts/dev.sh test    install everything into .venv, then run `check` (format, lint, types, all tests)
#   bash scripts/dev.sh check   the same checks, without the install step
# Both install steps are idempotent: they re-install only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv="$root/.venv"
py="$venv/bin/python"

pick_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "gpu-planner needs Python 3.11 or newer on PATH" >&2; exit 1
}

ensure_venv() {
  # $1: what to install ("app" or "dev"); a stamp per target skips work when pyproject.toml is unchanged.
  local target=$1 stamp="$venv/.installed-$1" want
  [ -x "$py" ] || "$(pick_python)" -m venv "$venv"
  want=$(sha256sum pyproject.toml | cut -c1-16)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  echo "installing gpu-planner ($target) into .venv ..." >&2
  "$py" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
  if [ "$target" = app ]; then
    # Every cloud's extra too: the app's own environment can then refresh its prices (gpuplan catalog refresh).
    "$py" -m pip install --quiet --disable-pip-version-check -e ".[all]"
  else
    "$py" -m pip install --quiet --disable-pip-version-check -e ".[all]" --group dev
  fi
  echo "$want" > "$stamp"
}

ensure_browser() {
  # The web app's end-to-end test drives a real headless Chromium (Debian's package; no browser download).
  if command -v chromium >/dev/null 2>&1 || [ -n "${GPUPLAN_CHROMIUM:-}" ]; then return 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing chromium for the end-to-end test ..." >&2
    (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) ||
      echo "could not install chromium; the browser test will be skipped" >&2
  fi
}

ensure_postgres() {
  # The store's tests run on PostgreSQL too: a throwaway server from Debian's package (tests/postgres_server.py).
  if command -v pg_ctl >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null ||
    [ -n "${GPUPLAN_PG_BINDIR:-}${GPUPLAN_TEST_DATABASE_URL:-}" ]; then return 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing postgresql for the store's tests ..." >&2
    # The tests start their own throwaway server; Debian's default cluster is not needed by them.
    (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null) ||
      echo "could not install postgresql; the PostgreSQL store tests will be skipped (they fail with CI=true)" >&2
  fi
}

check() {
  "$venv/bin/ruff" format --check planner tests bench scripts streamlit_app.py
  "$venv/bin/ruff" check planner tests bench scripts streamlit_app.py
  "$venv/bin/mypy"
  "$venv/bin/pytest" -n auto "$@"
}

cmd=${1:-}
shift || true
case "$cmd" in
  app)
    ensure_venv app
    # Loopback unless asked otherwise; no usage statistics; no developer toolbar (also in .streamlit/config.toml).
    exec "$venv/bin/streamlit" run streamlit_app.py --server.headless=true \
      --server.address="${GPUPLAN_APP_ADDRESS:-127.0.0.1}" --server.port="${GPUPLAN_APP_PORT:-8501}" \
      --browser.gatherUsageStats=false --client.toolbarMode=minimal "$@" ;;
  test)
    ensure_venv dev
    ensure_browser
    ensure_postgres
    check "$@" ;;
  check)
    check "$@" ;;
  fmt)
    "$venv/bin/ruff" format planner tests bench scripts streamlit_app.py
    "$venv/bin/ruff" check --fix planner tests bench scripts streamlit_app.py ;;
  *)
    echo "usage: bash scripts/dev.sh app|test|check|fmt" >&2; exit 2 ;;
esac
