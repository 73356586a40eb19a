#!/usr/bin/env bash
# Static SASS of the pre-pass kernels at a commit (no GPU): compiles src/quant/{kv_stats,
# quantize_q,quantize_kv}.cu for sm_90a from `git archive REV` and prints, per kernel, its
# registers/spills and the opcode histogram of its loops (lab/sass/loops.py).
#   lab/sass/prepass_counts.sh [REV]   (default: the working tree)
set -euo pipefail
cd "$(dirname "$0")/../.."
REV=${1:-}
source lab/sass/prepass_lib.sh
prepass_stage "$REV" "pre-pass SASS" include src tools
# Lanes per row of the Q/K row pass and of the statistics pass (lab/sass/prepass_bw_predict.py).
lanes() { sed -n "s/^inline constexpr int $1 = \([0-9]*\);.*/\1/p" "$tmp/src/quant/lanes.h"; }
echo "# lanes: rows $(lanes kRowLanes), stats $(lanes kStatsLanes)"
for f in kv_stats quantize_q quantize_kv; do
  prepass_sass "$tmp" "$f"
  python3 - "$tmp/$f.sass" "$tmp/$f.ptxas" "$PWD/lab/sass/loops.py" <<'PY'
import re, subprocess, sys
sass, ptxas, loops = sys.argv[1:4]
res = {}
cur = None
for ln in open(ptxas):
    m = re.search(r"Compiling entry function '(\S+)'", ln) or re.search(r"Function properties for (\S+)", ln)
    if m:
        cur = m.group(1)
        continue
    if cur and ("registers" in ln or "spill" in ln):
        res.setdefault(cur, []).append(ln.strip().replace("ptxas info    : ", ""))
parts = re.split(r"\n\s+Function : (\S+)\n", open(sass).read())
for i in range(1, len(parts), 2):
    name, body = parts[i], parts[i + 1]
    short = re.sub(r"_ZN7fp8attn5quant\d+_GLOBAL__N__\w+?_\d+_\w+?_cu_\w{8}\d+", "", name)
    n = len(re.findall(r"/\*[0-9a-f]{4,}\*/\s+[^;]*;", body))
    print(f"== {short}: {n} instructions")
    for r in res.get(name, []):
        print("   " + r)
    path = sass + ".one"
    open(path, "w").write(body)
    sys.stdout.flush()
    subprocess.run([sys.executable, loops, path, "--min", "300"], check=True)
PY
done
