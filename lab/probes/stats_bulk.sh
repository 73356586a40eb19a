#!/usr/bin/env bash
# (Removed after this probe: 2x slower.) The statistics pass with bulk copies into per-warp
# shared-memory rings (probe knob
# FP8ATTN_STATS=bulk): the pre-pass byte tests with it, compute-sanitizer memcheck on the random
# byte test with it, then lab/probes/time_prepass.py. GPU machine, carry [".carry"] after
# NO_CAPTURES=1 scripts/stage_gpu.sh.
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
c=$(cat .carry/COMMIT)
probe_quant_tests stats_bulk FP8ATTN_STATS=bulk
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
log="${OUT:-.}/memcheck-stats_bulk-$c.log"
FP8ATTN_STATS=bulk timeout 200 "$SAN" --tool memcheck --error-exitcode 17 .carry/tests/test_quant \
  --gtest_filter=QuantGpu.MatchesCpuMirrorOnRandomData > "$log" 2>&1
echo "memcheck rc=$? $(grep -E "ERROR SUMMARY|PASSED|FAILED" "$log" | tail -n 3 | tr '\n' ' ')"
timeout 200 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$c.json"
