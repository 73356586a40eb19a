#!/usr/bin/env bash
# A pre-pass candidate built in another worktree (.carry/pp/: its library and pre-pass tests):
# bytes against the mirror, its bandwidth, and the carried main library's beside it.
set -u
[ -e ${PP_WORKTREE:-/work/pp5-wt}/data ] || { mkdir -p ${PP_WORKTREE:-/work/pp5-wt} && ln -sfn "$PWD/data" ${PP_WORKTREE:-/work/pp5-wt}/data; }
echo "pre-pass candidate $(cat .carry/pp/COMMIT)"
export LD_LIBRARY_PATH=$PWD/.carry/pp:$PWD/.carry:${LD_LIBRARY_PATH:-}
for x in .carry/fallback/*/; do LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/$x; done
for t in test_quant test_quant_attention; do timeout 120 .carry/pp/$t 2>&1 | grep -E "OK \]|FAILED|SKIPPED|PASSED"; echo "$t rc=${PIPESTATUS[0]}"; done
FP8ATTN_PREPASS_BENCH_SECONDS=45 timeout 120 python3 bench/bench_prepass.py --lib .carry/pp/libfp8attn.so --out "$OUT/candidate-prepass.json" 2>&1 | grep -E "prepass |end_to_end b=2 s=8192"
echo "== baseline library (main cee67ef) in the same call"
FP8ATTN_PREPASS_BENCH_SECONDS=30 timeout 120 python3 bench/bench_prepass.py --lib .carry/libfp8attn.so --out "$OUT/main-prepass.json" 2>&1 | grep -E "prepass smooth_kv_hadamard_khead   v2 b=2 s=8192 h=32/32|prepass smooth_kv_khead            v2 b=2 s=8192 h=32/32"
