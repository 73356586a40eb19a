#!/usr/bin/env bash
# The README's main job on the bundled default.
#   Without an sm_90 GPU: the CPU numerics model (fp8attn-eval) on the bundled captured
#     activations (data/fixtures: Qwen2.5-Coder-1.5B layers 0, 15, 27; one KV head and one query
#     head, 2048 tokens), causal and not: BF16-flash (the FA3-BF16 yardstick), FA3-style FP8, our
#     kernel's numerics with E4M3 P and with P hi+lo, each against the three references.
#     Writes results/run-cpu-model.json and prints the table.
#   With an sm_90 GPU (nvidia-smi reports compute capability 9.0) and PyTorch: the GPU tests and
#     the harness (speed against PyTorch SDPA BF16, accuracy) through scripts/gpu_session.sh,
#     on what scripts/stage_gpu.sh builds.
set -euo pipefail
cd "$(dirname "$0")/.."
has_sm90() {
  command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -q '^9\.0'
}
if has_sm90; then
  echo "run: sm_90 GPU found: build, GPU tests and benchmark"
  scripts/stage_gpu.sh
  mkdir -p results/run-gpu
  OUT="$PWD/results/run-gpu" scripts/gpu_session.sh
  exit $?
fi
echo "run: no sm_90 GPU: the CPU numerics model on the bundled captured activations"
scripts/build.sh >/dev/null
EVAL=build/tools/eval/fp8attn-eval
data=$(ls data/fixtures/*.safetensors | paste -sd, -)
"$EVAL" --data "$data" --mask both \
  --scheme bf16-flash,fa3-fp8,fa3-fp8-rot,fp8attn-default,fp8attn-kernel,fp8attn-kernel-hilo \
  --json results/run-cpu-model.json
echo "run: wrote results/run-cpu-model.json"
