# shellcheck shell=bash
# Sourced by the other scripts (from the repository root): puts .venv/ (scripts/setup.sh) first
# on PATH, so that python3 and pytest are the venv's.
if [[ ! -x .venv/bin/python ]]; then
  echo "$(basename "$0"): no .venv/ here: run scripts/setup.sh first" >&2
  exit 1
fi
export VIRTUAL_ENV=$PWD/.venv
export PATH=$VIRTUAL_ENV/bin:$PATH
