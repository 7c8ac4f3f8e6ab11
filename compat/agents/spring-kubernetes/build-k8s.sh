#!/usr/bin/env bash
# Builds target/agent.jar. Named build-k8s.sh, not build.sh: this agent is not a Eureka client (compat/suite takes
# every agent with a build.sh for one). Idempotent: skips Maven when the jar is newer than the POM and every source.
set -euo pipefail
cd "$(dirname "$0")"
jar=target/agent.jar
if [ -f "$jar" ] && [ -z "$(find pom.xml src -newer "$jar" -print -quit)" ]; then
  exit 0
fi
exec mvn -q -B -DskipTests package
