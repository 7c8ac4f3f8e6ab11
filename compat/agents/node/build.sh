#!/usr/bin/env bash
# Installs eureka-js-client (pinned in package-lock.json) with `npm ci`. Idempotent: skipped when node_modules
# is newer than the lock file.
set -euo pipefail
cd "$(dirname "$0")"
if [[ -f node_modules/.package-lock.json && node_modules/.package-lock.json -nt package-lock.json \
      && -d node_modules/eureka-js-client ]]; then
  echo "node agent: up to date"
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
node -e "require('eureka-js-client')"
echo "node agent: built"
