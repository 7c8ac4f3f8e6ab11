#!/usr/bin/env bash
# Creates .venv under this folder and installs py-eureka-client (pinned in requirements.txt) from PyPI.
# Idempotent: skipped when the venv is newer than requirements.txt.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [[ -x .venv/bin/python && .venv/.installed -nt requirements.txt ]]; then
  echo "python agent: up to date"
  exit 0
fi
[[ -x .venv/bin/python ]] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/python -c "import py_eureka_client.eureka_client"
touch .venv/.installed
echo "python agent: built"
