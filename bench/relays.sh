#!/usr/bin/env bash
# A relay tier (issue 28's targets): one goreka core on 127.0.0.1 and RELAYS goreka relays on
# 127.0.0.2.. (goreka.relay.upstream = the core), CLIENTS goreka-bench clients per relay (one
# goreka-bench per relay), then, all measured at the core (/metrics and /proc/PID/stat):
#   1. relayed: every relay's clients heartbeat once per INTERVAL (open-loop) for DURATION; the relays
#      send them aggregated every INTERVAL: heartbeat requests reaching the core (PUT apps/{app}/{id}
#      and POST goreka/renewals) per client heartbeat sent, and the core's CPU per client heartbeat;
#   2. direct: CLIENTS clients of the core itself (registered with the relays' clients) heartbeat at the same total rate for DURATION: the
#      core's CPU per direct heartbeat (the ratio's denominator);
#   3. visibility: one registration at relay 1, polled until every delta of the core and of relays
#      2..RELAYS shows it (PROP_SAMPLES samples).
#
#   bench/relays.sh                          10 relays x 10,000 clients
#   RELAYS=10 CLIENTS=2000 bench/relays.sh   scaled down
#
# Env: OUT (default out/bench/relays), GO, RELAYS (10), CLIENTS (10000), APPS (apps per relay, 50),
# INTERVAL (the clients' and the relays' heartbeat interval, 30s), DURATION (75s), FETCH_INTERVAL (the
# relays' goreka.relay.fetch-interval, 30s), PROP_SAMPLES (3), PORT (28871), SETTLE (seconds waited after
# the registrations, 200, every fleet heartbeating: the deltas' 3-minute window, so that neither phase
# pays for the registrations), PROFILE (a directory: the core runs with goreka.debug.pprof-enabled and
# a CPU profile of each phase's window is written there, relayed.cpu.pprof and direct.cpu.pprof, for
# `go tool pprof -top -cum`). Loopback only; every
# process started here is stopped by its pid on exit; the load runs at nice 10.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
: "${RELAYS:=10}" "${CLIENTS:=10000}" "${APPS:=50}" "${INTERVAL:=30s}" "${DURATION:=75s}"
: "${FETCH_INTERVAL:=30s}" "${PROP_SAMPLES:=3}" "${PORT:=28871}" "${SETTLE:=200}"
OUT=${OUT:-$PWD/out/bench/relays}
mkdir -p "$OUT/bin"
BENCH=$OUT/bin/goreka-bench
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
log() { echo "relays: $*" >&2; }

$GO build -o "$OUT/bin/goreka" ./cmd/goreka
$GO build -o "$BENCH" ./cmd/goreka-bench

CORE=http://127.0.0.1:$PORT/eureka/
relay_url() { echo "http://127.0.0.$(($1 + 1)):$PORT/eureka/"; }
for i in $(seq 0 "$RELAYS"); do
  if (exec 3<>"/dev/tcp/127.0.0.$((i + 1))/$PORT") 2>/dev/null; then
    echo "relays: 127.0.0.$((i + 1)):$PORT is in use; stop what listens there first" >&2
    exit 1
  fi
done

# node NAME INDEX [flags]: a goreka on 127.0.0.(INDEX+1), standalone (its only peer URL is itself).
node() {
  local name=$1 addr=127.0.0.$(($2 + 1))
  shift 2
  local url=http://$addr:$PORT/eureka/
  "$OUT/bin/goreka" --server.port="$PORT" --server.address="$addr" --eureka.instance.hostname="$addr" \
    --eureka.client.service-url.defaultZone="$url" --eureka.server.my-url="$url" "$@" >"$OUT/$name.log" 2>&1 &
  PIDS+=("$!")
  if ! "$BENCH" wait --target="$url" --timeout=60s >/dev/null; then
    echo "relays: $name did not start; see $OUT/$name.log" >&2
    tail -20 "$OUT/$name.log" >&2
    exit 1
  fi
}
# PROFILE: the core serves /debug/pprof/, and a phase's profile (its window, DURATION + INTERVAL)
# must end within the core's write timeout.
WINDOW=$((${DURATION%s} + ${INTERVAL%s}))
core_flags=()
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  core_flags=(--goreka.debug.pprof-enabled=true --goreka.server.write-timeout=$((WINDOW + 60))s)
fi
node core 0 "${core_flags[@]}"
CORE_PID=${PIDS[0]}
# profile NAME: a CPU profile of the core over the next WINDOW seconds into $PROFILE/NAME.cpu.pprof,
# in the background (its pid in PROF_PID); nothing without PROFILE.
PROF_PID=
profile() {
  [ -n "${PROFILE:-}" ] || return 0
  curl -s -o "$PROFILE/$1.cpu.pprof" "${CORE%eureka/}debug/pprof/profile?seconds=$WINDOW" &
  PROF_PID=$!
  PIDS+=("$PROF_PID")
}
profile_wait() { [ -z "$PROF_PID" ] || wait "$PROF_PID" || log "the profile of the core failed"; PROF_PID=; }
for k in $(seq 1 "$RELAYS"); do
  node "relay$k" "$k" --goreka.relay.upstream="$CORE" --goreka.relay.heartbeat-interval="$INTERVAL" \
    --goreka.relay.fetch-interval="$FETCH_INTERVAL"
done
log "core (pid $CORE_PID) and $RELAYS relays serving"

# cpu PID: user+system CPU of a process so far, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
# core_heartbeats: heartbeat requests the core has answered (client PUTs and aggregated POSTs).
core_heartbeats() {
  curl -s "${CORE%eureka/}metrics" | awk '/^goreka_http_requests_total/ &&
    (/method="PUT"/ && /route="\/eureka\/apps\/:app\/:id"/ || /route="\/eureka\/goreka\/renewals"/) { s += $NF }
    END { printf "%d\n", s }'
}
# core_registered: client registrations the core has taken (forwarded by the relays, or direct).
core_registered() {
  curl -s "${CORE%eureka/}metrics" | awk '/^goreka_registrations_total/ && /replication="false"/ { s += $NF } END { printf "%d\n", s }'
}

log "registering $RELAYS x $CLIENTS clients, each fleet at its relay, and $CLIENTS direct clients at the core"
t0=$(date +%s.%N)
for k in $(seq 1 "$RELAYS"); do
  nice -n 10 "$BENCH" --label="r$k" --target="$(relay_url "$k")" --prefix="r$k" --instances="$CLIENTS" \
    --apps="$APPS" --concurrency=8 --phases= --server-pid="${PIDS[$k]}" >"$OUT/load-r$k.log" 2>&1 &
  PIDS+=("$!")
done
nice -n 10 "$BENCH" --label=direct --target="$CORE" --prefix=direct --instances="$CLIENTS" --apps="$APPS" \
  --concurrency=8 --phases= --server-pid="$CORE_PID" >"$OUT/load-direct.log" 2>&1 &
PIDS+=("$!")
# A fleet's load that failed some registrations (a connection closed under the load: EOF) is counted
# and reported, not the end of the run: its other instances are registered, and the phases measure
# what is there (the missing instances' heartbeats are errors of their own).
for p in "${PIDS[@]:$((RELAYS + 1))}"; do wait "$p" || true; done
# reg_errors: registrations the load tools reported failed (goreka-bench: "registration: N errors").
reg_errors() {
  cat "$OUT"/load-*.log | sed -n 's/.*registration: \([0-9]*\) errors.*/\1/p' | awk '{ s += $1 } END { printf "%d\n", s }'
}
regerr=$(reg_errors)
[ "$regerr" -gt 0 ] && log "$regerr registrations failed (see $OUT/load-*.log); going on"
want=$((RELAYS * CLIENTS + CLIENTS - regerr))
# Until the core has every registration that went through, or none came for 60 s.
last=-1 stall=0
while :; do
  n=$(core_registered)
  [ "$n" -ge "$want" ] && break
  if [ "$n" = "$last" ]; then stall=$((stall + 2)); else stall=0 last=$n; fi
  if [ "$stall" -ge 60 ]; then log "the core stopped at $n of $want registrations; going on"; break; fi
  sleep 2
done
log "$(core_registered) of $want registered at the core after $(echo "$(date +%s.%N) - $t0" | bc)s; ${SETTLE}s of heartbeats (not measured) while the deltas drop them"
jobs=()
for k in $(seq 0 "$RELAYS"); do
  url=$(relay_url "$k") prefix=r$k
  [ "$k" = 0 ] && prefix=direct
  nice -n 10 "$BENCH" --label="$prefix" --target="$url" --prefix="$prefix" --instances="$CLIENTS" --apps="$APPS" \
    --skip-load --phases=heartbeat --mix-interval="$INTERVAL" --duration="${SETTLE}s" >"$OUT/settle-$prefix.log" 2>&1 &
  jobs+=("$!")
  PIDS+=("$!")
done
for p in "${jobs[@]}"; do wait "$p" || true; done

log "relayed: $want clients heartbeat every $INTERVAL for $DURATION"
c0=$(cpu "$CORE_PID") h0=$(core_heartbeats) t0=$(date +%s.%N)
profile relayed
jobs=()
for k in $(seq 1 "$RELAYS"); do
  nice -n 10 "$BENCH" --label="r$k" --target="$(relay_url "$k")" --prefix="r$k" --instances="$CLIENTS" \
    --apps="$APPS" --skip-load --phases=heartbeat --mix-interval="$INTERVAL" --duration="$DURATION" \
    --json="$OUT/relayed-r$k.json" >"$OUT/relayed-r$k.log" 2>&1 &
  jobs+=("$!")
  PIDS+=("$!")
done
for p in "${jobs[@]}"; do wait "$p" || true; done
sleep "${INTERVAL%s}" # the relays' last aggregated send of the phase
c1=$(cpu "$CORE_PID") h1=$(core_heartbeats) t1=$(date +%s.%N)
profile_wait
sent=$(jq -s 'map(.phases.heartbeat.requests) | add' "$OUT"/relayed-r*.json || echo 0)
errs=$(jq -s 'map(.phases.heartbeat.errors) | add' "$OUT"/relayed-r*.json || echo 0)
relayed_cpu=$((c1 - c0)) relayed_req=$((h1 - h0))

log "direct: $CLIENTS clients of the core heartbeat at the same total rate for $DURATION"
per=$(echo "${INTERVAL%s} $RELAYS" | awk '{printf "%.3f", $1 / $2}')
c2=$(cpu "$CORE_PID") h2=$(core_heartbeats)
profile direct
nice -n 10 "$BENCH" --label=direct --target="$CORE" --prefix=direct --instances="$CLIENTS" --apps="$APPS" \
  --skip-load --phases=heartbeat --mix-interval="${per}s" --duration="$DURATION" \
  --json="$OUT/direct.json" >"$OUT/direct.log" 2>&1 || true
sleep "${INTERVAL%s}" # the same window as the relayed phase's
c3=$(cpu "$CORE_PID") h3=$(core_heartbeats)
profile_wait
dsent=$(jq '.phases.heartbeat.requests' "$OUT/direct.json" || echo 0)
direct_cpu=$((c3 - c2)) direct_req=$((h3 - h2))

log "visibility: register at relay 1, read at the core and relays 2..$RELAYS"
readers=$CORE
for k in $(seq 2 "$RELAYS"); do readers=$readers,$(relay_url "$k"); done
"$BENCH" --label=visibility --target="$(relay_url 1)" --prefix=r1 --instances="$CLIENTS" --apps="$APPS" \
  --skip-load --phases=propagation --propagation-samples="$PROP_SAMPLES" --propagation-timeout=120s \
  --visible-at="$readers" --json="$OUT/visibility.json" >"$OUT/visibility.log" 2>&1 || true
vis=$(jq -r '(.propagation_seconds // []) | map(. * 1000 | round | tostring + " ms") | join(", ")' "$OUT/visibility.json" 2>/dev/null || echo "failed: see $OUT/visibility.log")

cat <<EOF | tee "$OUT/result.md"
| relay tier: $RELAYS relays x $CLIENTS clients, heartbeats every $INTERVAL, $DURATION | figure |
|---|---|
| registrations (failed, counted by the load tools) | $((RELAYS * CLIENTS + CLIENTS)) ($regerr) |
| client heartbeats sent to the relays (errors) | $sent ($errs) |
| heartbeat requests reaching the core | $relayed_req |
| requests at the core per client heartbeat (target <= 1/50) | 1/$((sent / (relayed_req > 0 ? relayed_req : 1))) |
| core CPU, relayed phase | $(echo "scale=2; $relayed_cpu / $TICK" | bc) s |
| direct heartbeats to the core (requests counted there) | $dsent ($direct_req) |
| core CPU, direct phase | $(echo "scale=2; $direct_cpu / $TICK" | bc) s |
| core CPU per client heartbeat, relayed / direct (target <= 0.05x) | $(echo "scale=4; ($relayed_cpu * $dsent) / ($direct_cpu * $sent)" | bc)x |
| registration at relay 1 visible at the core and relays 2..$RELAYS (target <= 1 s) | $vis |
EOF
