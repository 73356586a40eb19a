#!/usr/bin/env bash
# A pre-pass probe knob against the default: the byte tests under both, then
# lab/probes/time_prepass.py (whose CONFIGS name the knob's timings).
#   bash lab/probes/knob_probe.sh TAG VAR=value [VAR=value ...]
# (The paired-rows probes of 9fe9f8d and 3d2df5b ran this as qpair.sh / kpair.sh, in git history.)
# GPU machine, carry [".carry"] after NO_CAPTURES=1 scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
tag=$1
shift
probe_init
probe_quant_tests default
probe_quant_tests "$tag" "$@"
timeout 200 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$(cat .carry/COMMIT).json"
