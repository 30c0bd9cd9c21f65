#!/usr/bin/env bash
# The on-sale end to end, as a newcomer meets it (run by scripts/test.sh, after the Rust tests):
#
#  1. the README's run command, `cargo run --bin lineup -- dev`, with a 20,000-seat demo event
#     (`--seats 20000`, so that the browser test sees a big venue; one server for all of it), on
#     a stack it starts itself: it must print its URL and serve the waiting-room page;
#  2. the browser test (tests/browser/, headless Debian Chromium driven by playwright-core):
#     joining to an issued ticket, a second customer refused a seat the first holds, best
#     available on the 20,000-seat event (the sections first, rows a page at a time, 2 seats
#     side by side), and the pre-queue; screenshots in target/browser/;
#  3. Ctrl-C (SIGINT) must stop the server and every service it started;
#  4. the binary that command built, copied alone to an empty directory and started from another
#     working directory (no source tree to lean on: the page and the installer are compiled in),
#     must serve the page with the right content types and stop on Ctrl-C too;
#  5. `lineup simulate --users 500 --seats 100` against a dev server with 20-second holds (so
#     lapsed holds go back on sale within the run), on a Redis and a moto this script starts
#     outside it (`lineup dev --redis-url .. --endpoint-url ..`, as with a LocalStack already
#     running): it exits non-zero if an invariant breaks, and after Ctrl-C both services must
#     still answer, with the tables it made (`lineup local-aws` finds them all, makes nothing);
#  6. a short chaos run against a dev server on its own stack: `lineup simulate --chaos flush@6s,restart@12s`
#     (300 customers, 60 seats, 10 admitted a second from 3 s, so both faults come while most of
#     the crowd waits; about a minute): Redis flushed, then killed and replaced by an empty one
#     on its port. Every check must still hold, the dev server must carry on with the
#     new Redis, and Ctrl-C must stop that one too;
#  7. `lineup dev --payments stripe` (localstripe for payments; about 15 s): one customer queues,
#     holds a seat, has its payment made and pays it as the page does (the publishable key and
#     the client secret to the dev server's `/v1/payment_intents/{id}/confirm`, relayed to
#     localstripe, `pm_card_visa`); the order must become PAID through localstripe's signed
#     webhook to `/webhooks/stripe` (reconciliation is held off), and Ctrl-C must stop
#     localstripe too.
#
#   scripts/e2e.sh                       # all of it
#   LINEUP_SIMULATE_USERS=500 scripts/e2e.sh
#   LINEUP_CHAOS_PLAN=flush@5s,restart@12s scripts/e2e.sh   # another chaos plan for step 6
#   LINEUP_E2E_PORT=3026 LINEUP_E2E_REDIS_PORT=6416 LINEUP_E2E_MOTO_PORT=5036 \
#     LINEUP_E2E_STRIPE_PORT=8426 scripts/e2e.sh
#                                        # beside another `lineup dev` on the default ports
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh

API_PORT="${LINEUP_E2E_PORT:-3000}"
DEV_REDIS_PORT="${LINEUP_E2E_REDIS_PORT:-6381}"
DEV_MOTO_PORT="${LINEUP_E2E_MOTO_PORT:-5010}"
DEV_STRIPE_PORT="${LINEUP_E2E_STRIPE_PORT:-8420}"
# The demo event's size for the browser test (its best-available scenario wants a big venue);
# seeding 20,000 seats takes about 20 s more than the default 1,000.
BIG_SEATS=20000
# The README's command as written when the ports are the defaults; the ports named otherwise.
DEV_PORTS=()
if [ "$API_PORT:$DEV_REDIS_PORT:$DEV_MOTO_PORT" != "3000:6381:5010" ]; then
  DEV_PORTS=(--port "$API_PORT" --redis-port "$DEV_REDIS_PORT" --moto-port "$DEV_MOTO_PORT")
fi
# `lineup dev` keeps its moto venv in a cache directory (~/.cache/lineup by default); here the
# one scripts/test.sh already made in .local/, so a fresh clone installs moto once, not twice.
export LINEUP_CACHE_DIR="${LINEUP_CACHE_DIR:-$PWD/.local}"
SIM_USERS="${LINEUP_SIMULATE_USERS:-500}"
SIM_SEATS="${LINEUP_SIMULATE_SEATS:-100}"
# The chaos run: offsets from the crowd's start; the queue opens at 3 s and admits 10 a second,
# so most of a crowd of 300 is still waiting at both (about 60-70 s in all).
CHAOS_PLAN="${LINEUP_CHAOS_PLAN:-flush@6s,restart@12s}"
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
DEV_CHILDREN=""
descendants() {
  local child
  for child in $(pgrep -P "$1" || true); do echo "$child"; descendants "$child"; done
}
# start_dev LOG COMMAND...: runs a dev server in the background and waits for its URL line.
start_dev() {
  local log="$1"; shift
  "$@" >"$log" 2>&1 &
  DEV_PID=$!
  DEV_CHILDREN=""
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

# stop_dev [PORT...]: Ctrl-C, as a developer stops it; then nothing it started may be left
# running, and the ports it had (by default the API's, its Redis's and its moto's) are free.
stop_dev() {
  local ports=("$@")
  [ ${#ports[@]} -gt 0 ] || ports=("$API_PORT" "$DEV_REDIS_PORT" "$DEV_MOTO_PORT")
  [ -n "$DEV_PID" ] || return 0
  # Its services (redis-server, moto's python) are its descendants: each must be gone after.
  DEV_CHILDREN="$(descendants "$DEV_PID")"
  kill -INT "$DEV_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$DEV_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$DEV_PID" 2>/dev/null; then
    echo "error: lineup dev did not stop within 10 s of Ctrl-C" >&2
    exit 1  # abandon_dev (the EXIT trap) forces it and its children
  fi
  wait "$DEV_PID" 2>/dev/null || true
  DEV_PID=""
  for child in $DEV_CHILDREN; do
    if kill -0 "$child" 2>/dev/null; then
      echo "error: process $child ($(ps -o comm= -p "$child")) outlived lineup dev's Ctrl-C" >&2
      exit 1
    fi
  done
  for port in "${ports[@]}"; do
    if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "error: something still answers on 127.0.0.1:$port after Ctrl-C" >&2
      exit 1
    fi
  done
  echo "==> Ctrl-C stopped the server and what it started (ports ${ports[*]} free; $(echo $DEV_CHILDREN | wc -w) processes it started gone)"
}

# expect_asset PATH CONTENT-TYPE: the dev server answers 200 with that content type (prefix).
expect_asset() {
  local type
  type="$(curl -fsS -o /dev/null -w '%{content_type}' "http://127.0.0.1:$API_PORT$1")" \
    || { echo "error: GET $1 failed" >&2; exit 1; }
  case "$type" in
    "$2"*) ;;
    *) echo "error: GET $1 answered Content-Type '$type', not $2" >&2; exit 1 ;;
  esac
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

echo "==> the README's run command: cargo run --bin lineup -- dev --seats $BIG_SEATS ${DEV_PORTS[*]}"
start_dev target/e2e/dev.log cargo run --locked --bin lineup -- dev --seats "$BIG_SEATS" "${DEV_PORTS[@]}"
grep "Lineup is running" target/e2e/dev.log
# Into a file first: `curl | grep -q` fails under pipefail when grep stops reading early.
curl -fsS "http://127.0.0.1:$API_PORT/" -o target/e2e/index.html
grep -q "<title>" target/e2e/index.html || { echo "error: the page did not load" >&2; exit 1; }
expect_asset /app.js text/javascript
expect_asset /queue.js text/javascript  # one of the modules app.js imports
echo "==> the waiting-room page loads"

echo "==> browser test (headless Chromium): join to issued ticket; a second customer refused a held seat; best available on $BIG_SEATS seats; the pre-queue"
LINEUP_URL="http://127.0.0.1:$API_PORT" node --test tests/browser/
ls target/browser/*.png
stop_dev

# The binary `cargo run` just built (no second compile), alone in an empty directory, started
# from yet another one: the page and the installer must come from the binary itself.
ALONE="$(mktemp -d)"
ELSEWHERE="$(mktemp -d)"
trap 'abandon_dev; rm -rf "$ALONE" "$ELSEWHERE"' EXIT
cp target/debug/lineup "$ALONE/lineup"
echo "==> the binary copied to $ALONE, started from $ELSEWHERE"
start_dev target/e2e/dev-copied.log \
  bash -c 'cd "$1" && shift && exec "$@"' _ "$ELSEWHERE" "$ALONE/lineup" dev \
    --port "$API_PORT" --redis-port "$DEV_REDIS_PORT" --moto-port "$DEV_MOTO_PORT"
curl -fsS "http://127.0.0.1:$API_PORT/" -o target/e2e/index-copied.html
grep -q "<title>Lineup waiting room</title>" target/e2e/index-copied.html \
  || { echo "error: the copied binary did not serve the page" >&2; exit 1; }
expect_asset / text/html
expect_asset /style.css text/css
# The entry module (app.js) and every module it imports (native ES modules, loaded by relative
# URL): a browser runs a module only if it comes as JavaScript, and each must be web/'s own.
for module in web/*.js; do
  expect_asset "/${module#web/}" text/javascript
  curl -fsS "http://127.0.0.1:$API_PORT/${module#web/}" | cmp -s - "$module" \
    || { echo "error: the copied binary's /${module#web/} is not $module" >&2; exit 1; }
done
[ -z "$(ls -A "$ELSEWHERE")" ] && [ "$(ls -A "$ALONE")" = lineup ] \
  || { echo "error: lineup dev wrote into its working or its own directory" >&2; exit 1; }
echo "==> the copied binary serves the page (HTML, CSS, and its $(ls web/*.js | wc -l) JavaScript modules as web/ has them, each with its content type)"
stop_dev

# A Redis and a moto started here, outside `lineup dev` (on its ports, free again), as a
# developer's LocalStack and Redis would be: `lineup dev` must use them and leave them running.
trap 'abandon_dev; stop_local_stack; rm -rf "$ALONE" "$ELSEWHERE"' EXIT
LOCAL_DIR="$LINEUP_CACHE_DIR"
start_redis "$DEV_REDIS_PORT"
start_moto "$DEV_MOTO_PORT"
OUTSIDE=(--redis-url "redis://127.0.0.1:$DEV_REDIS_PORT" --endpoint-url "http://127.0.0.1:$DEV_MOTO_PORT")
echo "==> lineup simulate --users $SIM_USERS --seats $SIM_SEATS (dev server with 20 s holds, sweep every 2 s, on the Redis and moto started outside it: ${OUTSIDE[*]})"
start_dev target/e2e/dev-simulate.log target/debug/lineup dev --port "$API_PORT" "${OUTSIDE[@]}" \
  --hold-seconds 20 --expire-every-seconds 2 --seats 100
target/debug/lineup simulate --users "$SIM_USERS" --seats "$SIM_SEATS" --api "http://127.0.0.1:$API_PORT" \
  | tee target/e2e/simulate-report.txt
stop_dev "$API_PORT"
redis-cli -p "$DEV_REDIS_PORT" ping | grep -q PONG \
  || { echo "error: the Redis started outside lineup dev is gone after its Ctrl-C" >&2; exit 1; }
target/debug/lineup local-aws --endpoint-url "http://127.0.0.1:$DEV_MOTO_PORT" | tee target/e2e/local-aws-after.txt
grep -q "^  0 made, 12 already there" target/e2e/local-aws-after.txt \
  || { echo "error: after lineup dev's Ctrl-C the moto started outside it lacks what it made" >&2; exit 1; }
echo "==> after Ctrl-C the Redis and the moto started outside lineup dev still run, with its tables, queues and secrets"
stop_local_stack

echo "==> a dev server on its own stack for the chaos run"
start_dev target/e2e/dev-chaos.log target/debug/lineup dev "${DEV_PORTS[@]}" \
  --hold-seconds 20 --expire-every-seconds 2 --seats 100

echo "==> lineup simulate --chaos $CHAOS_PLAN (300 users, 60 seats: Redis flushed, then killed and replaced by an empty one)"
target/debug/lineup simulate --users 300 --seats 60 --ramp 8s --pre-queue 3s --max-active 100 \
  --rate 10 --session 30s --think-ms 500 --chaos "$CHAOS_PLAN" --api "http://127.0.0.1:$API_PORT" \
  --report-json target/e2e/chaos-report.json | tee target/e2e/chaos-report.txt
if [[ "$CHAOS_PLAN" == *restart@* ]]; then
  grep -q "a new Redis answers on :$DEV_REDIS_PORT" target/e2e/dev-chaos.log \
    || { echo "error: lineup dev did not say it carried on with the new Redis; its log: target/e2e/dev-chaos.log" >&2; exit 1; }
fi
# Still serving, through its new Redis: the demo event's status (re-loaded from DynamoDB).
for attempt in $(seq 1 20); do
  code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$API_PORT/events/demo/status")"
  [ "$code" = 200 ] && break
  [ "$attempt" = 20 ] && { echo "error: after the chaos run GET /events/demo/status answers $code" >&2; exit 1; }
  sleep 0.5
done
echo "==> after the chaos run the dev server still serves (the demo event's status: 200)"
# Ctrl-C must stop the Redis the restart started as well: stop_dev checks the port is free.
stop_dev

echo "==> lineup dev --payments stripe: one customer pays through localstripe"
start_dev target/e2e/dev-stripe.log target/debug/lineup dev "${DEV_PORTS[@]}" \
  --payments stripe --stripe-port "$DEV_STRIPE_PORT" --seats 20 --reconcile-every-seconds 3600
grep -q "payment provider   localstripe http://127.0.0.1:$DEV_STRIPE_PORT" target/e2e/dev-stripe.log \
  || { echo "error: the banner does not name localstripe; its output: target/e2e/dev-stripe.log" >&2; exit 1; }
BASE="http://127.0.0.1:$API_PORT"
# field PATH [FILE]: one value of a JSON document (stdin or FILE), PATH like `a.0.b`; fails
# when it is missing or null (python3, which the moto venv needs anyway; no jq on a fresh machine).
field() {
  python3 -c 'import json, sys
doc = json.load(open(sys.argv[2]) if len(sys.argv) > 2 else sys.stdin)
for part in sys.argv[1].split("."):
    doc = doc[int(part)] if isinstance(doc, list) else doc.get(part)
    if doc is None: sys.exit(1)
print(doc)' "$@"
}
# A token for `sub` with no signature: what `lineup dev` takes (cli/src/dev/unverified_jwt.rs).
base64url() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
CUSTOMER="$(base64url '{"alg":"none","typ":"JWT"}').$(base64url '{"sub":"e2e-stripe-payer"}')."
api() {
  local method="$1" path="$2"; shift 2
  curl -fsS -X "$method" -H "Authorization: Bearer $CUSTOMER" "$@" "$BASE$path"
}
TICKET="$(api POST /events/demo/queue | field queueId)"
ACCESS_TOKEN=""
for _ in $(seq 1 60); do
  standing="$(api GET "/events/demo/queue/$TICKET")"
  TICKET="$(field queueId <<<"$standing")"
  if [ "$(field status <<<"$standing")" = admitted ]; then
    ACCESS_TOKEN="$(field accessToken <<<"$standing")"
    break
  fi
  sleep 0.5
done
[ -n "$ACCESS_TOKEN" ] || { echo "error: the payer was not admitted within 30 s" >&2; exit 1; }
LAYOUT_VERSION="$(api GET /events/demo/seats | field layoutVersion)"
SEAT="$(api GET "/events/demo/layout/$LAYOUT_VERSION" | field sections.0.rows.0.seats.0)"
ORDER="$(api POST /events/demo/holds -H "X-Queue-Token: $ACCESS_TOKEN" \
  -H 'Content-Type: application/json' -d "{\"seatIds\":[\"$SEAT\"]}" | field orderId)"
api POST "/orders/$ORDER/payment" >target/e2e/stripe-payment.json
# As the page's confirmAtProvider pays (web/order.js): same origin, publishable key, client secret.
curl -fsS -X POST "$BASE/v1/payment_intents/$(field paymentId target/e2e/stripe-payment.json)/confirm" \
  -H "Authorization: Bearer $(field publishableKey target/e2e/stripe-payment.json)" \
  --data-urlencode payment_method=pm_card_visa \
  --data-urlencode "client_secret=$(field clientSecret target/e2e/stripe-payment.json)" \
  | field status | grep -qx succeeded \
  || { echo "error: localstripe did not take the payment" >&2; exit 1; }
# localstripe sends its event about a second later; reconciliation waits an hour, so only the
# webhook can sell the order.
status=""
for _ in $(seq 1 40); do
  status="$(api GET "/orders/$ORDER" | field status || true)"
  [ "$status" = PAID ] && break
  sleep 0.25
done
[ "$status" = PAID ] \
  || { echo "error: the order is $status, not PAID, 10 s after paying at localstripe; see target/e2e/dev-stripe.log" >&2; exit 1; }
grep -q 'webhook "payment_intent.succeeded" successfully delivered' \
  "$LINEUP_CACHE_DIR/dev-localstripe-$DEV_STRIPE_PORT.log" \
  || { echo "error: localstripe's log does not say it delivered payment_intent.succeeded" >&2; exit 1; }
echo "==> paid at localstripe as the page pays; its webhook made order $ORDER PAID"
stop_dev "$API_PORT" "$DEV_REDIS_PORT" "$DEV_MOTO_PORT" "$DEV_STRIPE_PORT"
