#!/usr/bin/env bash
# Installs what the build, the tests and the tooling need; idempotent (a second run changes
# nothing and needs no network).
#   1. System packages through apt (Debian 12 "bookworm": the versions pinned below, its release
#      versions). Run as root, or as a user with sudo; nothing is asked for when all are present.
#      Other Debian/Ubuntu releases: the same packages, unpinned. Without apt: a check, and the
#      list of what is missing.
#   2. A Python virtual environment in the repository, .venv/ (git-ignored), with
#      requirements.txt installed (pinned). Not the system Python: Debian 12 refuses pip there
#      (PEP 668, externally-managed-environment). The venv sees the system's site-packages, so a
#      PyTorch installed for the machine's GPU stays usable; what requirements.txt pins wins.
# Writes nothing outside the repository (apt's own system install excepted): pip's cache is
# .cache/pip/.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

# package=Debian 12 version. git, ca-certificates: unpinned (security updates replace them).
PINNED=(
  "cmake=3.25.1-1"
  "make=4.3-4.1"
  "g++=4:12.2.0-3"
  "libgtest-dev=1.12.1-0.2"
  "libopenblas-dev=0.3.21+ds-4"
  "nlohmann-json3-dev=3.11.2-2"
  "python3-venv=3.11.2-1+b1"
)
UNPINNED=(git ca-certificates)

say() { echo "setup: $*"; }

is_bookworm() { [[ -r /etc/os-release ]] && grep -q '^VERSION_CODENAME=bookworm' /etc/os-release; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

apt_install() {
  local sudo=()
  if ((EUID != 0)); then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      say "missing packages: $*" >&2
      say "run this script as root, or install them: apt-get install $*" >&2
      exit 1
    fi
  fi
  say "apt-get install $*"
  "${sudo[@]}" apt-get update -qq
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; then
    # A Debian point release can replace a pinned version; the package itself still serves.
    say "WARNING: the pinned versions are not all available; installing unpinned" >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${@%%=*}"
  fi
}

system_packages() {
  if ! command -v apt-get >/dev/null 2>&1; then
    local missing=()
    for tool in cmake make g++ git python3; do
      command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    if ((${#missing[@]})); then
      say "no apt-get here; install: ${missing[*]}, GoogleTest, OpenBLAS, nlohmann-json 3," \
        "python3 venv" >&2
      exit 1
    fi
    say "no apt-get here: assuming GoogleTest, OpenBLAS and nlohmann-json are installed"
    return
  fi
  local need=() spec name
  for spec in "${PINNED[@]}" "${UNPINNED[@]}"; do
    name=${spec%%=*}
    if installed "$name"; then continue; fi
    if is_bookworm; then need+=("$spec"); else need+=("$name"); fi
  done
  if ((${#need[@]})); then
    is_bookworm || say "not Debian 12: installing unpinned"
    apt_install "${need[@]}"
  else
    say "system packages: all present"
  fi
}

python_env() {
  local venv=$REPO/.venv
  if [[ ! -x $venv/bin/python ]]; then
    say "creating the virtual environment .venv/"
    python3 -m venv --system-site-packages "$venv"
  fi
  export PIP_CACHE_DIR=$REPO/.cache/pip
  if "$venv/bin/python" - requirements.txt <<'EOF'
# Exit 0 when every pinned requirement is already installed at its version (no pip, no network).
import sys
from importlib import metadata
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, _, version = line.partition("==")
    try:
        if metadata.version(name.strip()) != version.strip():
            sys.exit(1)
    except metadata.PackageNotFoundError:
        sys.exit(1)
EOF
  then
    say "python packages: all present in .venv/"
  else
    say "pip install -r requirements.txt into .venv/"
    "$venv/bin/python" -m pip install -q -r requirements.txt
  fi
}

system_packages
python_env
say "done (.venv/: $("$REPO/.venv/bin/python" --version 2>&1))"
