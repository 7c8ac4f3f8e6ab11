#!/usr/bin/env bash
# Runs the agent in the foreground. Env (compat/README.md): APP_NAME, PORT, EUREKA_URL, optional METADATA=k=v,...
# SIGTERM -> Spring closes the context -> the Eureka client cancels (DELETE) its registration.
set -euo pipefail
cd "$(dirname "$0")"
: "${APP_NAME:?}" "${PORT:?}" "${EUREKA_URL:?}"
# C1 JIT and the serial GC start a Spring app noticeably faster on 2 shared cores.
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m ${JAVA_OPTS:-} -jar target/agent.jar \
  --compat.call-client=rest-client "$@"
