# Shared by scripts/test.sh and `lineup dev` (cli/src/local_stack.rs, which embeds it): install
# and start the local services on loopback ports, and stop exactly what was started. Source it;
# do not run it.

STARTED_PIDS=()
# Where installs, logs and data go: the checkout's .local/ for the scripts; `lineup dev` sets it
# to its cache directory (~/.cache/lineup, or LINEUP_CACHE_DIR / --cache-dir).
LOCAL_DIR="${LOCAL_DIR:-$PWD/.local}"
mkdir -p "$LOCAL_DIR"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Debian's redis-server (7.0 on bookworm), installed once if missing.
ensure_redis_server() {
  if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then return; fi
  echo "==> installing redis-server (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get install -y --no-install-recommends redis-server redis-tools >/dev/null 2>&1 \
    || { as_root apt-get update -q >/dev/null && as_root apt-get install -y --no-install-recommends redis-server redis-tools >/dev/null; }
  # The package starts a system-wide server on 6379; Lineup uses its own, so leave that alone.
}

# start_redis PORT: a private, memory-only Redis on 127.0.0.1:PORT; waits until it answers.
start_redis() {
  REDIS_PORT="$1"
  if redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    echo "error: something already answers on 127.0.0.1:$REDIS_PORT; set another port" >&2
    exit 1
  fi
  echo "==> starting redis-server on 127.0.0.1:$REDIS_PORT"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --logfile "$LOCAL_DIR/redis-$REDIS_PORT.log" &
  STARTED_PIDS+=($!)
  for _ in $(seq 1 100); do
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "error: redis-server did not start; see $LOCAL_DIR/redis-$REDIS_PORT.log" >&2
  exit 1
}

# start_redis_cluster FIRST_PORT: a three-primary Redis Cluster on FIRST_PORT..FIRST_PORT+2, as
# ElastiCache Serverless speaks cluster mode only. Exports REDIS_CLUSTER_URL.
start_redis_cluster() {
  local first="$1" nodes=()
  for port in "$first" $((first + 1)) $((first + 2)); do
    if redis-cli -p "$port" ping >/dev/null 2>&1; then
      echo "error: something already answers on 127.0.0.1:$port; set another port" >&2
      exit 1
    fi
    local dir="$LOCAL_DIR/cluster-$port"
    rm -rf "$dir" && mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --dir "$dir" \
      --logfile "$dir/redis.log" &
    STARTED_PIDS+=($!)
    nodes+=("127.0.0.1:$port")
  done
  for port in "$first" $((first + 1)) $((first + 2)); do
    for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  echo "==> creating a Redis Cluster on ${nodes[*]}"
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$LOCAL_DIR/cluster-create.log" 2>&1
  for _ in $(seq 1 100); do
    redis-cli -p "$first" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
    sleep 0.1
  done
  export REDIS_CLUSTER_URL="redis://127.0.0.1:$first"
}

# A Python venv in $LOCAL_DIR/venv with moto's server (DynamoDB, DynamoDB Streams, SQS emulator).
MOTO_VERSION="5.2.5"
ensure_moto() {
  local venv="$LOCAL_DIR/venv"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null; then
    return
  fi
  echo "==> creating $venv with moto[server]==$MOTO_VERSION"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
}

# Schemathesis (the schema-based fuzzer scripts/contract.sh runs against `lineup dev`) in a venv
# of its own beside moto's, $LOCAL_DIR/schemathesis: its dependencies (hypothesis, werkzeug,
# requests, ...) must not move the ones moto[server] is pinned with. Installed once, and again
# only when the pinned version changes. Puts its `schemathesis` on PATH.
SCHEMATHESIS_VERSION="4.32.5"
ensure_schemathesis() {
  local venv="$LOCAL_DIR/schemathesis"
  export PATH="$venv/bin:$PATH"
  if [ -x "$venv/bin/schemathesis" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('schemathesis') != '$SCHEMATHESIS_VERSION')" 2>/dev/null; then
    return
  fi
  echo "==> creating $venv with schemathesis==$SCHEMATHESIS_VERSION"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
}

# localstripe (a Stripe API stand-in: PaymentIntents, refunds, webhooks) in a venv of its own,
# $LOCAL_DIR/localstripe: its dependencies (aiohttp, python-dateutil, unpinned) must not move
# the ones moto[server] is pinned with. Installed once, and again only when the pin changes.
LOCALSTRIPE_VERSION="1.15.10"
ensure_localstripe() {
  local venv="$LOCAL_DIR/localstripe"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('localstripe') != '$LOCALSTRIPE_VERSION')" 2>/dev/null; then
    return
  fi
  echo "==> creating $venv with localstripe==$LOCALSTRIPE_VERSION"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "localstripe==$LOCALSTRIPE_VERSION"
}

# start_moto PORT: moto behind scripts/moto_server.py, which serialises DynamoDB requests
# (stock moto oversells under concurrency; see that file). Exports what the AWS SDK needs.
start_moto() {
  MOTO_PORT="$1"
  if curl -s -o /dev/null "http://127.0.0.1:$MOTO_PORT/moto-api/"; then
    echo "error: something already answers on 127.0.0.1:$MOTO_PORT; set another port" >&2
    exit 1
  fi
  echo "==> starting moto (serialised DynamoDB) on 127.0.0.1:$MOTO_PORT"
  "$LOCAL_DIR/venv/bin/python" scripts/moto_server.py --port "$MOTO_PORT" \
    >"$LOCAL_DIR/moto-$MOTO_PORT.log" 2>&1 &
  STARTED_PIDS+=($!)
  for _ in $(seq 1 150); do
    if curl -s -o /dev/null "http://127.0.0.1:$MOTO_PORT/moto-api/"; then
      export AWS_ENDPOINT_URL="http://127.0.0.1:$MOTO_PORT"
      export AWS_REGION="${AWS_REGION:-us-east-1}" AWS_ACCESS_KEY_ID="test" AWS_SECRET_ACCESS_KEY="test"
      return
    fi
    sleep 0.2
  done
  echo "error: moto did not start; see $LOCAL_DIR/moto-$MOTO_PORT.log" >&2
  exit 1
}

# start_localstripe PORT: localstripe behind scripts/localstripe_server.py, which binds 127.0.0.1
# only (localstripe itself binds every interface) and keeps its store in memory (localstripe
# itself writes one shared /tmp file), so every run starts empty. Exports STRIPE_API_BASE.
start_localstripe() {
  LOCALSTRIPE_PORT="$1"
  if curl -s -o /dev/null "http://127.0.0.1:$LOCALSTRIPE_PORT/"; then
    echo "error: something already answers on 127.0.0.1:$LOCALSTRIPE_PORT; set another port" >&2
    exit 1
  fi
  echo "==> starting localstripe on 127.0.0.1:$LOCALSTRIPE_PORT"
  "$LOCAL_DIR/localstripe/bin/python" scripts/localstripe_server.py --port "$LOCALSTRIPE_PORT" \
    >"$LOCAL_DIR/localstripe-$LOCALSTRIPE_PORT.log" 2>&1 &
  STARTED_PIDS+=($!)
  for _ in $(seq 1 100); do
    # Its Stripe.js stand-in: the one GET that needs no key and changes nothing (GET
    # /v1/balance, say, creates a balance and sends a webhook).
    if curl -sf -o /dev/null "http://127.0.0.1:$LOCALSTRIPE_PORT/js.stripe.com/v3/"; then
      export STRIPE_API_BASE="http://127.0.0.1:$LOCALSTRIPE_PORT"
      return
    fi
    sleep 0.1
  done
  echo "error: localstripe did not start; see $LOCAL_DIR/localstripe-$LOCALSTRIPE_PORT.log" >&2
  exit 1
}

# cargo-lambda and the SAM CLI from PyPI, in $LOCAL_DIR/tools (the cargo-lambda wheel bundles zig).
CARGO_LAMBDA_VERSION="1.9.2"
SAM_CLI_VERSION="1.170.0"
ensure_lambda_tools() {
  local venv="$LOCAL_DIR/tools" marker="$LOCAL_DIR/tools/.lineup-$CARGO_LAMBDA_VERSION-$SAM_CLI_VERSION"
  mkdir -p "$LOCAL_DIR"
  # One installer at a time (scripts/test.sh's background `sam build` and scripts/lambda-local.sh
  # may both ask): the second waits, then finds the marker.
  exec {tools_lock}>"$LOCAL_DIR/.tools.lock"
  flock "$tools_lock"
  if [ ! -f "$marker" ]; then
    echo "==> creating $venv with cargo-lambda==$CARGO_LAMBDA_VERSION and aws-sam-cli==$SAM_CLI_VERSION"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
      "cargo-lambda==$CARGO_LAMBDA_VERSION" "aws-sam-cli==$SAM_CLI_VERSION"
    touch "$marker"
  fi
  flock -u "$tools_lock"
  exec {tools_lock}>&-
  export PATH="$venv/bin:$PATH"
}

# start_silent_listener PORT: accepts TCP connections on 127.0.0.1:PORT and never answers, the
# way a wrong route or security group looks from a function: calls must time out, not hang.
start_silent_listener() {
  python3 - "$1" <<'PY' &
import socket, sys, time
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen(512)
held = []
while True:
    connection, _ = server.accept()
    held.append(connection)  # kept open, never read from or written to
PY
  STARTED_PIDS+=($!)
  for _ in $(seq 1 50); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done
  echo "error: the silent listener on $1 did not start" >&2
  exit 1
}

stop_local_stack() {
  for pid in "${STARTED_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  STARTED_PIDS=()
}
