#!/usr/bin/env bash
# (Its probe knob was removed after this probe.) The held K tiles' rows two side by side (probe knob FP8ATTN_K_PAIR=1, rows_tile.cuh step_pair)
# against one after the other: byte tests under both, then tools/kernel_probe/time_prepass.py.
# GPU machine, carry [".carry"] after NO_CAPTURES=1 scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source tools/kernel_probe/lib.sh
probe_init
probe_quant_tests default
probe_quant_tests kpair FP8ATTN_K_PAIR=1
timeout 200 python3 tools/kernel_probe/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$(cat .carry/COMMIT).json"
