#!/usr/bin/env bash
# The README's main job on the bundled default (after scripts/setup.sh).
#   Without an sm_90 GPU: the CPU numerics model (fp8attn-eval) on the bundled captured
#     activations (data/fixtures: Qwen2.5-Coder-1.5B layers 0, 15, 27; one KV head and one query
#     head, 2048 tokens), causal and not: BF16-flash (the FA3-BF16 yardstick), FA3-style FP8, the
#     library's default (pre-pass + kernel) and the kernel's numerics, each against the exact
#     references. Builds only the CPU model and fp8attn-eval (not the sm_90a kernels), prints a
#     line per stage with the time elapsed, writes results/run-cpu-model.json (every record) and
#     results/run-cpu-model.txt (the full table), and ends with a summary written from the JSON
#     (scripts/run_summary.py).
#   With an sm_90 GPU (nvidia-smi reports compute capability 9.0) and PyTorch: the GPU tests and
#     the harness (speed against PyTorch SDPA BF16, accuracy) through scripts/gpu_session.sh,
#     on what scripts/stage_gpu.sh builds.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR

stage() { printf 'run [%2d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
# Each line of stdin as a stage line (SECONDS carries into the pipeline's subshell).
stages() { while IFS= read -r line; do stage "$line"; done; }

has_sm90() {
  command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | grep -q '^9\.0'
}
if has_sm90; then
  stage "sm_90 GPU found: build, GPU tests and benchmark"
  scripts/stage_gpu.sh
  mkdir -p results/run-gpu
  stage "GPU session (scripts/gpu_session.sh)"
  rc=0
  OUT="$PWD/results/run-gpu" scripts/gpu_session.sh || rc=$?
  stage "done (exit $rc): results/run-gpu/"
  exit $rc
fi

JSON=results/run-cpu-model.json
TABLE=results/run-cpu-model.txt
LOG=$BUILD_DIR/run.log
mkdir -p "$BUILD_DIR" results
: > "$LOG"
stage "no sm_90 GPU: the CPU numerics model on the bundled captured activations"
stage "build: the CPU model and fp8attn-eval only (log: $LOG)"
# One line per compiled file, as the build goes; the whole output in the log.
if ! scripts/build.sh fp8attn-eval 2>&1 | tee -a "$LOG" |
  sed -un -e 's/^build: \(.*\)/  \1/p' \
    -e 's/^\[ *\([0-9]*\)%\] Building CXX object .*\/\([^/]*\)\.o$/  build \1%: \2/p' | stages; then
  stage "build FAILED; the end of $LOG:" >&2
  tail -30 "$LOG" >&2
  exit 1
fi
stage "build: done"

# The fixtures at the kernel's head dim (128): the kernel's schemes take no other. (SmolLM2's
# head-dim-64 fixtures serve the CPU tests and the model study, which pad them to 128.)
data=$(python3 - <<'PY'
import glob, json, struct
keep = []
for f in sorted(glob.glob("data/fixtures/*.safetensors")):
    with open(f, "rb") as fh:
        header = json.loads(fh.read(struct.unpack("<Q", fh.read(8))[0]))
    if header["q"]["shape"][-1] == 128:
        keep.append(f)
print(",".join(keep))
PY
)
schemes=bf16-flash,fa3-fp8,fa3-fp8-rot,fp8attn-default,fp8attn-kernel,fp8attn-kernel-hilo
stage "evaluate: $(tr ',' '\n' <<< "$data" | wc -l) captured layers (head dim 128) x (non-causal, causal) x 6 schemes"
# Progress: one line per dataset and mask (the exact reference), the rest in the log.
if ! "$BUILD_DIR/tools/eval/fp8attn-eval" --data "$data" --mask both --scheme "$schemes" \
  --json "$JSON" 2> >(tee -a "$LOG" | sed -un 's/^\[eval\] \(.*\): exact FP64 reference .*/  evaluate: \1/p' | stages) \
  > "$TABLE"; then
  stage "evaluate FAILED; the end of $LOG:" >&2
  sleep 1
  tail -30 "$LOG" >&2
  exit 1
fi
sleep 0.2  # let the progress filter print its last line before the summary
stage "evaluate: done ($JSON: every record; $TABLE: the full table)"
python3 scripts/run_summary.py "$JSON"
