#!/usr/bin/env bash
# Nsight Compute on the pre-pass kernels at the seed shape (lab/probes/ncu_prepass.py:
# quantize_qkv's launches, the separate calls' launches, the unrotated separate calls), at the
# GPU's own clocks: speed of light, memory workload, scheduler and warp-state statistics. CSV to
# $OUT; the lines that compare the launches printed. GPU machine, carry [".carry"].
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[[ -x "$NCU" ]] || { echo "ncu not found"; exit 1; }
csv=${OUT:-.}/ncu-prepass-$(cat .carry/COMMIT).csv
timeout 300 "$NCU" --profile-from-start off --clock-control none \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
  --section WarpStateStats --section LaunchStats --section Occupancy \
  --metrics smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
  --csv --page details python3 lab/probes/ncu_prepass.py .carry/libfp8attn.so \
  > "$csv" 2> "${csv%.csv}.err"
echo "ncu rc=$? $(wc -l < "$csv") lines"
python3 - "$csv" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("==")))
keys = ["Duration", "DRAM Throughput", "Memory Throughput", "L2 Hit Rate", "Compute (SM) Throughput",
        "Issued Warp Per Scheduler", "No Eligible", "Warp Cycles Per Issued Instruction",
        "Achieved Occupancy", "Registers Per Thread", "SM Frequency", "DRAM Frequency"]
by = collections.OrderedDict()
for r in rows:
    kid = (r["ID"], r["Kernel Name"][:60])
    if r["Metric Name"] in keys or "stalled" in r["Metric Name"] or r["Metric Name"].startswith(("dram__bytes", "lts__t_sector_hit")):
        by.setdefault(kid, {})[r["Metric Name"]] = f'{r["Metric Value"]} {r["Metric Unit"]}'
for (i, name), m in by.items():
    print(i, name)
    print("   ", "; ".join(f"{k}: {m[k]}" for k in keys if k in m))
    print("   ", "; ".join(f"{k.replace('smsp__average_warps_issue_stalled_', '').replace('_per_issue_active.ratio', '')}: {v.split()[0]}" for k, v in m.items() if k not in keys))
PY
echo "== timing (lab/probes/time_prepass.py)"
timeout 120 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "${OUT:-.}/time-prepass-$(cat .carry/COMMIT).json"
