#!/usr/bin/env bash
# After the full session of 497dbd9: the pre-pass with launch chaining and the Q-pass fix
# (bit-exactness tests, bandwidth), run-to-run spread of the causal seed shape (and the head-major
# tile order beside the section order), and the epilogue's cost (ablate-noepilogue, now valid).
source "$(dirname "$0")/lib.sh"
probe_init
echo "== pre-pass: bit-exactness tests, then bandwidth"
probe_prepass "prepass |end_to_end"
echo "== speed (b=2 s=8192 h=32)"
for c1 in 1 0; do
  for rep in 1 2 3; do echo "[default c=$c1 #$rep] $(timeout 60 $P 2 8192 8192 32 32 $c1 100 4 0 2>&1)"; done
  echo "[ablate-noepilogue c=$c1] $(FP8ATTN_VARIANT=ablate-noepilogue timeout 60 $P 2 8192 8192 32 32 $c1 100 4 0 2>&1)"
  probe_sdpa $c1
done
for rep in 1 2; do echo "[sched=head c=1 #$rep] $(FP8ATTN_SCHED=head timeout 60 $P 2 8192 8192 32 32 1 100 4 0 2>&1)"; done
