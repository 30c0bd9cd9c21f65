#!/usr/bin/env bash
# The Docker-free stand-in for `sam validate` + `sam build` + `sam local invoke`, run by
# scripts/test.sh after the unit and integration tests (it expects Redis and moto running, with
# REDIS_URL and AWS_ENDPOINT_URL exported):
#   1. `sam validate --lint` on template.yaml;
#   2. `cargo lambda build --release` of every function, each stripped binary under 5 MB;
#   3. each release binary run under its own cargo-lambda runtime emulator, invoked with the
#      samples in events/ through `cargo lambda invoke`, answers checked (tests/local_invoke.rs);
#   4. the same binaries again, pointed at a listener that never answers: each answers 503 or
#      reports the error, within a bound.
# The size gate and the invocations use the native (x86_64) build: this machine cannot run the
# arm64 binaries `sam build` deploys.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh
trap stop_local_stack EXIT

ensure_lambda_tools
export SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"

echo "==> sam validate --lint"
sam validate --lint

echo "==> cargo lambda build --release"
cargo lambda build --release --locked \
  -p join -p poll -p admit -p hold -p confirm -p expire -p outbox-stream
FUNCTIONS=(join poll admit hold confirm expire outbox-stream)
LIMIT=5000000
status=0
printf '%-15s %12s\n' function bytes
for function in "${FUNCTIONS[@]}"; do
  size=$(stat -c %s "target/lambda/$function/bootstrap")
  printf '%-15s %12d\n' "$function" "$size"
  if [ "$size" -ge "$LIMIT" ]; then echo "error: $function is not under 5 MB" >&2; status=1; fi
done
[ "$status" -eq 0 ] || exit 1

# start_functions FIRST_PORT ENV...: one emulator and one release binary per function.
start_functions() {
  local port="$1"; shift
  PORTS=""
  for function in "${FUNCTIONS[@]}"; do
    if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "error: something already listens on 127.0.0.1:$port" >&2
      exit 1
    fi
    cargo lambda watch --only-lambda-apis -A 127.0.0.1 -P "$port" >"$LOCAL_DIR/emulator-$port.log" 2>&1 &
    STARTED_PIDS+=($!)
    local ready=""
    for _ in $(seq 1 100); do
      if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ready=1; break; fi
      sleep 0.1
    done
    [ -n "$ready" ] || { echo "error: the runtime emulator on $port did not start" >&2; exit 1; }
    env AWS_LAMBDA_FUNCTION_NAME="$function" AWS_LAMBDA_FUNCTION_VERSION=1 \
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$port/.rt" \
      "$@" "target/lambda/$function/bootstrap" >"$LOCAL_DIR/function-$function-$port.log" 2>&1 &
    STARTED_PIDS+=($!)
    PORTS="${PORTS:+$PORTS,}$function=$port"
    port=$((port + 1))
  done
  export LAMBDA_PORTS="$PORTS"
}

FIXED_ENV=(
  LINEUP_SIGNING_KEY=lineup-local-development-key-not-a-secret
  LINEUP_WEBHOOK_SECRET=whsec-local-development-not-a-secret-000
  SEATS_TABLE=local-seats ORDERS_TABLE=local-orders OUTBOX_TABLE=local-outbox
  TICKET_QUEUE_URL="$AWS_ENDPOINT_URL/123456789012/lineup-ticket-issued.fifo"
  AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
  ADMIT_RUN_MS=1500 ADMIT_TICK_MS=250 REDIS_TIMEOUT_MS=500
  # As the stack configures Lambda (LoggingConfig: LogFormat JSON).
  AWS_LAMBDA_LOG_FORMAT=JSON AWS_LAMBDA_LOG_LEVEL=INFO
)

echo "==> the release binaries under the runtime emulator, with the local stack"
# A clean emulator for this run (the tests before it made their own tables; these names are fixed).
curl -s -X POST "$AWS_ENDPOINT_URL/moto-api/reset" >/dev/null
start_functions 9201 "${FIXED_ENV[@]}" REDIS_URL="$REDIS_URL" AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL"
env "${FIXED_ENV[@]}" cargo run --locked -q -p lineup-tests --bin local-invoke -- healthy

echo "==> the same binaries with Redis and AWS unreachable (a listener that never answers)"
start_silent_listener 9239
start_functions 9221 "${FIXED_ENV[@]}" REDIS_URL=redis://127.0.0.1:9239 AWS_ENDPOINT_URL=http://127.0.0.1:9239
env "${FIXED_ENV[@]}" cargo run --locked -q -p lineup-tests --bin local-invoke -- unreachable
