#!/usr/bin/env bash
# The on-sale end to end, as a newcomer meets it (run by scripts/test.sh, after the Rust tests):
#
#  1. the README's run command, `cargo run --bin lineup -- dev`, on a stack it starts itself:
#     it must print its URL and serve the waiting-room page;
#  2. the browser test (tests/browser/, headless Debian Chromium driven by playwright-core):
#     joining to an issued ticket, and a second customer refused a seat the first holds;
#     screenshots in target/browser/;
#  3. Ctrl-C (SIGINT) must stop the server and every service it started;
#  4. `lineup simulate --users 2000 --seats 300` against a dev server with 20-second holds (so
#     lapsed holds go back on sale within the run); it exits non-zero if an invariant breaks.
#
#   scripts/e2e.sh                       # all of it
#   LINEUP_SIMULATE_USERS=500 scripts/e2e.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh

API_PORT=3000
SIM_USERS="${LINEUP_SIMULATE_USERS:-2000}"
SIM_SEATS="${LINEUP_SIMULATE_SEATS:-300}"
mkdir -p target/e2e

# Debian's Chromium (playwright-core drives it; it never downloads a browser of its own).
ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then return; fi
  echo "==> installing chromium (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
    || { as_root apt-get update -q >/dev/null && as_root apt-get install -y --no-install-recommends chromium >/dev/null; }
}

ensure_browser_test_packages() {
  if [ ! -d tests/browser/node_modules/playwright-core ]; then
    echo "==> npm ci (tests/browser: playwright-core)"
    (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

DEV_PID=""
# start_dev LOG COMMAND...: runs a dev server in the background and waits for its URL line.
start_dev() {
  local log="$1"; shift
  "$@" >"$log" 2>&1 &
  DEV_PID=$!
  for _ in $(seq 1 1200); do
    if grep -q "Lineup is running: http://127.0.0.1:$API_PORT/" "$log"; then return; fi
    if ! kill -0 "$DEV_PID" 2>/dev/null; then
      echo "error: the dev server exited before serving; its output:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "error: the dev server printed no URL within 10 minutes; its output:" >&2
  cat "$log" >&2
  exit 1
}

# stop_dev: Ctrl-C, as a developer stops it; then nothing it started may be left running.
stop_dev() {
  [ -n "$DEV_PID" ] || return 0
  kill -INT "$DEV_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$DEV_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$DEV_PID" 2>/dev/null; then
    echo "error: lineup dev did not stop within 10 s of Ctrl-C" >&2
    exit 1  # abandon_dev (the EXIT trap) forces it and its children
  fi
  wait "$DEV_PID" 2>/dev/null || true
  DEV_PID=""
  for port in "$API_PORT" 6381 5010; do
    if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "error: something still answers on 127.0.0.1:$port after Ctrl-C" >&2
      exit 1
    fi
  done
  echo "==> Ctrl-C stopped the server, Redis and moto (ports $API_PORT, 6381, 5010 free)"
}
# On any exit: the same Ctrl-C, then force only this server's own children if it hangs. (Never
# kill by name or port: those may belong to another checkout's `lineup dev`.)
abandon_dev() {
  [ -n "$DEV_PID" ] || return 0
  kill -INT "$DEV_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$DEV_PID" 2>/dev/null || return 0; sleep 0.1; done
  pkill -KILL -P "$DEV_PID" 2>/dev/null || true
  kill -KILL "$DEV_PID" 2>/dev/null || true
}
trap abandon_dev EXIT

ensure_chromium
ensure_browser_test_packages

echo "==> the README's run command: cargo run --bin lineup -- dev"
start_dev target/e2e/dev.log cargo run --locked --bin lineup -- dev
grep "Lineup is running" target/e2e/dev.log
# Into a file first: `curl | grep -q` fails under pipefail when grep stops reading early.
curl -fsS "http://127.0.0.1:$API_PORT/" -o target/e2e/index.html
grep -q "<title>" target/e2e/index.html || { echo "error: the page did not load" >&2; exit 1; }
curl -fsS "http://127.0.0.1:$API_PORT/app.js" >/dev/null
echo "==> the waiting-room page loads"

echo "==> browser test (headless Chromium): join to issued ticket; a second customer refused a held seat"
LINEUP_URL="http://127.0.0.1:$API_PORT" node --test tests/browser/
ls target/browser/*.png
stop_dev

echo "==> lineup simulate --users $SIM_USERS --seats $SIM_SEATS (dev server with 20 s holds, sweep every 2 s)"
start_dev target/e2e/dev-simulate.log target/debug/lineup dev --hold-seconds 20 --expire-every-seconds 2 --seats 100
target/debug/lineup simulate --users "$SIM_USERS" --seats "$SIM_SEATS" --api "http://127.0.0.1:$API_PORT" \
  | tee target/e2e/simulate-report.txt
stop_dev
