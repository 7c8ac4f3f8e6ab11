#!/usr/bin/env bash
# Runs the python agent in the foreground. Env: APP_NAME, PORT, EUREKA_URL, optional METADATA, LOG_LEVEL=DEBUG.
set -euo pipefail
cd "$(dirname "$0")"
: "${APP_NAME:?APP_NAME is required}" "${PORT:?PORT is required}" "${EUREKA_URL:?EUREKA_URL is required}"
# A fair lease for this client's design: heartbeat and delta fetch run one after the other on one thread
# (a tick is 1 s + both requests, 2-5 s on a loaded machine), and a new lease expires one duration after the
# register (Eureka doubles only renewed leases), so 3 s lost the lease before its first heartbeat.
export LEASE_DURATION_SECS="${LEASE_DURATION_SECS:-10}"
exec .venv/bin/python -u agent.py
