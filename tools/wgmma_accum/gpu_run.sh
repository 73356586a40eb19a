#!/usr/bin/env bash
# One GPU call for issue 18's measurements (~2 minutes on the H200): the FP8 wgmma accumulation
# microbenchmark, then FA3 FP8 and fp8attn's E4M3-P kernel on the carried capture pack.
# Needs: nvcc, torch, .carry/libfp8attn.so (scripts/stage_gpu.sh), .carry/captures
# (tools/capture/pack.py), .whl/ (the fa3-fwd wheel). Writes $OUT/wgmma-accum.json and
# $OUT/fa3-captured.json; afterwards, on the CPU machine:
#   python3 tools/wgmma_accum/compare.py --gpu <results>/fa3-captured.json --rule <results>/wgmma-accum.json
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-results}
mkdir -p "$OUT"
rc=0
timeout 300 tools/wgmma_accum/run.sh || rc=$?
echo "wgmma_accum: exit $rc"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
rc2=0
timeout 300 python3 tools/wgmma_accum/gpu_fa3.py --out "$OUT/fa3-captured.json" || rc2=$?
echo "gpu_fa3: exit $rc2"
exit $(( rc != 0 ? rc : rc2 ))
