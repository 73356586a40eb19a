#!/usr/bin/env bash
# (rows::Masks and its knobs were removed after this probe: no gain.) Sign masks of the rotated
# rows (rows::Masks): the pre-pass byte tests under the probe knobs
# FP8ATTN_Q_MASKS=once|table and FP8ATTN_K_MASKS=once, then lab/probes/time_prepass.py.
# GPU machine, carry [".carry"] after NO_CAPTURES=1 scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
[ -e /work/main/data ] || { mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data; }
c=$(cat .carry/COMMIT)
for envs in "FP8ATTN_Q_MASKS=once FP8ATTN_K_MASKS=once" "FP8ATTN_Q_MASKS=table"; do
  for t in test_quant test_quant_attention; do
    log="${OUT:-.}/$t-${envs// /_}-$c.log"
    env $envs timeout 120 .carry/tests/$t > "$log" 2>&1
    echo "[$envs] $t rc=$? $(grep -E "PASSED|FAILED" "$log" | tail -n 2 | tr '\n' ' ')"
  done
done
timeout 300 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$c.json"
