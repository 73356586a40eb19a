#!/usr/bin/env bash
# After the review refactors: the pre-pass byte tests, lab/probes/time_prepass.py (the
# Q pass's step/step_pair now share refill and scale_of; compare with the probes before), and a
# short bench_prepass.py run through speed.time_ms_alternating (its seed-shape end-to-end lines).
# GPU machine, carry [".carry"] after NO_CAPTURES=1 scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
probe_quant_tests default
timeout 200 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$(cat .carry/COMMIT).json"
FP8ATTN_PREPASS_BENCH_SECONDS=25 timeout 150 python3 bench/bench_prepass.py --lib .carry/libfp8attn.so \
  --out "${OUT:-.}/bench-prepass-$(cat .carry/COMMIT).json" 2>&1 | grep -E "end_to_end b=2 s=8192 h=32/32|FAILED|Error"
