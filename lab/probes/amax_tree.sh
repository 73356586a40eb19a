#!/usr/bin/env bash
# The Q pass's row amax as a tree (rows_tile.cuh row_amax): the pre-pass byte tests, then
# lab/probes/time_prepass.py; then lab/probes/causal_context.py with nvidia-smi
# sampling the SM clock and power. GPU machine, carry [".carry"] after NO_CAPTURES=1
# scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
c=$(cat .carry/COMMIT)
probe_quant_tests default
timeout 200 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$c.json"
probe_causal_context
