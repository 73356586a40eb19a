#!/usr/bin/env bash
# The session's last GPU call: the full session (scripts/gpu_session.sh) on the staged build,
# then a pre-pass candidate from another worktree (.carry/pp/, PP_WORKTREE):
# lab/probes/prepass_candidate.sh, into $OUT/pp.log.
set -u
[ -e /work/main/data ] || { mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data; }
SANITIZER_FILTER='Small/AgainstModelMirror.ElementWise/b1_sq257_sk129_h2_hkv1_full:Small/AgainstModelMirror.ElementWise/b1_sq129_sk257_h2_hkv1_causal_fp16:Small/AgainstModelMirror.ElementWise/b2_sq150_sk300_h4_hkv1_full_hilo' \
  BUDGET_S=${BUDGET_S:-420} HARNESS_S=${HARNESS_S:-220} scripts/gpu_session.sh > /dev/null 2>&1
echo "gpu_session rc=$?"; grep -E "gpu_session:|HARNESS FAILED" "$OUT/session.log"
if [[ -x .carry/pp/test_quant ]]; then
  bash lab/probes/prepass_candidate.sh > "$OUT/pp.log" 2>&1
  cat "$OUT/pp.log"
fi
