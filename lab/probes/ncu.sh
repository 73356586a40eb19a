#!/usr/bin/env bash
# Nsight Compute on one launch of the default kernel at the seed shape (causal and not): speed of
# light, scheduler and warp-state statistics (the stall reasons), instruction mix. CSVs to $OUT.
# Runs on the GPU machine; .carry from lab/probes/stage.sh (or stage_gpu + the probe).
source "$(dirname "$0")/lib.sh"
probe_init
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[[ -x "$NCU" ]] || { echo "ncu not found"; exit 1; }
for c in 0 1; do
  timeout 150 "$NCU" -k regex:attention_fwd --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats \
    --section InstructionStats --section ComputeWorkloadAnalysis --section Occupancy \
    --csv --page details "$P" 2 8192 8192 32 32 $c 3 4 0 > "${OUT:-.}/ncu-seed-causal$c.csv" 2> "${OUT:-.}/ncu-seed-causal$c.err"
  echo "causal=$c rc=$? $(wc -l < "${OUT:-.}/ncu-seed-causal$c.csv") lines"
  grep -E "Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Stall|Duration|SM Frequency|Compute \(SM\) Throughput" \
    "${OUT:-.}/ncu-seed-causal$c.csv" | cut -d, -f12- | head -40
done
