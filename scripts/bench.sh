#!/usr/bin/env bash
# Benchmarks that print figures (never timed tests): starts a private Redis, runs them, stops it.
#   scripts/bench.sh [operations per figure, default 100000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh

ensure_redis_server
start_redis "${LINEUP_BENCH_REDIS_PORT:-6392}"
trap stop_local_stack EXIT
export REDIS_URL="redis://127.0.0.1:${REDIS_PORT}"
cargo bench -p lineup-tests --bench queue_throughput -- "${1:-100000}"
