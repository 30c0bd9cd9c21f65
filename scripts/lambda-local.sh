#!/usr/bin/env bash
# The Docker-free stand-in for `sam validate` + `sam local invoke`, run by scripts/test.sh after
# the unit and integration tests (it expects Redis and moto running, with REDIS_URL and
# AWS_ENDPOINT_URL exported):
#   1. `sam validate --lint` on template.yaml;
#   2. each function's debug binary run under its own cargo-lambda runtime emulator, invoked with
#      the samples in events/ through `cargo lambda invoke`, answers checked (tests/local_invoke.rs);
#      each function given only the variables it uses, and `poll`, `hold` and `confirm` their
#      secrets by ARN from moto's Secrets Manager, as in AWS (`join` the literal key, as locally);
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

SIGNING_KEY=lineup-local-development-key-not-a-secret
WEBHOOK_SECRET=whsec-local-development-not-a-secret-000
TABLES_ENV=(SEATS_TABLE=local-seats ORDERS_TABLE=local-orders OUTBOX_TABLE=local-outbox)
EVENTS_ENV=(EVENTS_TABLE=local-events)
# The value CloudFront sends in X-Lineup-Origin. Only `status` is given it here, so a direct
# call (no header) is seen refused; the other samples are not CloudFront's requests.
ORIGIN_SECRET=lineup-local-origin-header-not-a-secret
TICKET_QUEUE_ENV=(TICKET_QUEUE_URL="$AWS_ENDPOINT_URL/123456789012/lineup-ticket-issued.fifo")
COMMON_ENV=(
  AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test REDIS_TIMEOUT_MS=500
  # As the stack configures Lambda (LoggingConfig: LogFormat JSON).
  AWS_LAMBDA_LOG_FORMAT=JSON AWS_LAMBDA_LOG_LEVEL=INFO
)

# function_env FUNCTION SECRETS: the variables FUNCTION is given beside COMMON_ENV, only those it
# uses (shared/src/wiring/config.rs); SECRETS is `arn` (Secrets Manager, as in AWS) or `literal`.
function_env() {
  local signing="LINEUP_SIGNING_KEY=$SIGNING_KEY" webhook="LINEUP_WEBHOOK_SECRET=$WEBHOOK_SECRET"
  if [ "$2" = arn ]; then
    signing="LINEUP_SIGNING_KEY_SECRET_ARN=$SIGNING_KEY_ARN"
    webhook="LINEUP_WEBHOOK_SECRET_ARN=$WEBHOOK_SECRET_ARN"
  fi
  case "$1" in
    join) echo "LINEUP_SIGNING_KEY=$SIGNING_KEY" "${EVENTS_ENV[@]}" ;;
    poll) echo "$signing" "${EVENTS_ENV[@]}" ;;
    hold) echo "$signing" "${TABLES_ENV[@]}" "${EVENTS_ENV[@]}" ;;
    confirm) echo "$webhook" "${TABLES_ENV[@]}" ;;
    admit) echo ADMIT_RUN_MS=1500 ADMIT_TICK_MS=250 "${EVENTS_ENV[@]}" "${TABLES_ENV[@]}" ;;
    status) echo "${EVENTS_ENV[@]}" "LINEUP_ORIGIN_SECRET=$ORIGIN_SECRET" ;;
    expire) echo "${TABLES_ENV[@]}" ;;
    outbox-stream) echo "${TICKET_QUEUE_ENV[@]}" ;;
    availability) ;;
  esac
}

# The two secrets in moto's Secrets Manager, each rotated once (so it has an AWSPREVIOUS, as in
# AWS after a rotation) to the development value the samples are signed with. Sets their ARNs.
create_local_secrets() {
  local arns
  arns=$("$LOCAL_DIR/venv/bin/python" - "$AWS_ENDPOINT_URL" "$SIGNING_KEY" "$WEBHOOK_SECRET" <<'PY'
import secrets, sys
import boto3  # moto depends on it

endpoint, signing_key, webhook_secret = sys.argv[1:]
client = boto3.client("secretsmanager", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
arns = []
for name, value in [("lineup-signing-key", signing_key), ("lineup-webhook-secret", webhook_secret)]:
    arn = client.create_secret(Name=name, SecretString=secrets.token_urlsafe(48))["ARN"]
    client.put_secret_value(SecretId=arn, SecretString=value)
    arns.append(arn)
print(*arns)
PY
  )
  read -r SIGNING_KEY_ARN WEBHOOK_SECRET_ARN <<<"$arns"
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
# A clean emulator for this run (the tests before it made their own tables; these names are fixed).
curl -s -X POST "$AWS_ENDPOINT_URL/moto-api/reset" >/dev/null
create_local_secrets
echo "    poll, hold: $SIGNING_KEY_ARN; confirm: $WEBHOOK_SECRET_ARN"
start_functions "$FIRST_PORT" arn REDIS_URL="$REDIS_URL" AWS_ENDPOINT_URL="$AWS_ENDPOINT_URL"
env "${INVOKER_ENV[@]}" target/debug/local-invoke healthy

step "the same binaries with Redis and AWS unreachable (a listener that never answers)"
SILENT="$((FIRST_PORT + 38))"
start_silent_listener "$SILENT"
start_functions "$((FIRST_PORT + 20))" literal REDIS_URL="redis://127.0.0.1:$SILENT" AWS_ENDPOINT_URL="http://127.0.0.1:$SILENT"
env "${INVOKER_ENV[@]}" target/debug/local-invoke unreachable
