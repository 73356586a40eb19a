#!/usr/bin/env bash
# (The knob was removed after this probe: no gain.) The pre-pass byte tests with the default
# statistics pass and with its L2 prefetch (probe knob
# FP8ATTN_STATS_PREFETCH=8), then lab/probes/time_prepass.py. GPU machine, carry
# [".carry"] after NO_CAPTURES=1 scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
[ -e /work/main/data ] || { mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data; }
c=$(cat .carry/COMMIT)
for pf in 0 8; do
  for t in test_quant test_quant_attention; do
    FP8ATTN_STATS_PREFETCH=$pf timeout 120 .carry/tests/$t > "${OUT:-.}/$t-prefetch$pf-$c.log" 2>&1
    echo "prefetch=$pf $t rc=$? $(grep -E "PASSED|FAILED" "${OUT:-.}/$t-prefetch$pf-$c.log" | tail -n 2 | tr '\n' ' ')"
  done
done
timeout 200 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$c.json"
