#!/usr/bin/env bash
# (Its probe knob was removed after this probe.) The per-token Q pass with both rows of an iteration side by side (rows_tile.cuh step_pair) against
# one row after the other (probe knob FP8ATTN_Q_PAIR=0): byte tests under both, then
# tools/kernel_probe/time_prepass.py. GPU machine, carry [".carry"] after NO_CAPTURES=1
# scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source tools/kernel_probe/lib.sh
probe_init
probe_quant_tests pair
probe_quant_tests rowwise FP8ATTN_Q_PAIR=0
timeout 200 python3 tools/kernel_probe/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$(cat .carry/COMMIT).json"
