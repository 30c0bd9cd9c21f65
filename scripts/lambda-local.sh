#!/usr/bin/env bash
# The Docker-free stand-in for `sam validate` + `sam local invoke`, run by scripts/test.sh after
# the unit and integration tests (it expects Redis and moto running, with REDIS_URL and
# AWS_ENDPOINT_URL exported):
#   1. `sam validate --lint` on template.yaml;
#   2. moto prepared as a LocalStack is for `sam local invoke` (`lineup local-aws`: the tables,
#      queues and secrets of template.yaml under events/env.json's names), then each function's
#      debug binary run under its own cargo-lambda runtime emulator, invoked with the samples in
#      events/ through `cargo lambda invoke`, answers checked (tests/local_invoke.rs); each
#      function given only the variables it uses, with the values events/env.json gives them
#      (the endpoints aside), so `poll`, `hold` and `confirm` read their secrets from moto's
#      Secrets Manager by the names env.json uses, as `sam local invoke` would have them do
#      (`join` the literal key, as locally);
#   3. the same binaries again, pointed at a listener that never answers: each answers 503 or
#      reports the error, within a bound (with literal secrets: a function whose secret cannot
#      be read at cold start does not start, which is not what this step checks).
# The deploy artifacts are scripts/sam-build.sh's (`sam build`: arm64, release, checked there);
# this machine cannot run arm64 binaries, so these steps run the native debug build of the same
# code, which the tests build anyway.
#
#   LINEUP_LAMBDA_PORT=9301 scripts/lambda-local.sh   # emulators on 9301-9309 and 9321-9329,
#                                                     # the silent listener on 9339 (default 9201)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh
source scripts/steps.sh
trap 'step_end; stop_local_stack' EXIT

FIRST_PORT="${LINEUP_LAMBDA_PORT:-9201}"
# Every function: a folder functions/<name> with a Cargo.toml.
mapfile -t FUNCTIONS < <(for crate in functions/*/Cargo.toml; do basename "$(dirname "$crate")"; done)

ensure_lambda_tools
export SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"

step "sam validate --lint"
sam validate --lint

# The debug binaries of the functions and local-invoke. After scripts/test.sh (which builds them
# with the same command) this only confirms they are up to date.
step "cargo build --workspace --bins (debug; up to date after scripts/test.sh)"
cargo build --workspace --bins --locked

# env_json NAME: the value events/env.json (what `sam local invoke` passes) gives NAME.
env_json() {
  python3 -c 'import json, sys; print(json.load(open("events/env.json"))["Parameters"][sys.argv[1]])' "$1"
}
SIGNING_KEY=lineup-local-development-key-not-a-secret
WEBHOOK_SECRET=whsec-local-development-not-a-secret-000
TABLES_ENV=(SEATS_TABLE="$(env_json SEATS_TABLE)" ORDERS_TABLE="$(env_json ORDERS_TABLE)" OUTBOX_TABLE="$(env_json OUTBOX_TABLE)")
EVENTS_ENV=(EVENTS_TABLE="$(env_json EVENTS_TABLE)")
# The value CloudFront sends in X-Lineup-Origin. Only `status` is given it here, so a direct
# call (no header) is seen refused; the other samples are not CloudFront's requests.
ORIGIN_SECRET=lineup-local-origin-header-not-a-secret
# env.json's own URL (host.docker.internal, LocalStack's account): requests go to
# AWS_ENDPOINT_URL, which finds the queue by the name at the URL's end.
TICKET_QUEUE_ENV=(TICKET_QUEUE_URL="$(env_json TICKET_QUEUE_URL)")
SIGNING_KEY_NAME="$(env_json LINEUP_SIGNING_KEY_SECRET_ARN)"
WEBHOOK_SECRET_NAME="$(env_json LINEUP_WEBHOOK_SECRET_ARN)"
STRIPE_KEY_NAME="$(env_json LINEUP_STRIPE_API_KEY_ARN)"
STRIPE_WEBHOOK_SECRET_NAME="$(env_json LINEUP_STRIPE_WEBHOOK_SECRET_ARN)"
REFUND_QUEUE_ENV=(REFUND_QUEUE_URL="$(env_json REFUND_QUEUE_URL)")
# The Stripe stand-in scripts/test.sh started (env.json's own address is LocalStack's Docker
# host's).
STRIPE_ENV=(STRIPE_API_BASE="${STRIPE_API_BASE:?localstripe must be running (scripts/test.sh starts it)}")
COMMON_ENV=(
  AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test REDIS_TIMEOUT_MS=500
  # As the stack configures Lambda (LoggingConfig: LogFormat JSON).
  AWS_LAMBDA_LOG_FORMAT=JSON AWS_LAMBDA_LOG_LEVEL=INFO
)

# function_env FUNCTION SECRETS: the variables FUNCTION is given beside COMMON_ENV, only those it
# uses (shared/src/wiring/config.rs); SECRETS is `stored` (read from Secrets Manager by the names
# env.json gives, as under `sam local invoke` and in AWS) or `literal`.
function_env() {
  local signing="LINEUP_SIGNING_KEY=$SIGNING_KEY" webhook="LINEUP_WEBHOOK_SECRET=$WEBHOOK_SECRET"
  local stripe_key="LINEUP_STRIPE_API_KEY=sk_test_lineup_local_development_not_a_key"
  local stripe_webhook="LINEUP_STRIPE_WEBHOOK_SECRET=whsec_local_development_stripe_not_a_secret_0"
  if [ "$2" = stored ]; then
    signing="LINEUP_SIGNING_KEY_SECRET_ARN=$SIGNING_KEY_NAME"
    webhook="LINEUP_WEBHOOK_SECRET_ARN=$WEBHOOK_SECRET_NAME"
    stripe_key="LINEUP_STRIPE_API_KEY_ARN=$STRIPE_KEY_NAME"
    stripe_webhook="LINEUP_STRIPE_WEBHOOK_SECRET_ARN=$STRIPE_WEBHOOK_SECRET_NAME"
  fi
  case "$1" in
    join) echo "LINEUP_SIGNING_KEY=$SIGNING_KEY" "${EVENTS_ENV[@]}" ;;
    poll) echo "$signing" "${EVENTS_ENV[@]}" ;;
    hold) echo "$signing" "${TABLES_ENV[@]}" "${EVENTS_ENV[@]}" ;;
    confirm) echo "$webhook" "$stripe_webhook" "${TABLES_ENV[@]}" ;;
    admit) echo ADMIT_RUN_MS=1500 ADMIT_TICK_MS=250 "${EVENTS_ENV[@]}" "${TABLES_ENV[@]}" ;;
    status) echo "${EVENTS_ENV[@]}" "LINEUP_ORIGIN_SECRET=$ORIGIN_SECRET" ;;
    expire) echo "${TABLES_ENV[@]}" ;;
    outbox-stream) echo "${TICKET_QUEUE_ENV[@]}" "${REFUND_QUEUE_ENV[@]}" ;;
    refund) echo "$stripe_key" "${STRIPE_ENV[@]}" "${TABLES_ENV[@]}" "${REFUND_QUEUE_ENV[@]}" ;;
    checkout | reconcile) echo "$stripe_key" "${STRIPE_ENV[@]}" "${TABLES_ENV[@]}" ;;
    availability) ;;
  esac
}

# start_functions FIRST_PORT SECRETS ENV...: one emulator and one debug binary per function,
# each given ENV and its own variables (function_env FUNCTION SECRETS).
start_functions() {
  local port="$1" secrets="$2"; shift 2
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
    local own
    read -ra own <<<"$(function_env "$function" "$secrets")"
    env -i PATH="$PATH" AWS_LAMBDA_FUNCTION_NAME="$function" AWS_LAMBDA_FUNCTION_VERSION=1 \
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$port/.rt" \
      "${COMMON_ENV[@]}" "$@" "${own[@]}" "target/debug/$function" \
      >"$LOCAL_DIR/function-$function-$port.log" 2>&1 &
    STARTED_PIDS+=($!)
    PORTS="${PORTS:+$PORTS,}$function=$port"
    port=$((port + 1))
  done
  export LAMBDA_PORTS="$PORTS"
}

# What local-invoke reads (the tables and queue it sets up, the secret it signs webhooks with).
INVOKER_ENV=("${TABLES_ENV[@]}" "${EVENTS_ENV[@]}" "${TICKET_QUEUE_ENV[@]}" AWS_REGION=us-east-1)

step "the functions (debug binaries) under the runtime emulator, with the local stack"
# A clean emulator for this run (the tests before it made their own tables; these names are
# fixed), prepared as the README's Docker path prepares a LocalStack.
curl -s -X POST "$AWS_ENDPOINT_URL/moto-api/reset" >/dev/null
target/debug/lineup local-aws --endpoint-url "$AWS_ENDPOINT_URL" --region us-east-1
start_functions "$FIRST_PORT" stored REDIS_URL="$REDIS_URL" AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL"
env "${INVOKER_ENV[@]}" target/debug/local-invoke healthy

step "the same binaries with Redis and AWS unreachable (a listener that never answers)"
SILENT="$((FIRST_PORT + 38))"
start_silent_listener "$SILENT"
start_functions "$((FIRST_PORT + 20))" literal REDIS_URL="redis://127.0.0.1:$SILENT" AWS_ENDPOINT_URL="http://127.0.0.1:$SILENT"
env "${INVOKER_ENV[@]}" target/debug/local-invoke unreachable
