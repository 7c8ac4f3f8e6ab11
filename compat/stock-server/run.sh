#!/usr/bin/env bash
# Runs the stock Spring Eureka server in the foreground on 127.0.0.1:$PORT (default 8762).
# Env: PORT, EUREKA_HOSTNAME (default localhost), PEER_MODE (true: register with and fetch from PEER_URL),
# PEER_URL (defaultZone, e.g. http://127.0.0.1:8761/eureka/), APP_NAME (default eureka-server).
# Extra arguments are passed to Spring (e.g. --logging.level.com.netflix.eureka=DEBUG).
# STOCK_LINE=5 runs the 5.0.x build (target-5, see build.sh) instead of the 4.3.0 one.
set -euo pipefail
cd "$(dirname "$0")"
# C1 JIT and the serial GC start a Spring app noticeably faster on 2 shared cores.
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx384m ${JAVA_OPTS:-} -jar "$([ "${STOCK_LINE:-4}" = 5 ] && echo target-5 || echo target)/stock-server.jar" "$@"
