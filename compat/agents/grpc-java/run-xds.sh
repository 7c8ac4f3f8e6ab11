#!/usr/bin/env bash
# Runs the agent in the foreground: run-xds.sh CONTROL_PORT TARGET [NAME=PORT ...] (see Agent.java).
# GRPC_XDS_BOOTSTRAP names the xDS bootstrap file grpc-xds reads at start-up.
set -euo pipefail
cd "$(dirname "$0")"
: "${GRPC_XDS_BOOTSTRAP:?}"
# C1 JIT and the serial GC start faster on 2 shared cores, as for the other agents.
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m ${JAVA_OPTS:-} -cp "target/agent.jar:target/lib/*" compat.grpcxds.Agent "$@"
