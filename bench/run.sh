#!/usr/bin/env bash
# Side-by-side benchmark: the same goreka-bench phases, in one run on this machine, against
#   1. goreka (its defaults),
#   2. the stock Spring Cloud Eureka server (Boot 3.5.7 / Spring Cloud 2025.0.0, compat/stock-server) with
#      Eureka's stock cache and lease timings, -Xmx1g, after a warm-up for the JIT,
#   3. goreka-baseline, a bare gin server answering with fixed bytes (the machine's ceiling),
# plus goreka-only checks: two peered nodes converging, and resident memory with 100k instances.
# Prints a Markdown table with the ratios goreka/Java and goreka/baseline.
#
#   bench/run.sh           full run (10k instances); writes the table into BENCHMARKS.md
#   bench/run.sh quick     small fleet and short phases, for development (under two minutes once built)
#
# Env: OUT (default out/bench), GO, SKIP_JAVA=1 (goreka and baseline only), and overrides of the
# settings below (INSTANCES, APPS, DURATION, ROUNDS, CONCURRENCY, WARMUP, PROP_SAMPLES, BIG).
# The three servers run side by side (idle when not measured) and each phase interleaves them round by
# round, so noise from other work on the machine spreads over all three instead of hitting one.
# Loopback only; every server started here is stopped on exit, every load loop is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-full}
GO=${GO:-go}
OUT=${OUT:-$ROOT/out/bench}
mkdir -p "$OUT/bin"

if [ "$MODE" = quick ]; then
  : "${INSTANCES:=2000}" "${APPS:=100}" "${DURATION:=1s}" "${ROUNDS:=3}" "${CONCURRENCY:=16}" "${WARMUP:=2s}"
  : "${PROP_SAMPLES:=1}" "${BIG:=0}" "${JAVA_PROP:=0}"
else
  : "${INSTANCES:=10000}" "${APPS:=200}" "${DURATION:=8s}" "${ROUNDS:=3}" "${CONCURRENCY:=32}" "${WARMUP:=30s}"
  : "${PROP_SAMPLES:=3}" "${BIG:=100000}" "${JAVA_PROP:=1}"
fi
# mix before burst: the burst's registrations and cancels would otherwise fill the mix's deltas.
PHASES=renew,full,delta,mix,burst
G_PORT=18761 J_PORT=18762 B_PORT=18763 A_PORT=18771 B2_PORT=18772

log() { echo "bench: $*" >&2; }

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

stop() { # stop one server started by start, by its pid
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

log "building (go build; the stock server with compat/stock-server/build.sh)"
$GO build -o "$OUT/bin/goreka" ./cmd/goreka
$GO build -o "$OUT/bin/goreka-bench" ./cmd/goreka-bench
$GO build -o "$OUT/bin/goreka-baseline" ./cmd/goreka-baseline
BENCH=$OUT/bin/goreka-bench
if [ -z "${SKIP_JAVA:-}" ]; then
  compat/stock-server/build.sh
fi

for port in $G_PORT $J_PORT $B_PORT $A_PORT $B2_PORT; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "bench: port $port is in use; stop what listens there first" >&2
    exit 1
  fi
done

# start NAME CMD...: runs a server in the background, sets SERVER_PID and STARTUP (seconds from exec to
# the first 200 on GET /eureka/apps).
start() {
  local name=$1 port=$2; shift 2
  local t0
  t0=$(date +%s%N)
  "$@" >"$OUT/$name.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  if ! STARTUP=$("$BENCH" wait --target="http://127.0.0.1:$port/eureka/" --since-ns="$t0" --timeout=180s); then
    echo "bench: $name did not start; see $OUT/$name.log" >&2
    tail -20 "$OUT/$name.log" >&2
    exit 1
  fi
  log "$name serving after ${STARTUP}s (pid $SERVER_PID)"
}

# goreka with its defaults; standalone: its only peer URL is itself.
goreka_cmd() { # port [peer-port]
  local url=http://127.0.0.1:$1/eureka/ peer=${2:-$1}
  echo "$OUT/bin/goreka" --server.port="$1" --server.address=127.0.0.1 --eureka.instance.hostname=127.0.0.1 \
    --eureka.client.service-url.defaultZone="http://127.0.0.1:$peer/eureka/" --eureka.server.my-url="$url"
}

log "== starting goreka, the stock Spring Cloud Eureka server and the gin baseline"
# shellcheck disable=SC2046
start goreka $G_PORT $(goreka_cmd $G_PORT)
SERVERS=(--server="goreka=http://127.0.0.1:$G_PORT/eureka/,pid=$SERVER_PID,startup=$STARTUP")
G_PID=$SERVER_PID
prop=goreka
rm -f "$OUT/java.json"
if [ -z "${SKIP_JAVA:-}" ]; then
  # compat/stock-server/application.yml shortens Eureka's timings for the compatibility suite; put the stock
  # values back (30 s readOnly cache, 60 s eviction, 30 s renewals, self-preservation on). -Xmx1g, default
  # JIT and GC (run.sh's C1-only start-up flags are not used here).
  start java $J_PORT java -Xmx1g -jar compat/stock-server/target/stock-server.jar --server.port=$J_PORT \
    --eureka.server.response-cache-update-interval-ms=30000 --eureka.server.eviction-interval-timer-in-ms=60000 \
    --eureka.server.enable-self-preservation=true --eureka.server.expected-client-renewal-interval-seconds=30 \
    --eureka.server.renewal-threshold-update-interval-ms=900000 \
    --eureka.instance.lease-renewal-interval-in-seconds=30 --eureka.instance.lease-expiration-duration-in-seconds=90
  SERVERS+=(--server="java=http://127.0.0.1:$J_PORT/eureka/,pid=$SERVER_PID,startup=$STARTUP")
  J_PID=$SERVER_PID
  [ "$JAVA_PROP" = 1 ] && prop=goreka,java
fi
start baseline $B_PORT "$OUT/bin/goreka-baseline" --port=$B_PORT --instances="$INSTANCES" --apps="$APPS"
SERVERS+=(--server="baseline=http://127.0.0.1:$B_PORT/eureka/,pid=$SERVER_PID,startup=$STARTUP")
B_PID=$SERVER_PID

timeout 3600 "$BENCH" "${SERVERS[@]}" --json-dir="$OUT" --instances="$INSTANCES" --apps="$APPS" \
  --duration="$DURATION" --rounds="$ROUNDS" --concurrency="$CONCURRENCY" --warmup="$WARMUP" \
  --phases=$PHASES,propagation --propagation-servers=$prop --propagation-samples="$PROP_SAMPLES"
stop "$G_PID"
[ -n "${J_PID:-}" ] && stop "$J_PID"
stop "$B_PID"

log "== two goreka nodes: $INSTANCES registrations on A -> visible on B"
# shellcheck disable=SC2046
start goreka-a $A_PORT $(goreka_cmd $A_PORT $B2_PORT)
A_PID=$SERVER_PID
# shellcheck disable=SC2046
start goreka-b $B2_PORT $(goreka_cmd $B2_PORT $A_PORT)
SERVER_PID=0 STARTUP=0 timeout 600 "$BENCH" --label=converge --target="http://127.0.0.1:$A_PORT/eureka/" \
  --peer="http://127.0.0.1:$B2_PORT/eureka/" --instances="$INSTANCES" --apps="$APPS" --concurrency="$CONCURRENCY" \
  --phases=converge --json="$OUT/converge.json"
stop "$SERVER_PID"
stop "$A_PID"

rm -f "$OUT/goreka-big.json"
if [ "$BIG" -gt 0 ]; then
  log "== goreka memory with $BIG instances"
  # shellcheck disable=SC2046
  start goreka-big $G_PORT $(goreka_cmd $G_PORT)
  timeout 900 "$BENCH" --label=goreka-big --target="http://127.0.0.1:$G_PORT/eureka/" --instances="$BIG" \
    --apps=$((BIG / 50)) --concurrency="$CONCURRENCY" --phases= --server-pid="$SERVER_PID" --json="$OUT/goreka-big.json"
  stop "$SERVER_PID"
fi

args=(--goreka="$OUT/goreka.json" --baseline="$OUT/baseline.json" --converge="$OUT/converge.json")
[ -f "$OUT/java.json" ] && args+=(--java="$OUT/java.json")
[ -f "$OUT/goreka-big.json" ] && args+=(--goreka-100k="$OUT/goreka-big.json")
"$BENCH" report "${args[@]}" >"$OUT/table.md"

machine() {
  echo "- CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "- memory: $(free -g | awk '/Mem:/{print $2}') GiB; kernel $(uname -r)"
  echo "- $($GO version | cut -d' ' -f3-); $(java -version 2>&1 | head -1)"
  echo "- run: $(date -u +%Y-%m-%dT%H:%MZ), mode $MODE, instances $INSTANCES, apps $APPS, $ROUNDS rounds of $DURATION per phase at concurrency $CONCURRENCY, warm-up $WARMUP"
  echo "- load average at the end (other work on the machine): $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine >"$OUT/machine.md"
echo
cat "$OUT/table.md"
echo
cat "$OUT/machine.md"

if [ "$MODE" != quick ] && [ -f BENCHMARKS.md ] && grep -q '<!-- bench:begin -->' BENCHMARKS.md; then
  # Replace what stands between the markers with this run's table and machine.
  { cat "$OUT/table.md"; echo; echo "Machine and settings of this run:"; echo; cat "$OUT/machine.md"; } >"$OUT/block.md"
  awk -v block="$OUT/block.md" '
    /<!-- bench:begin -->/ { print; while ((getline l < block) > 0) print l; skip=1; next }
    /<!-- bench:end -->/ { skip=0 }
    !skip { print }' BENCHMARKS.md >"$OUT/BENCHMARKS.md"
  cp "$OUT/BENCHMARKS.md" BENCHMARKS.md
  log "table written into BENCHMARKS.md"
fi
