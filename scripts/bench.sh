#!/usr/bin/env bash
# Every benchmark, each figure beside its baseline measured in the same run (the machine is
# shared and noisy). Prints figures; asserts nothing about speed. Starts a private Redis and the
# serialised moto server, stops them at the end. See BENCHMARKS.md.
#   scripts/bench.sh [customers for the scale run, default 2000000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh
trap stop_local_stack EXIT

ensure_redis_server
ensure_moto
ensure_lambda_tools
start_redis "${LINEUP_BENCH_REDIS_PORT:-6392}"
start_moto "${LINEUP_BENCH_MOTO_PORT:-5012}"
export REDIS_URL="redis://127.0.0.1:${REDIS_PORT}"
without_metric_lines() { grep -v '"_aws"' || true; }

echo "==> 1. join and poll throughput (100,000 operations each, 64 callers)"
cargo bench -q --locked -p lineup-tests --bench queue_throughput -- 100000 | without_metric_lines
echo "==> 2-5. the queue at ${1:-2000000} customers, an admit tick of 5,000, round trips, polls per hour"
cargo bench -q --locked -p lineup-tests --bench queue_scale -- "${1:-2000000}" | without_metric_lines
echo "==> 4, 7. seat contention and DynamoDB requests per operation (moto)"
cargo bench -q --locked -p lineup-tests --bench contention -- 1000 | without_metric_lines
echo "==> 13. the bot challenge at join: a client's work per difficulty, the server's check"
cargo bench -q --locked -p lineup-tests --bench proof_of_work

echo "==> 6. binary sizes and cold starts under cargo-lambda's runtime emulator"
cargo lambda build --release --locked -q \
  -p join -p poll -p admit -p hold -p confirm -p expire -p outbox-stream
# A cheap event per function: answered before any Redis or AWS call, so the figure is the
# process start itself. "warm" is the same invoke again: the CLI's own cost, the baseline.
declare -A CHEAP=(
  [join]=join-unauthenticated.json [poll]=poll-malformed-queue-id.json [admit]=admit-wrong-kind.json
  [hold]=hold-no-token.json [confirm]=confirm-bad-signature.json [expire]=admit-wrong-kind.json
  [outbox-stream]=outbox-stream-wrong-kind.json
)
ms() { echo $(( $(date +%s%N) / 1000000 )); }
port=9401
printf '| function | stripped bytes | first answer after process start (ms) | warm invoke (ms) |\n|---|---:|---:|---:|\n'
for function in join poll admit hold confirm expire outbox-stream; do
  cargo lambda watch --only-lambda-apis -A 127.0.0.1 -P "$port" >"$LOCAL_DIR/bench-emulator-$port.log" 2>&1 &
  STARTED_PIDS+=($!)
  for _ in $(seq 1 100); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  start=$(ms)
  env AWS_LAMBDA_FUNCTION_NAME="$function" AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 \
    AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$port/.rt" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
    AWS_SECRET_ACCESS_KEY=test REDIS_URL="$REDIS_URL" LINEUP_SIGNING_KEY=lineup-local-development-key-not-a-secret \
    LINEUP_WEBHOOK_SECRET=whsec-local-development-not-a-secret-000 SEATS_TABLE=s ORDERS_TABLE=o OUTBOX_TABLE=x \
    TICKET_QUEUE_URL=http://127.0.0.1:9/q.fifo "target/lambda/$function/bootstrap" >/dev/null 2>&1 &
  STARTED_PIDS+=($!)
  timeout 40 cargo lambda invoke _ -A 127.0.0.1 -P "$port" --data-file "events/${CHEAP[$function]}" >/dev/null 2>&1 || true
  cold=$(( $(ms) - start ))
  start=$(ms)
  timeout 40 cargo lambda invoke _ -A 127.0.0.1 -P "$port" --data-file "events/${CHEAP[$function]}" >/dev/null 2>&1 || true
  warm=$(( $(ms) - start ))
  printf '| %s | %d | %d | %d |\n' "$function" "$(stat -c %s "target/lambda/$function/bootstrap")" "$cold" "$warm"
  port=$((port + 1))
done
