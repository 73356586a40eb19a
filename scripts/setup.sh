#!/usr/bin/env bash
# Installs what the build, the tests and the tooling need (Debian 12 + PyPI), pinned.
# Needs root (apt). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null 2>&1; then
  need=()
  for p in cmake g++ libgtest-dev libomp-dev libopenblas-dev nlohmann-json3-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  if ((${#need[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
fi
python3 -m pip install -q -r requirements.txt
echo "setup: done"
