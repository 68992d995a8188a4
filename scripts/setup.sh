#!/usr/bin/env bash
# Set up mara-bench in ./.venv from scratch: the CPU torch wheel first (so nothing pulls a CUDA build), then the
# package. `--test` adds the test extras and the system packages the tests drive (Chromium, PostgreSQL) when root.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0
if [[ "${1:-}" == "--test" ]]; then
  .venv/bin/python -m pip install --quiet -e '.[test]'
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends chromium postgresql >/dev/null
  fi
else
  .venv/bin/python -m pip install --quiet -e .
fi
