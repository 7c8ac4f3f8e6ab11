#!/usr/bin/env bash
# Builds target/stock-server.jar (Boot 3.5.7, Spring Cloud 2025.0.0). Idempotent: skips Maven when the jar
# is newer than every source. ~/.m2 is the cache.
set -euo pipefail
cd "$(dirname "$0")"
jar=target/stock-server.jar
if [ -f "$jar" ] && [ -z "$(find pom.xml src -newer "$jar" -print -quit)" ]; then
  exit 0
fi
exec mvn -q -B -DskipTests package
