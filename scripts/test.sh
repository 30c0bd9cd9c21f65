#!/usr/bin/env bash
# The README's test command: installs what is missing (Debian's redis-server; a venv with
# moto[server]; localstripe; cargo-lambda and the SAM CLI; the arm64 Rust target), starts Redis,
# the serialised moto server and localstripe (a Stripe stand-in) on loopback ports, builds the
# workspace (the test binaries and the debug binaries of the functions, which
# scripts/lambda-local.sh runs), runs the whole test suite against them, then
# scripts/lambda-local.sh, scripts/e2e.sh and scripts/contract.sh (the API schema fuzzed against
# `lineup dev`, with schemathesis); beside all that, `sam build` (scripts/sam-build.sh). Stops
# what it started and prints how long each step took. CI runs exactly this (via .ci/run).
#
#   scripts/test.sh            # everything
#   scripts/test.sh -- join    # extra arguments go to `cargo test` (e.g. a test-name filter)
#   LINEUP_TEST_REDIS_PORT=6431 LINEUP_TEST_MOTO_PORT=5041 LINEUP_TEST_CLUSTER_PORT=7131 \
#     LINEUP_LAMBDA_PORT=9301 LINEUP_E2E_PORT=3041 LINEUP_E2E_REDIS_PORT=6441 \
#     LINEUP_E2E_MOTO_PORT=5051 LINEUP_CONTRACT_PORT=3111 LINEUP_CONTRACT_REDIS_PORT=6492 \
#     LINEUP_CONTRACT_MOTO_PORT=5031 LINEUP_TEST_STRIPE_PORT=8431 scripts/test.sh
#                              # beside another run on the default ports
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh
source scripts/steps.sh

mkdir -p target
export LINEUP_STEP_TIMES="$PWD/target/step-times.txt"
: >"$LINEUP_STEP_TIMES"
SAM_BUILD_PID=""
CONTRACT_PID=""
E2E_PID=""
VENVS_PID=""
SAM_BUILD_LOG="$PWD/target/sam-build.log"
finish() {
  local status=$?
  step_end
  for pid in "$VENVS_PID" "$E2E_PID"; do
    # e2e.sh stops its own `lineup dev` and services on SIGTERM (its trap).
    [ -n "$pid" ] && { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  done
  if [ -n "$CONTRACT_PID" ]; then
    kill -TERM "$CONTRACT_PID" 2>/dev/null || true
    wait "$CONTRACT_PID" 2>/dev/null || true
  fi
  if [ -n "$SAM_BUILD_PID" ]; then
    # Only the background build's own process group: its make, cargo and rustc processes.
    kill -TERM -- "-$SAM_BUILD_PID" 2>/dev/null || true
    wait "$SAM_BUILD_PID" 2>/dev/null || true
  fi
  stop_local_stack
  print_step_times
  [ "$status" -eq 0 ] || echo "error: scripts/test.sh failed (exit $status)" >&2
}
trap finish EXIT

step "installs (what is missing) and the local stack: Redis, moto, a Redis Cluster"
ensure_redis_server
# cargo-lambda, the SAM CLI and the arm64 target: installed by the background `sam build` below
# (scripts/sam-build.sh), which needs them first; scripts/lambda-local.sh, long after, finds them.
# The Python venvs (moto, schemathesis) are made beside the debug build, which needs neither;
# moto is started after it.
VENVS_LOG="$PWD/target/venvs.log"
(ensure_moto && ensure_schemathesis) >"$VENVS_LOG" 2>&1 &
VENVS_PID=$!
start_redis "${LINEUP_TEST_REDIS_PORT:-6391}"
start_redis_cluster "${LINEUP_TEST_CLUSTER_PORT:-7111}"
export REDIS_URL="redis://127.0.0.1:${REDIS_PORT}"

# `sam build` (arm64, release: the deploy artifacts, checked by scripts/sam-build.sh) takes
# minutes of CPU, mostly link-time optimisation, and nothing below needs what it makes. So it
# runs in the background at the lowest CPU priority, in a process group of its own, using what
# the builds, the tests and the end-to-end run leave idle; the last step waits for it. It is CI's
# lighter arm64 build (LINEUP_SAM_BUILD=ci: no optimisation, no LTO; a fraction of the CPU),
# checked for arm64 and Lambda's 50 MB upload limit; the 5 MB gate is the deploy build's
# (scripts/sam-build.sh in the README's deploy step).
echo "==> sam build, in the background (log: $SAM_BUILD_LOG)"
set -m
LINEUP_SAM_BUILD=ci nice -n 19 scripts/sam-build.sh >"$SAM_BUILD_LOG" 2>&1 &
SAM_BUILD_PID=$!
set +m

# The lints, while building: clippy's driver compiles the workspace's own crates in rustc's place
# with every warning denied (what `cargo clippy --workspace --all-targets -- -D warnings` checks;
# CLIPPY_ARGS is how cargo-clippy hands its arguments to the driver), so the dependencies are
# compiled once, not a second time in check mode. Exported after the background build started
# (it builds for arm64 without them), and for every cargo command after it, so all of them share
# the same artifacts.
RUSTC_WORKSPACE_WRAPPER="$(rustup which clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

# Every binary the later steps run, built once here in the dev profile: the functions (run under
# the runtime emulator by scripts/lambda-local.sh), `lineup` (scripts/e2e.sh) and `local-invoke`.
# `--workspace` resolves features as `cargo test --workspace` does, so they share its build.
step "cargo build --workspace --bins (debug, linted: clippy -D warnings)"
cargo build --workspace --bins --locked
step "the Python venvs (made beside the build) and moto"
wait "$VENVS_PID" || { cat "$VENVS_LOG"; echo "error: installing moto or schemathesis failed" >&2; exit 1; }
VENVS_PID=""
cat "$VENVS_LOG"
start_moto "${LINEUP_TEST_MOTO_PORT:-5011}"
# localstripe, the Stripe stand-in the payment adapter's tests run against (STRIPE_API_BASE).
ensure_localstripe
start_localstripe "${LINEUP_TEST_STRIPE_PORT:-8421}"
step_end
# The contract fuzzer (scripts/contract.sh: openapi.yaml against a `lineup dev` of its own, with
# schemathesis) needs only the `lineup` binary built above, and the steps below spend much of
# their time waiting (on the serialised emulator, on timeouts): so it runs beside the test build,
# the suite and the emulator step, and is waited for after them (its own ports, Redis and moto).
CONTRACT_LOG="$PWD/target/contract.log"
echo "==> scripts/contract.sh, in the background (log: $CONTRACT_LOG)"
contract_started=$(date +%s)
scripts/contract.sh >"$CONTRACT_LOG" 2>&1 &
CONTRACT_PID=$!

step "cargo test --no-run --all-targets (compile the tests and the benchmarks, linted)"
cargo test --workspace --locked --no-run --all-targets "$@"

step "cargo test (Redis at ${REDIS_URL}, DynamoDB/SQS emulator at ${AWS_ENDPOINT_URL})"
cargo test --workspace --locked "$@"
step_end

# The end-to-end run (scripts/e2e.sh: `lineup dev` on its own ports, the browser test, the
# copied binary, `lineup simulate` and a chaos run) needs nothing the steps below make: it runs
# beside the functions under the emulator and is waited for after them.
E2E_LOG="$PWD/target/e2e.log"
echo "==> scripts/e2e.sh, in the background (log: $E2E_LOG)"
e2e_started=$(date +%s)
scripts/e2e.sh >"$E2E_LOG" 2>&1 &
E2E_PID=$!

scripts/lambda-local.sh

step "scripts/contract.sh (waiting for it: openapi.yaml against lineup dev, no mismatch, no 5xx)"
contract_status=0
wait "$CONTRACT_PID" || contract_status=$?
CONTRACT_PID=""
record_background "$(($(date +%s) - contract_started))" "scripts/contract.sh"
cat "$CONTRACT_LOG"
if [ "$contract_status" -ne 0 ]; then
  echo "error: scripts/contract.sh failed (exit $contract_status); its output is above" >&2
  exit 1
fi
step_end

step "scripts/e2e.sh (waiting for it: lineup dev, the browser test, the copied binary, lineup simulate)"
e2e_status=0
wait "$E2E_PID" || e2e_status=$?
E2E_PID=""
record_background "$(($(date +%s) - e2e_started))" "scripts/e2e.sh"
cat "$E2E_LOG"
if [ "$e2e_status" -ne 0 ]; then
  echo "error: scripts/e2e.sh failed (exit $e2e_status); its output is above" >&2
  exit 1
fi
step_end

step "sam build (waiting for the background build)"
sam_status=0
wait "$SAM_BUILD_PID" || sam_status=$?
SAM_BUILD_PID=""
cat "$SAM_BUILD_LOG"
if [ "$sam_status" -ne 0 ]; then
  echo "error: scripts/sam-build.sh failed (exit $sam_status); its output is above" >&2
  exit 1
fi
step_end
