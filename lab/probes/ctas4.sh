#!/usr/bin/env bash
# (The knobs were removed after this probe: no gain.) The rotated Q pass and the K/V pass at 4 CTAs per SM (128 registers, a few spilled) instead of
# 3 (168): probe knobs FP8ATTN_Q_CTAS=4, FP8ATTN_KV_CTAS=4. The byte tests with both, then
# lab/probes/time_prepass.py. GPU machine, carry [".carry"] after NO_CAPTURES=1
# scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
probe_quant_tests ctas4 FP8ATTN_Q_CTAS=4 FP8ATTN_KV_CTAS=4
timeout 200 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$(cat .carry/COMMIT).json"
