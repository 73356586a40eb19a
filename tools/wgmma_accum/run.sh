#!/usr/bin/env bash
# Builds and runs the FP8 wgmma accumulation microbenchmark on an sm_90 GPU (< 1 minute in all),
# writing the measured rule to ${OUT:-results}/wgmma-accum.json (with command, commit, machine,
# date). Exit status: the benchmark's (0 only when its layout and exact-sum self-checks pass).
#
#   tools/wgmma_accum/run.sh               # on the GPU machine
#   tools/wgmma_accum/run.sh --build-only  # here: nvcc only, the binary into .carry/
#   python3 tools/wgmma_accum/rule.py results/wgmma-accum.json   # the model's scheme keys
set -euo pipefail
cd "$(dirname "$0")/../.."
out_dir=${OUT:-results}
mkdir -p "$out_dir" build-wgmma-accum
# Built here, or carried prebuilt as .carry/wgmma_accum (tools/wgmma_accum/run.sh --build-only
# on the development machine copies it there).
bin=build-wgmma-accum/wgmma_accum
if [[ ${1:-} == --build-only || ! -x .carry/wgmma_accum ]]; then
  nvcc -std=c++20 -O2 -gencode=arch=compute_90a,code=sm_90a -I src -o "$bin" tools/wgmma_accum/wgmma_accum.cu
  if [[ ${1:-} == --build-only ]]; then
    mkdir -p .carry && cp "$bin" .carry/wgmma_accum && echo "built .carry/wgmma_accum"
    exit 0
  fi
else
  bin=.carry/wgmma_accum
fi
rc=0
"$bin" --out build-wgmma-accum/raw.json || rc=$?
python3 - "$out_dir/wgmma-accum.json" build-wgmma-accum/raw.json "$rc" <<'PY'
import datetime, json, platform, subprocess, sys
out, raw, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    doc = json.load(open(raw))
except Exception as e:  # a failed run is reported as failed
    doc = {"error": f"no output: {e}"}
git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True).stdout.strip()
doc["provenance"] = {"command": "tools/wgmma_accum/run.sh", "commit": git("rev-parse", "HEAD"),
                     "dirty": bool(git("status", "--porcelain", "--", "tools/wgmma_accum")),
                     "machine": platform.node(), "exit_status": rc,
                     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
json.dump(doc, open(out, "w"), indent=1)
print(f"wrote {out} (exit status {rc})")
PY
exit $rc
