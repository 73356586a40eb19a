#!/usr/bin/env bash
# The session's last GPU call: the full session (scripts/gpu_session.sh) on the staged build,
# then a pre-pass candidate from another worktree (.carry/pp/: its library and pre-pass tests):
# bytes against the mirror, then its bandwidth, into $OUT/pp.log and $OUT/pp-prepass.json.
set -u
[ -e /work/main/data ] || { mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data; }
SANITIZER_FILTER='Small/AgainstModelMirror.ElementWise/b1_sq257_sk129_h2_hkv1_full:Small/AgainstModelMirror.ElementWise/b1_sq129_sk257_h2_hkv1_causal_fp16:Small/AgainstModelMirror.ElementWise/b2_sq150_sk300_h4_hkv1_full_hilo' \
  BUDGET_S=${BUDGET_S:-420} HARNESS_S=${HARNESS_S:-220} scripts/gpu_session.sh > /dev/null 2>&1
echo "gpu_session rc=$?"; grep -E "gpu_session:|HARNESS FAILED" "$OUT/session.log"
if [[ -x .carry/pp/test_quant ]]; then
  [ -e /work/pp-wt/data ] || { mkdir -p /work/pp-wt && ln -sfn "$PWD/data" /work/pp-wt/data; }
  {
    echo "pre-pass candidate $(cat .carry/pp/COMMIT 2>/dev/null)"
    export LD_LIBRARY_PATH=$PWD/.carry/pp:$PWD/.carry:${LD_LIBRARY_PATH:-}
    for x in .carry/fallback/*/; do LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/$x; done
    for t in test_quant test_quant_attention; do
      timeout 120 .carry/pp/$t 2>&1 | grep -E "OK \]|FAILED|SKIPPED|PASSED"; echo "$t rc=${PIPESTATUS[0]}"
    done
    FP8ATTN_PREPASS_BENCH_SECONDS=45 timeout 120 python3 bench/bench_prepass.py --lib .carry/pp/libfp8attn.so \
      --out "$OUT/pp-prepass.json" 2>&1 | grep -E "prepass |end_to_end b=2 s=8192"
  } > "$OUT/pp.log" 2>&1
  cat "$OUT/pp.log"
fi
