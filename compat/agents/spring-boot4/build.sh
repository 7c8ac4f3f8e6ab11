#!/usr/bin/env bash
# Builds target/agent.jar from ../spring-boot3/src (shared source). Idempotent: skips Maven when the jar is
# newer than the POM and every shared source.
set -euo pipefail
cd "$(dirname "$0")"
jar=target/agent.jar
if [ -f "$jar" ] && [ -z "$(find pom.xml ../spring-boot3/src -newer "$jar" -print -quit)" ]; then
  exit 0
fi
exec mvn -q -B -DskipTests package
