#!/usr/bin/env bash
# The API contract (run by scripts/test.sh, after scripts/e2e.sh): openapi.yaml must say what the
# server does. Schemathesis (a schema-based fuzzer; pinned in scripts/local-stack.sh, installed in
# a venv of its own when missing) generates requests from openapi.yaml, valid ones and invalid
# ones, sends them to `lineup dev` (the real handlers behind the local API Gateway) and checks
# every answer against the schema:
#
#  - not_a_server_error: no 5xx, ever;
#  - status_code_conformance: every status is one the operation declares;
#  - content_type_conformance, response_schema_conformance, response_headers_conformance: the
#    body (every error `code` included: they are enums) and the headers are as declared;
#  - positive_data_acceptance: a request the schema allows is not refused as malformed (so id
#    patterns are not looser than the server's checks);
#  - negative_data_rejection: a request the schema forbids is refused (so they are not stricter);
#  - missing_required_header, unsupported_method, allow_header_conformance, ignored_auth (a
#    guarded route without a JWT gets 401).
#
# Left out, each for a reason:
#  - use_after_free: it expects an order to be gone (404) after `DELETE
#    /events/{eventId}/holds/{orderId}`; releasing a hold does not delete the order, which stays
#    readable as RELEASED (openapi.yaml says so).
#  - object_level_authorization: it needs credentials it can swap between users; tickets and
#    orders of another customer are answered like unknown ones (404), which the checks above see.
#  - ensure_resource_availability: it expects the place a join just made to be found by a poll
#    or a leave with the ticket the join returned. A place is the customer's, not the ticket's:
#    a leave with any valid ticket of the customer, an older one included, ends the customer's
#    current place, so when the stateful phase sends such a leave in between, the new ticket
#    finds nothing (404 `queue_entry_not_found`, as declared).
# And per operation (in the config below), where what is accepted depends on data no schema can
# state:
#  - joinQueue, negative_data_rejection: the join ignores its body's fields and takes any JSON
#    object of up to 1 KB; the schema states `{}`, the bound it can state (the 1 KB is on the
#    bytes), so a small object with fields is schema-invalid yet accepted, by design.
#  - holdSeats, positive_data_acceptance: the event's seat ids and sections (400 `unknown_seats`,
#    `unknown_section` for well-formed ones the layout does not have).
#  - getDrawChunk, positive_data_acceptance: a chunk's name has exactly the published draw's
#    `prefixLength` hex digits (1 to 6: 400 `invalid_prefix` for another length).
#  - confirmPayment, positive_data_acceptance: the order (400 `order_mismatch` when the body's
#    `orderId` is not the path's, 422 `payment_mismatch` for another amount or currency).
#  - stripeWebhook, unsupported_method: an undeclared method (TRACE, PUT...) gets 404
#    `route_not_found` on every path, as API Gateway answers a method no route has; schemathesis
#    expects 405, and lets 404 pass only where the path has a parameter (an unknown id), so only
#    this route, the one without one, is flagged.
#
# The fuzzer gets real data where it helps to reach deep code. Before it starts, on the demo
# event (`lineup dev` seeds and opens it: `--event`, default `demo`) three customers join and are
# admitted (`Authorization: Bearer <JWT>`: `lineup dev` takes the `sub` claim without checking
# the signature, so an unsigned token does): the fuzzing customer, whose JWT every guarded
# request carries and who holds a seat; the queue's customer, as whom hooks.py sends the queue's
# routes (so a generated leave or join cannot end the admission the holds use); and a payer,
# whose order (one seat) the webhook is fuzzed with. A second event opens a few seconds later,
# after two customers joined its pre-queue, so that it publishes a draw (the demo event has none).
# Schemathesis dictionaries (in the config this script writes) then make most generated values
# of a path parameter, header or body field that names something the real one: the events' ids,
# the queue's ticket, the access token, the layout's version, seat ids and sections, the orders,
# the payer's amount and currency, the draw's chunk names. The rest stay random, so malformed and
# unknown ids are still tried. The payment webhook is signed by hooks.py with the secret given to
# `lineup dev` for most requests that carry a `Lineup-Signature` (a quarter keep the generated
# value, which must get 401), so the webhook's checks after the signature are fuzzed too.
#
# The stateful phase follows the links schemathesis infers (join, then poll or leave; hold, then
# read or release), so the server's state moves while it runs: every answer must conform whatever
# the order of the requests. The config, the hooks, the report (JUnit, HAR: every request and
# answer) and the logs are in target/contract/.
#
#   scripts/contract.sh                      # lineup from target/debug/lineup
#   LINEUP_BIN=/tmp/lineup scripts/contract.sh
#   LINEUP_CONTRACT_EXAMPLES=200 scripts/contract.sh   # more cases per operation (default 100)
#   LINEUP_CONTRACT_SEED=123 scripts/contract.sh       # replay a run (its seed is printed)
#   LINEUP_CONTRACT_PORT=3111 LINEUP_CONTRACT_REDIS_PORT=6492 LINEUP_CONTRACT_MOTO_PORT=5031 \
#     scripts/contract.sh                    # beside another run on the default ports
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/local-stack.sh

LINEUP_BIN="${LINEUP_BIN:-target/debug/lineup}"
API_PORT="${LINEUP_CONTRACT_PORT:-3101}"
DEV_REDIS_PORT="${LINEUP_CONTRACT_REDIS_PORT:-6482}"
DEV_MOTO_PORT="${LINEUP_CONTRACT_MOTO_PORT:-5021}"
EXAMPLES="${LINEUP_CONTRACT_EXAMPLES:-100}"
EVENT=demo
DRAW_EVENT=contract-draw
BASE="http://127.0.0.1:$API_PORT"
OUT="$PWD/target/contract"
# `lineup dev` keeps its moto venv in a cache directory; here the one the other scripts use.
export LINEUP_CACHE_DIR="${LINEUP_CACHE_DIR:-$PWD/.local}"
# Not a secret: the webhook secret of this run's `lineup dev`, which the hook signs with.
export LINEUP_WEBHOOK_SECRET="whsec-contract-test-not-a-secret-00000"
export LINEUP_CONTRACT_WEBHOOK_SECRET="$LINEUP_WEBHOOK_SECRET"

[ -x "$LINEUP_BIN" ] \
  || { echo "error: no lineup binary at $LINEUP_BIN (set LINEUP_BIN)" >&2; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT"
ensure_schemathesis

DEV_PID=""
# On any exit: Ctrl-C, as a developer stops it (it stops the Redis and moto it started); only
# if it hangs, force it and its own children. (Never by name or port: those may be another
# checkout's.)
stop_dev() {
  [ -n "$DEV_PID" ] || return 0
  kill -INT "$DEV_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$DEV_PID" 2>/dev/null || { wait "$DEV_PID" 2>/dev/null || true; DEV_PID=""; return 0; }
    sleep 0.1
  done
  echo "error: lineup dev did not stop within 10 s of Ctrl-C; forcing it" >&2
  pkill -KILL -P "$DEV_PID" 2>/dev/null || true
  kill -KILL "$DEV_PID" 2>/dev/null || true
  wait "$DEV_PID" 2>/dev/null || true
  DEV_PID=""
  return 1
}
trap 'stop_dev || true' EXIT

echo "==> $LINEUP_BIN dev on 127.0.0.1:$API_PORT (Redis :$DEV_REDIS_PORT, moto :$DEV_MOTO_PORT)"
"$LINEUP_BIN" dev --port "$API_PORT" --redis-port "$DEV_REDIS_PORT" --moto-port "$DEV_MOTO_PORT" \
  --event "$EVENT" >"$OUT/dev.log" 2>&1 &
DEV_PID=$!
for attempt in $(seq 1 1200); do
  grep -q "Lineup is running: $BASE/" "$OUT/dev.log" && break
  if ! kill -0 "$DEV_PID" 2>/dev/null || [ "$attempt" = 1200 ]; then
    echo "error: lineup dev did not start serving; its output:" >&2
    cat "$OUT/dev.log" >&2
    exit 1
  fi
  sleep 0.5
done

# A token for `sub` with no signature (`alg: none`): what `lineup dev` takes (unverified_jwt.rs).
base64url() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
jwt() { echo "$(base64url '{"alg":"none","typ":"JWT"}').$(base64url "{\"sub\":\"$1\"}")."; }
# api TOKEN METHOD PATH [CURL ARGS...]: the body of a call that must succeed (2xx).
api() {
  local token="$1" method="$2" path="$3"; shift 3
  curl -fsS -X "$method" -H "Authorization: Bearer $token" "$@" "$BASE$path"
}
# admit TOKEN: joins the demo event's queue and polls until admitted; sets TICKET (the latest
# queue ticket) and ACCESS_TOKEN.
admit() {
  local standing
  TICKET="$(api "$1" POST "/events/$EVENT/queue" | jq -er .queueId)"
  ACCESS_TOKEN=""
  for _ in $(seq 1 60); do
    standing="$(api "$1" GET "/events/$EVENT/queue/$TICKET")"
    TICKET="$(jq -er .queueId <<<"$standing")"
    if [ "$(jq -r .status <<<"$standing")" = admitted ]; then
      ACCESS_TOKEN="$(jq -er .accessToken <<<"$standing")"
      return
    fi
    sleep 0.5
  done
  echo "error: a customer was not admitted within 30 s" >&2
  exit 1
}
# hold TOKEN SEAT FILE: holds one seat with the admission just made; the order goes to FILE.
hold() {
  api "$1" POST "/events/$EVENT/holds" -H "X-Queue-Token: $ACCESS_TOKEN" \
    -H 'Content-Type: application/json' -d "{\"seatIds\":[\"$2\"]}" >"$3"
}

echo "==> real data for the fuzzer: an event with a published draw; 3 customers admitted, 2 holding a seat"
# A second event, opening in a few seconds, whose pre-queue two customers join: at opening its
# draw is published, so the draw's routes answer 200 (the demo event opens with no pre-queue,
# so it has no draw). It has no seats.
AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
  "$LINEUP_BIN" event open "$DRAW_EVENT" --opens-at +6s \
  --redis-url "redis://127.0.0.1:$DEV_REDIS_PORT" --endpoint-url "http://127.0.0.1:$DEV_MOTO_PORT" \
  >"$OUT/draw-event.log" 2>&1 || { cat "$OUT/draw-event.log" >&2; exit 1; }
for customer in contract-entrant-1 contract-entrant-2; do
  api "$(jwt "$customer")" POST "/events/$DRAW_EVENT/queue" >"$OUT/entrant.json"
  jq -er .entrant "$OUT/entrant.json" >>"$OUT/entrants.txt" \
    || { echo "error: not in $DRAW_EVENT's pre-queue: $(cat "$OUT/entrant.json")" >&2; exit 1; }
done
api "$(jwt contract-fuzzer)" GET "/events/$EVENT/seats" >"$OUT/seats.json"
LAYOUT_VERSION="$(jq -er .layoutVersion "$OUT/seats.json")"
api "$(jwt contract-fuzzer)" GET "/events/$EVENT/layout/$LAYOUT_VERSION" >"$OUT/layout.json"
# The payer: its order is the one the webhook is fuzzed with. Paying it ends the payer's
# admission (as it should); the fuzzing customer's stays, so its holds reach the seats.
admit "$(jwt contract-payer)"
hold "$(jwt contract-payer)" "$(jq -er '.sections[-1].rows[-1].seats[-1]' "$OUT/layout.json")" \
  "$OUT/payer-order.json"
# The queue's customer: the queue's routes are fuzzed as this one (hooks.py), with its ticket.
QUEUER_TOKEN="$(jwt contract-queuer)"
admit "$QUEUER_TOKEN"
QUEUE_TICKET="$TICKET"
# The fuzzing customer (every other request with a JWT): its access token and order.
TOKEN="$(jwt contract-fuzzer)"
admit "$TOKEN"
hold "$TOKEN" "$(jq -er '.sections[0].rows[0].seats[0]' "$OUT/layout.json")" "$OUT/order.json"
for _ in $(seq 1 60); do
  api "$TOKEN" GET "/events/$DRAW_EVENT/status" | jq -e .draw.published >/dev/null && break
  sleep 0.5
done
api "$TOKEN" GET "/events/$DRAW_EVENT/draw" >"$OUT/draw.json" \
  || { echo "error: the draw of $DRAW_EVENT was not published" >&2; exit 1; }
PREFIX_LENGTH="$(jq -er .prefixLength "$OUT/draw.json")"

# The values go in as JSON, which TOML reads the same (strings, numbers and arrays of them).
cat >"$OUT/schemathesis.toml" <<EOF
# Written by scripts/contract.sh for one run: the values of its lineup dev.
[auth.openapi.bearerAuth]
bearer = "$TOKEN"

[dictionaries.events]
values = ["$EVENT", "$DRAW_EVENT"]
[dictionaries.prefixes]
values = $(cut -c "1-$PREFIX_LENGTH" "$OUT/entrants.txt" | jq -Rsc 'split("\n")[:-1]')
[dictionaries.tickets]
values = ["$QUEUE_TICKET"]
[dictionaries.access_tokens]
values = ["$ACCESS_TOKEN"]
[dictionaries.layout_versions]
values = ["$LAYOUT_VERSION"]
[dictionaries.seats]
values = $(jq -c '[.sections[].rows[0].seats[0:4][]]' "$OUT/layout.json")
[dictionaries.sections]
values = $(jq -c '[.sections[].name]' "$OUT/layout.json")
[dictionaries.orders]
values = [$(jq -c .orderId "$OUT/order.json")]
[dictionaries.payer_orders]
values = [$(jq -c .orderId "$OUT/payer-order.json")]
[dictionaries.payer_amounts]
values = [$(jq -c .amount "$OUT/payer-order.json")]
[dictionaries.currencies]
values = [$(jq -c .currency "$OUT/payer-order.json")]

[parameters]
"path.eventId" = { dictionary = "events", probability = 0.8 }
"path.queueId" = { dictionary = "tickets", probability = 0.5 }
"path.version" = { dictionary = "layout_versions", probability = 0.6 }
"path.prefix" = { dictionary = "prefixes", probability = 0.6 }
"path.orderId" = { dictionary = "orders", probability = 0.6 }
"header.X-Queue-Token" = { dictionary = "access_tokens", probability = 0.8 }
"body.seatIds[*]" = { dictionary = "seats", probability = 0.8 }
"body.section" = { dictionary = "sections", probability = 0.7 }

[checks]
use_after_free.enabled = false
object_level_authorization.enabled = false
ensure_resource_availability.enabled = false

[[operations]]
include-operation-id = "joinQueue"
checks.negative_data_rejection.enabled = false

[[operations]]
include-operation-id = "holdSeats"
checks.positive_data_acceptance.enabled = false

[[operations]]
include-operation-id = "getDrawChunk"
checks.positive_data_acceptance.enabled = false

[[operations]]
include-operation-id = "stripeWebhook"
checks.unsupported_method.enabled = false

[[operations]]
include-operation-id = "confirmPayment"
checks.positive_data_acceptance.enabled = false
[operations.parameters]
"path.orderId" = { dictionary = "payer_orders", probability = 0.6 }
"body.orderId" = { dictionary = "payer_orders", probability = 0.7 }
"body.amount" = { dictionary = "payer_amounts", probability = 0.5 }
"body.currency" = { dictionary = "currencies", probability = 0.7 }
EOF

cat >"$OUT/hooks.py" <<'EOF'
# Written by scripts/contract.sh: signs the payment webhook as the provider does
# (`Lineup-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`), over the
# bytes actually sent, for most requests that carry the header.
import hashlib
import hmac
import os
import time
import zlib

import requests
import schemathesis

SECRET = os.environ["LINEUP_CONTRACT_WEBHOOK_SECRET"].encode()


class SignWebhook(requests.auth.AuthBase):
    def __call__(self, request):
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        timestamp = str(int(time.time()))
        mac = hmac.new(SECRET, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        request.headers["Lineup-Signature"] = f"t={timestamp},v1={mac}"
        return request


# The queue's routes (join, poll, leave) as another customer, whose leaves and joins cannot end
# the admission the fuzzing customer's holds use.
QUEUE_PATHS = ("/events/{eventId}/queue", "/events/{eventId}/queue/{queueId}")
FUZZER = "Bearer " + os.environ["LINEUP_CONTRACT_FUZZER_TOKEN"]
QUEUER = "Bearer " + os.environ["LINEUP_CONTRACT_QUEUER_TOKEN"]


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path in QUEUE_PATHS:
        if case.headers and case.headers.get("Authorization") == FUZZER:
            case.headers["Authorization"] = QUEUER
        return
    if case.operation.path != "/orders/{orderId}/confirm":
        return
    generated = (case.headers or {}).get("Lineup-Signature")
    # A missing header stays missing; a quarter keep the generated value (both must get 401).
    if generated is None or zlib.crc32(str(generated).encode()) % 4 == 0:
        return
    kwargs["auth"] = SignWebhook()
EOF

export LINEUP_CONTRACT_FUZZER_TOKEN="$TOKEN" LINEUP_CONTRACT_QUEUER_TOKEN="$QUEUER_TOKEN"
SEED_ARGS=()
[ -z "${LINEUP_CONTRACT_SEED:-}" ] || SEED_ARGS=(--seed "$LINEUP_CONTRACT_SEED")

echo "==> schemathesis $SCHEMATHESIS_VERSION: openapi.yaml against $BASE ($EXAMPLES cases per operation and phase)"
# One worker: with two, hypothesis' threads at times fail with "AST constructor recursion depth
# mismatch" (a race in describing its own strategies) on this Python; the run is short anyway.
# No example database (nothing written outside target/contract); output not sanitised (the
# tokens are this run's, and the HAR report then shows what was really sent).
status=0
SCHEMATHESIS_HOOKS="$OUT/hooks.py" schemathesis --config-file "$OUT/schemathesis.toml" --no-color \
  run openapi.yaml --url "$BASE" --max-examples "$EXAMPLES" --workers 1 \
  --generation-database none --output-sanitize false --report junit,har --report-dir "$OUT" \
  "${SEED_ARGS[@]}" \
  >"$OUT/schemathesis.log" 2>&1 || status=$?

# The short summary: from the closing SUMMARY section on (failures, when any, are listed above
# it in the full log, and shown below).
sed -n '/^=* SUMMARY =*$/,$p' "$OUT/schemathesis.log"
echo "==> full output: $OUT/schemathesis.log; lineup dev's: $OUT/dev.log"
if ! stop_dev; then status=1; fi
if [ "$status" -ne 0 ]; then
  echo "error: openapi.yaml and the server disagree (schemathesis exit $status); the failures:" >&2
  sed -n '/^=* \(ERRORS\|FAILURES\) =*$/,/^=* \(WARNINGS\|SUMMARY\) =*$/p' "$OUT/schemathesis.log" \
    | head -200 >&2
  exit 1
fi
echo "==> the server answers as openapi.yaml says (no mismatch, no 5xx)"
