#!/usr/bin/env bash
# Scale ladder: the same goreka-bench phases at 10k, 100k and 1M instances (50 per application), in one run
# on this machine, with server CPU per request per phase as the primary figure.
#
#   bench/ladder.sh                 rungs 10000 100000 1000000; writes the table into BENCHMARKS.md
#   LADDER="10000 100000" bench/ladder.sh
#
# Per rung: goreka (its defaults), the gin baseline (the floor: fixed bytes of the same fleet), and the stock
# Java server up to JAVA_MAX instances with a heap that fits (-Xmx1g at 10k, -Xmx6g at 100k); goreka alone at
# 1M. Phases: propagation right after loading (the delta then holds the whole fleet), renew, full, delta,
# burst, propagation at steady state; then a node joining goreka (start-up sync to first GET /apps 200), and
# two peered goreka nodes converging on N registrations (up to CONVERGE_MAX).
# Env: OUT (default out/bench/ladder), GO, LADDER, DURATION (5s), ROUNDS (3), CONCURRENCY (32), WARMUP (10s),
# JAVA_MAX (100000), CONVERGE_MAX (100000), SKIP_JAVA=1. Loopback only; every server started here is stopped
# by its pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
GO=${GO:-go}
OUT=${OUT:-$ROOT/out/bench/ladder}
: "${LADDER:=10000 100000 1000000}" "${DURATION:=5s}" "${ROUNDS:=3}" "${CONCURRENCY:=32}" "${WARMUP:=10s}"
: "${JAVA_MAX:=100000}" "${CONVERGE_MAX:=100000}"
mkdir -p "$OUT/bin"
G_PORT=18861 J_PORT=18862 B_PORT=18863 N_PORT=18864 A_PORT=18871 B2_PORT=18872

log() { echo "ladder: $*" >&2; }
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

log "building"
$GO build -o "$OUT/bin/goreka" ./cmd/goreka
$GO build -o "$OUT/bin/goreka-bench" ./cmd/goreka-bench
$GO build -o "$OUT/bin/goreka-baseline" ./cmd/goreka-baseline
BENCH=$OUT/bin/goreka-bench
[ -z "${SKIP_JAVA:-}" ] && compat/stock-server/build.sh

start() { # name port cmd...: sets SERVER_PID and STARTUP
  local name=$1 port=$2; shift 2
  local t0
  t0=$(date +%s%N)
  "$@" >"$OUT/$name.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  if ! STARTUP=$("$BENCH" wait --target="http://127.0.0.1:$port/eureka/" --since-ns="$t0" --timeout=600s); then
    echo "ladder: $name did not start; see $OUT/$name.log" >&2
    tail -20 "$OUT/$name.log" >&2
    exit 1
  fi
  log "$name serving after ${STARTUP}s (pid $SERVER_PID)"
}
goreka_cmd() { # port [peer-port]
  local url=http://127.0.0.1:$1/eureka/ peer=${2:-$1}
  echo "$OUT/bin/goreka" --server.port="$1" --server.address=127.0.0.1 --eureka.instance.hostname=127.0.0.1 \
    --eureka.client.service-url.defaultZone="http://127.0.0.1:$peer/eureka/" --eureka.server.my-url="$url"
}

echo "$(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/load-start.txt"
for N in $LADDER; do
  APPS=$((N / 50))
  log "== rung $N instances in $APPS applications"
  # shellcheck disable=SC2046
  start "goreka-$N" $G_PORT $(goreka_cmd $G_PORT)
  G_PID=$SERVER_PID
  SERVERS=(--server="goreka=http://127.0.0.1:$G_PORT/eureka/,pid=$G_PID,startup=$STARTUP")
  J_PID=
  if [ -z "${SKIP_JAVA:-}" ] && [ "$N" -le "$JAVA_MAX" ]; then
    heap=1g
    [ "$N" -gt 10000 ] && heap=6g
    start "java-$N" $J_PORT java -Xmx$heap -jar compat/stock-server/target/stock-server.jar --server.port=$J_PORT \
      --eureka.server.response-cache-update-interval-ms=30000 --eureka.server.eviction-interval-timer-in-ms=60000 \
      --eureka.server.enable-self-preservation=true --eureka.server.expected-client-renewal-interval-seconds=30 \
      --eureka.server.renewal-threshold-update-interval-ms=900000 \
      --eureka.instance.lease-renewal-interval-in-seconds=30 --eureka.instance.lease-expiration-duration-in-seconds=90
    J_PID=$SERVER_PID
    SERVERS+=(--server="java=http://127.0.0.1:$J_PORT/eureka/,pid=$J_PID,startup=$STARTUP")
  fi
  start "baseline-$N" $B_PORT "$OUT/bin/goreka-baseline" --port=$B_PORT --instances="$N" --apps="$APPS"
  B_PID=$SERVER_PID
  SERVERS+=(--server="baseline=http://127.0.0.1:$B_PORT/eureka/,pid=$B_PID,startup=$STARTUP")
  prop=goreka
  [ -n "$J_PID" ] && prop=goreka,java
  mkdir -p "$OUT/$N"
  timeout 7200 "$BENCH" "${SERVERS[@]}" --json-dir="$OUT/$N" --instances="$N" --apps="$APPS" \
    --duration="$DURATION" --rounds="$ROUNDS" --concurrency="$CONCURRENCY" --warmup="$WARMUP" \
    --phases=propagation-loaded,renew,full,delta,burst,propagation --propagation-servers=$prop \
    --propagation-samples=3 --settle-timeout=20m --propagation-timeout=2m
  [ -n "$J_PID" ] && stop "$J_PID"
  stop "$B_PID"

  log "== rung $N: a node joining goreka (start-up sync)"
  t0=$(date +%s%N)
  # shellcheck disable=SC2046
  $(goreka_cmd $N_PORT $G_PORT) >"$OUT/join-$N.log" 2>&1 &
  J2=$!
  PIDS+=("$J2")
  "$BENCH" wait --target="http://127.0.0.1:$N_PORT/eureka/" --since-ns="$t0" --timeout=600s >"$OUT/$N/join.txt"
  grep VmRSS "/proc/$J2/status" | awk '{print $2}' >>"$OUT/$N/join.txt"
  stop "$J2"
  stop "$G_PID"

  if [ "$N" -le "$CONVERGE_MAX" ]; then
    log "== rung $N: two goreka nodes, $N registrations on A visible on B"
    # shellcheck disable=SC2046
    start "conv-a-$N" $A_PORT $(goreka_cmd $A_PORT $B2_PORT)
    A_PID=$SERVER_PID
    # shellcheck disable=SC2046
    start "conv-b-$N" $B2_PORT $(goreka_cmd $B2_PORT $A_PORT)
    # A node that does not converge (its peer queue dropped registrations) is a result, not the end of the run.
    timeout 1800 "$BENCH" --label=converge --target="http://127.0.0.1:$A_PORT/eureka/" \
      --peer="http://127.0.0.1:$B2_PORT/eureka/" --instances="$N" --apps="$APPS" --concurrency="$CONCURRENCY" \
      --phases=converge --converge-timeout=5m --json="$OUT/$N/converge.json" 2>&1 | tee "$OUT/$N/converge.txt" || true
    curl -s "http://127.0.0.1:$A_PORT/metrics" | grep -E '^goreka_replication_(dropped_total|resyncs_total|resynced_total|resync_pending)' >>"$OUT/$N/converge.txt" || true
    stop "$SERVER_PID"
    stop "$A_PID"
  fi
done
echo "$(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/load-end.txt"

{
  "$BENCH" ladder --dir="$OUT" --rungs="${REPORT_RUNGS:-$LADDER}"
  echo
  echo "Machine and settings of this run:"
  echo
  echo "- CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); memory $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "- $($GO version | cut -d' ' -f3-); $(java -version 2>&1 | head -1)"
  echo "- run: $(date -u +%Y-%m-%dT%H:%MZ), rungs $LADDER, $ROUNDS rounds of $DURATION per phase at concurrency $CONCURRENCY, warm-up $WARMUP"
  echo "- load average (other engineers' work on the machine) at the start: $(cat "$OUT/load-start.txt"), at the end: $(cat "$OUT/load-end.txt")"
} >"$OUT/ladder.md"
cat "$OUT/ladder.md"
if [ -f BENCHMARKS.md ] && grep -q '<!-- ladder:begin -->' BENCHMARKS.md; then
  awk -v block="$OUT/ladder.md" '
    /<!-- ladder:begin -->/ { print; while ((getline l < block) > 0) print l; skip=1; next }
    /<!-- ladder:end -->/ { skip=0 }
    !skip { print }' BENCHMARKS.md >"$OUT/BENCHMARKS.md"
  cp "$OUT/BENCHMARKS.md" BENCHMARKS.md
  log "ladder written into BENCHMARKS.md"
fi
