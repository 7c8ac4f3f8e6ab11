#!/usr/bin/env bash
# Builds the netflix-java agent: target/netflix-java-agent.jar + target/lib/*.jar (dependencies).
# Idempotent: skips Maven when the jar is newer than every source file and the pom.
set -euo pipefail
cd "$(dirname "$0")"
jar=target/netflix-java-agent.jar
if [[ -f $jar && -d target/lib && -z "$(find pom.xml src -newer "$jar" -type f 2>/dev/null | head -1)" ]]; then
  echo "netflix-java agent: up to date"
  exit 0
fi
mvn -q -B -DskipTests package
test -f "$jar"
echo "netflix-java agent: built $jar"
