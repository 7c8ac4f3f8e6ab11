#!/usr/bin/env bash
# Two peered goreka nodes: N registrations on A (a restart storm), polled on B's full registry until all
# are listed: the convergence phase of bench/ladder.sh on its own, with A's replication counters.
#
#   bench/converge.sh                     100000 registrations, default queue bound
#   N=100000 POOL=1000 bench/converge.sh  a queue bound far below the burst: overflow resyncs
#   INFLIGHT=1 bench/converge.sh          one replication batch in flight at a time (issue 30's "before")
#
# Env: OUT (default out/bench/converge), GO, N, POOL (eureka.server.max-elements-in-peer-replication-pool
# on A), INFLIGHT (goreka.replication.max-batches-in-flight on A), CONCURRENCY (32), A_PORT and B_PORT
# (18971, 18972). Loopback only; both servers are stopped by their pid on exit; load at nice 10.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${N:=100000}" "${POOL:=}" "${INFLIGHT:=}" "${CONCURRENCY:=32}" "${A_PORT:=18971}" "${B_PORT:=18972}"
OUT=${OUT:-$PWD/out/bench/converge}
mkdir -p "$OUT/bin"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
$GO build -o "$OUT/bin/goreka" ./cmd/goreka
$GO build -o "$OUT/bin/goreka-bench" ./cmd/goreka-bench
node() { # port peer-port [extra flags]
  local port=$1 peer=$2
  shift 2
  nice -n 10 "$OUT/bin/goreka" --server.port="$port" --server.address=127.0.0.1 --eureka.instance.hostname=127.0.0.1 \
    --eureka.client.service-url.defaultZone="http://127.0.0.1:$peer/eureka/" \
    --eureka.server.my-url="http://127.0.0.1:$port/eureka/" "$@" >"$OUT/node-$port.log" 2>&1 &
  PIDS+=("$!")
  "$OUT/bin/goreka-bench" wait --target="http://127.0.0.1:$port/eureka/" --timeout=60s >/dev/null
}
extra=()
[ -n "$POOL" ] && extra+=(--eureka.server.max-elements-in-peer-replication-pool="$POOL")
[ -n "$INFLIGHT" ] && extra+=(--goreka.replication.max-batches-in-flight="$INFLIGHT")
node $A_PORT $B_PORT "${extra[@]}"
node $B_PORT $A_PORT
nice -n 10 "$OUT/bin/goreka-bench" --label=converge --target="http://127.0.0.1:$A_PORT/eureka/" \
  --peer="http://127.0.0.1:$B_PORT/eureka/" --instances="$N" --apps=$((N / 50)) --concurrency="$CONCURRENCY" \
  --phases=converge --converge-timeout=5m --json="$OUT/converge.json" 2>&1 | grep -E 'registered in|convergence|converge:' || true
curl -s "http://127.0.0.1:$A_PORT/metrics" |
  grep -E '^goreka_replication_(items_total|batches_total|dropped_total|expired_total|resyncs_total|resynced_total|resync_pending|failures_total)' || true
for p in "${PIDS[@]}"; do
  echo "server CPU, pid $p: $(awk '{printf "%.1f", ($14+$15)/100}' "/proc/$p/stat") s"
done
