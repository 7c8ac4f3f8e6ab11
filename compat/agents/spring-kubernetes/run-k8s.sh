#!/usr/bin/env bash
# Runs the agent in the foreground. Env: PORT, KUBECONFIG (the API server), NAMESPACE (where goreka exports).
set -euo pipefail
cd "$(dirname "$0")"
: "${PORT:?}" "${KUBECONFIG:?}" "${NAMESPACE:?}"
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m ${JAVA_OPTS:-} -jar target/agent.jar "$@"
