#!/usr/bin/env bash
# Runs a lab probe on the GPU machine with the carried library and FA3: LD_LIBRARY_PATH from
# .carry (and its fallback/ libraries the machine lacks), FA3's wheel (.whl/) installed once into
# /tmp/site (kept while the machine stays warm), then the command given.
#   bash lab/probes/with_fa3.sh python3 lab/probes/tile_cost.py --lib .carry/libfp8attn.so --out "$OUT"
set -u
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
source lab/probes/carry.sh
carry_fa3
"$@"
