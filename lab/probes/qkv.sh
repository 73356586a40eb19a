#!/usr/bin/env bash
# Probe of fp8attn_quantize_qkv (Q's tiles in the fused K/V launch): the pre-pass byte tests and
# the bandwidth bench, whose records time the end-to-end pre-pass (gbps) and the two separate
# calls (split_gbps) in the same run. Run on the GPU machine with carry [".carry"] after
# NO_CAPTURES=1 scripts/stage_gpu.sh.
set -u
cd "$(dirname "$0")/../.."
. lab/probes/lib.sh
probe_init
PREPASS_S=${PREPASS_S:-75} probe_prepass "prepass |end_to_end b=2 s=8192|FAILED|skipped"
