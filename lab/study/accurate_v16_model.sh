#!/usr/bin/env bash
# The CPU model's prediction for the accurate mode with FP16 V^T (issue 14 item 1): kernel-only
# and end-to-end error of fp8attn-accurate (FP16 P, V^T in FP16: V never rounded to E4M3) beside
# fp8attn-accurate-e4m3v (FP16 P, E4M3 V^T: the converter kernel), fp8attn-default, fa3-fp8 and
# bf16-flash, on the bundled head-dim-128 captures and the Gaussian / outlier synthetic sets,
# both masks. Writes results/model-accurate-v16-<commit>.{json,txt} (the txt starts with the
# command, commit, machine and date). No GPU.
#   lab/study/accurate_v16_model.sh [BUILD_DIR]   (default build-v16; needs fp8attn-eval built)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-v16}
EVAL=$BUILD/tools/eval/fp8attn-eval
COMMIT=$(git rev-parse --short=12 HEAD)
OUT=results/model-accurate-v16-$COMMIT
SCHEMES=bf16-flash,fa3-fp8,fp8attn-default,fp8attn-accurate,fp8attn-accurate-e4m3v
DATA=data/fixtures/qwen2.5-coder-1.5b-layer00.safetensors,data/fixtures/qwen2.5-coder-1.5b-layer15.safetensors,data/fixtures/qwen2.5-coder-1.5b-layer27.safetensors
{
  echo "# command: $0 $*"
  echo "# commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src model include || echo ' (dirty)')"
  echo "# machine: $(uname -n) $(nproc) cores (CPU model, no GPU)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "## captures (head dim 128), both masks"
  "$EVAL" --data "$DATA" --mask both --scheme "$SCHEMES" --json "$OUT-captures.json" 2>/dev/null
  echo "## synthetic gaussian, outlier: b1 s2048 h4 hkv4, both masks"
  "$EVAL" --synthetic gaussian,outlier --seqlen 2048 --heads 4 --mask both --scheme "$SCHEMES" \
    --json "$OUT-synthetic.json" 2>/dev/null
} > "$OUT.txt"
echo "wrote $OUT.txt $OUT-captures.json $OUT-synthetic.json"
