#!/usr/bin/env bash
# After the full session of 497dbd9: the pre-pass with launch chaining and the Q-pass fix
# (bit-exactness tests, bandwidth), run-to-run spread of the causal seed shape (and the head-major
# tile order beside the section order), and the epilogue's cost (ablate-noepilogue, now valid).
source "$(dirname "$0")/lib.sh"
probe_init
echo "== pre-pass: bit-exactness tests, then bandwidth"
[ -e /work/main/data ] || { mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data; }
c=$(cat .carry/COMMIT); d=results/probe; mkdir -p $d
for t in test_quant test_quant_attention; do
  timeout 120 .carry/tests/$t > $d/2026-11-30-h200-$c-$t.log 2>&1; echo "$t rc=$?"
  grep -E "PASSED|FAILED|SKIPPED" $d/2026-11-30-h200-$c-$t.log | tail -n 4
done
FP8ATTN_PREPASS_BENCH_SECONDS=${PREPASS_S:-60} timeout 150 python3 bench/bench_prepass.py --lib .carry/libfp8attn.so \
  --out $d/2026-11-30-h200-$c-prepass.json > $d/2026-11-30-h200-$c-prepass.log 2>&1; echo "bench rc=$?"
grep -E "prepass |end_to_end" $d/2026-11-30-h200-$c-prepass.log | head -30
echo "== speed (b=2 s=8192 h=32)"
for c1 in 1 0; do
  for rep in 1 2 3; do echo "[default c=$c1 #$rep] $(timeout 60 $P 2 8192 8192 32 32 $c1 100 4 0 2>&1)"; done
  echo "[ablate-noepilogue c=$c1] $(FP8ATTN_VARIANT=ablate-noepilogue timeout 60 $P 2 8192 8192 32 32 $c1 100 4 0 2>&1)"
  probe_sdpa $c1
done
for rep in 1 2; do echo "[sched=head c=1 #$rep] $(FP8ATTN_SCHED=head timeout 60 $P 2 8192 8192 32 32 1 100 4 0 2>&1)"; done
[ -n "${OUT:-}" ] && cp $d/2026-11-30-h200-$c-* "$OUT"/ 2>/dev/null
true
