#!/usr/bin/env bash
# Old build against new build, in one run: the same goreka-bench phases (renew, full, delta, burst
# registrations) against goreka built at REV, goreka built from the work tree, the bare gin baseline
# and, when compat/stock-server has been built (compat/stock-server/build.sh), the stock Java server.
# The servers run side by side and each phase interleaves them round by round, so the noise of a
# shared machine spreads over all of them; compare the ratios, not the absolute figures.
#
#   bench/compare.sh REV        e.g. bench/compare.sh main~5, or the commit before a refactor
#
# Env: OUT (default out/compare), GO, INSTANCES (10000), APPS (200), DURATION (8s), ROUNDS (5),
# CONCURRENCY (32), WARMUP (20s), SKIP_JAVA=1. Loopback only; every server started here is stopped on
# exit, every load loop is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REV=${1:?usage: bench/compare.sh REV}
GO=${GO:-go}
OUT=${OUT:-$ROOT/out/compare}
: "${INSTANCES:=10000}" "${APPS:=200}" "${DURATION:=8s}" "${ROUNDS:=5}" "${CONCURRENCY:=32}" "${WARMUP:=20s}"
O_PORT=18781 N_PORT=18782 B_PORT=18783 J_PORT=18784
mkdir -p "$OUT/bin"
log() { echo "compare: $*" >&2; }

PIDS=()
WT=$(mktemp -d)
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  git worktree remove --force "$WT/src" 2>/dev/null || true
  rm -rf "$WT"
}
trap cleanup EXIT

log "building goreka at $REV ($(git rev-parse --short "$REV")) and from the work tree"
git worktree add -q --detach "$WT/src" "$REV"
(cd "$WT/src" && $GO build -o "$OUT/bin/goreka-old" ./cmd/goreka)
$GO build -o "$OUT/bin/goreka-new" ./cmd/goreka
$GO build -o "$OUT/bin/goreka-bench" ./cmd/goreka-bench
$GO build -o "$OUT/bin/goreka-baseline" ./cmd/goreka-baseline
BENCH=$OUT/bin/goreka-bench

for port in $O_PORT $N_PORT $B_PORT $J_PORT; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "compare: port $port is in use; stop what listens there first" >&2
    exit 1
  fi
done

start() { # NAME PORT CMD...: sets SERVER_PID and STARTUP
  local name=$1 port=$2 t0
  shift 2
  t0=$(date +%s%N)
  "$@" >"$OUT/$name.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  if ! STARTUP=$("$BENCH" wait --target="http://127.0.0.1:$port/eureka/" --since-ns="$t0" --timeout=180s); then
    echo "compare: $name did not start; see $OUT/$name.log" >&2
    exit 1
  fi
  log "$name serving after ${STARTUP}s (pid $SERVER_PID)"
}
goreka_args() { # PORT: standalone goreka on its defaults
  echo --server.port="$1" --server.address=127.0.0.1 --eureka.instance.hostname=127.0.0.1 \
    --eureka.client.service-url.defaultZone="http://127.0.0.1:$1/eureka/" --eureka.server.my-url="http://127.0.0.1:$1/eureka/"
}

SERVERS=()
# shellcheck disable=SC2046
start old $O_PORT "$OUT/bin/goreka-old" $(goreka_args $O_PORT)
SERVERS+=(--server="old=http://127.0.0.1:$O_PORT/eureka/,pid=$SERVER_PID,startup=$STARTUP")
# shellcheck disable=SC2046
start new $N_PORT "$OUT/bin/goreka-new" $(goreka_args $N_PORT)
SERVERS+=(--server="new=http://127.0.0.1:$N_PORT/eureka/,pid=$SERVER_PID,startup=$STARTUP")
start baseline $B_PORT "$OUT/bin/goreka-baseline" --port=$B_PORT --instances="$INSTANCES" --apps="$APPS"
SERVERS+=(--server="baseline=http://127.0.0.1:$B_PORT/eureka/,pid=$SERVER_PID,startup=$STARTUP")
JAR=compat/stock-server/target/stock-server.jar
if [ -z "${SKIP_JAVA:-}" ] && [ -f "$JAR" ]; then
  # Eureka's stock timings, as bench/run.sh sets them.
  start java $J_PORT java -Xmx1g -jar "$JAR" --server.port=$J_PORT \
    --eureka.server.response-cache-update-interval-ms=30000 --eureka.server.eviction-interval-timer-in-ms=60000 \
    --eureka.server.enable-self-preservation=true --eureka.server.expected-client-renewal-interval-seconds=30 \
    --eureka.server.renewal-threshold-update-interval-ms=900000 \
    --eureka.instance.lease-renewal-interval-in-seconds=30 --eureka.instance.lease-expiration-duration-in-seconds=90
  SERVERS+=(--server="java=http://127.0.0.1:$J_PORT/eureka/,pid=$SERVER_PID,startup=$STARTUP")
else
  log "no stock server ($JAR missing or SKIP_JAVA): old, new and baseline only"
fi

timeout 3600 "$BENCH" "${SERVERS[@]}" --json-dir="$OUT" --instances="$INSTANCES" --apps="$APPS" \
  --duration="$DURATION" --rounds="$ROUNDS" --concurrency="$CONCURRENCY" --warmup="$WARMUP" \
  --phases=renew,full,delta,burst | tee "$OUT/result.txt"
echo "- load average at the end (other work on the machine): $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/result.txt"
