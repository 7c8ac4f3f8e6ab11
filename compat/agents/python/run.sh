#!/usr/bin/env bash
# Runs the python agent in the foreground. Env: APP_NAME, PORT, EUREKA_URL, optional METADATA, LOG_LEVEL=DEBUG.
set -euo pipefail
cd "$(dirname "$0")"
: "${APP_NAME:?APP_NAME is required}" "${PORT:?PORT is required}" "${EUREKA_URL:?EUREKA_URL is required}"
exec .venv/bin/python -u agent.py
