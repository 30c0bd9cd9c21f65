#!/usr/bin/env bash
# The README's test command: installs what is missing, starts Redis on a loopback port, runs the
# whole test suite against it, and stops what it started. CI runs exactly this (via .ci/run).
#
#   scripts/test.sh            # everything
#   scripts/test.sh -- join    # extra arguments go to `cargo test` (e.g. a test-name filter)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh

ensure_redis_server
start_redis "${LINEUP_TEST_REDIS_PORT:-6391}"
trap stop_local_stack EXIT

export REDIS_URL="redis://127.0.0.1:${REDIS_PORT}"
echo "==> cargo test (Redis at ${REDIS_URL})"
cargo test --workspace --locked "$@"
