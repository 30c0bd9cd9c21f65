#!/usr/bin/env bash
# The README's test command: installs what is missing (Debian's redis-server; a venv with
# moto[server]), starts Redis and the serialised moto server on loopback ports, runs the whole
# test suite against them, and stops what it started. CI runs exactly this (via .ci/run).
#
#   scripts/test.sh            # everything
#   scripts/test.sh -- join    # extra arguments go to `cargo test` (e.g. a test-name filter)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh

ensure_redis_server
ensure_moto
trap stop_local_stack EXIT
start_redis "${LINEUP_TEST_REDIS_PORT:-6391}"
start_moto "${LINEUP_TEST_MOTO_PORT:-5011}"
start_redis_cluster "${LINEUP_TEST_CLUSTER_PORT:-7111}"

export REDIS_URL="redis://127.0.0.1:${REDIS_PORT}"
echo "==> cargo test (Redis at ${REDIS_URL}, DynamoDB/SQS emulator at ${AWS_ENDPOINT_URL})"
cargo test --workspace --locked "$@"
scripts/lambda-local.sh
scripts/e2e.sh
