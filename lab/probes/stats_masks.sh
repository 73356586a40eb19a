#!/usr/bin/env bash
# (Reverted after this probe: no gain.) The statistics pass with each lane's sign masks held in registers (read once) instead of read
# from the table for every key: the byte tests, then lab/probes/time_prepass.py (compare
# kv_only with the probes before it). GPU machine, carry [".carry"] after NO_CAPTURES=1
# scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
probe_quant_tests default
timeout 200 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$(cat .carry/COMMIT).json"
