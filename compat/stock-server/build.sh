#!/usr/bin/env bash
# Builds the stock server jar. STOCK_LINE=4 (default): target/stock-server.jar from pom.xml (Boot 3.5.7,
# Spring Cloud 2025.0.0, SCN 4.3.0, eureka 2.0.4). STOCK_LINE=5: target-5/stock-server.jar from pom-5.xml
# (Boot 4.0.7, Spring Cloud 2025.1.4, SCN 5.0.3, eureka 2.0.6). Same sources. Idempotent: skips Maven when the
# jar is newer than every source. ~/.m2 is the cache.
set -euo pipefail
cd "$(dirname "$0")"
pom=pom.xml jar=target/stock-server.jar
if [ "${STOCK_LINE:-4}" = 5 ]; then
  pom=pom-5.xml jar=target-5/stock-server.jar
fi
if [ -f "$jar" ] && [ -z "$(find "$pom" src -newer "$jar" -print -quit)" ]; then
  exit 0
fi
exec mvn -q -B -DskipTests -f "$pom" package
