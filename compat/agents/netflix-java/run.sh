#!/usr/bin/env bash
# Runs the netflix-java agent in the foreground. Env: APP_NAME, PORT, EUREKA_URL, optional METADATA.
set -euo pipefail
cd "$(dirname "$0")"
: "${APP_NAME:?APP_NAME is required}" "${PORT:?PORT is required}" "${EUREKA_URL:?EUREKA_URL is required}"
exec java ${JAVA_OPTS:--Xmx128m -XX:TieredStopAtLevel=1 -Xss512k} \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${LOG_LEVEL:-info}" \
  -Dorg.slf4j.simpleLogger.showDateTime=true \
  -cp "target/netflix-java-agent.jar:target/lib/*" compat.agent.NetflixJavaAgent
