#!/usr/bin/env bash
# Builds target/agent.jar and target/lib/. Idempotent: skips Maven when the jar is newer than the POM and every
# source. Named build-xds.sh, not build.sh: this agent is not a Eureka client (compat/suite lists the client
# agents by their build.sh).
set -euo pipefail
cd "$(dirname "$0")"
jar=target/agent.jar
if [ -f "$jar" ] && [ -d target/lib ] && [ -z "$(find pom.xml src -newer "$jar" -print -quit)" ]; then
  exit 0
fi
exec mvn -q -B -DskipTests package
