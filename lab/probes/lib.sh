# Shared pieces of the kernel probe scripts (sourced, not run). They run on the GPU machine from
# the repo root with .carry/ from lab/probes/stage.sh (or scripts/stage_gpu.sh + the probe).
#   probe_init                 environment, commit, GPU and clocks
#   probe_check ENVS SHAPE...  correctness of each "b sq sk h h_kv causal" shape (kernel-only error
#                              against FP64 on the dequantized inputs; rc 0 = pass) under ENVS
#                              (space-separated VAR=value, may be empty); ROWS rows checked
#                              (default 32), P precision PP (default 0)
#   probe_speed ENVS CAUSAL [H_KV]  the seed shape b=2 s=8192 h=32, median of 100 runs
#   probe_sdpa CAUSAL          SDPA BF16 (cuDNN) at the seed shape in the same run
probe_init() {
  set -u
  export LD_LIBRARY_PATH=$PWD/.carry:${LD_LIBRARY_PATH:-}
  for dir in .carry/fallback/*/; do
    [[ -d "$dir" ]] || continue
    for lib in "$dir"*; do
      ldconfig -p 2>/dev/null | grep -q "$(basename "$lib")" || LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$dir"
    done
  done
  P=.carry/kernel_probe
  echo "commit: $(cat .carry/COMMIT 2>/dev/null) date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
}
probe_check() {
  local envs=$1 shape
  shift
  for shape in "$@"; do
    # shellcheck disable=SC2086
    env $envs timeout 60 "$P" $shape 3 "${ROWS:-32}" "${PP:-0}" > /tmp/line 2>&1
    echo "[$envs${PP:+ p=$PP}] rc=$? $(cat /tmp/line)"
  done
}
probe_speed() {
  # shellcheck disable=SC2086
  echo "[$1] $(env $1 timeout 60 "$P" 2 8192 8192 32 "${3:-32}" "$2" 100 4 "${PP:-0}" 2>&1)"
}
probe_sdpa() {
  timeout 120 python3 lab/probes/sdpa_ref.py 2 8192 32 "$1" 100 2>&1 | head -1
}
# Awkward shapes: seqlens off the tile sizes, sq != sk both ways, GQA, empty and single rows.
PROBE_SHAPES=("1 1 1 1 1 0" "3 127 127 5 5 0" "3 1000 1000 5 5 1" "1 127 300 4 2 1" "1 300 127 4 2 1"
              "1 8191 8191 2 1 1" "2 2048 2048 32 8 0" "4 1000 1000 40 8 1" "3 4097 4097 7 7 0")
# probe_prepass PATTERN: the pre-pass's byte tests (against the CPU mirror) and its bandwidth
# bench on .carry/'s build; logs and JSON under lab/results/probe/ (copied to $OUT when set), and the
# bench's lines matching PATTERN printed.
probe_prepass() {
  [ -e /work/main/data ] || { mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data; }  # the tests' fixture path
  local c d=results/probe t stem
  c=$(cat .carry/COMMIT)
  stem=$d/$(date -u +%F)-h200-$c
  mkdir -p $d
  for t in test_quant test_quant_attention; do
    timeout 120 .carry/tests/$t > "$stem-$t.log" 2>&1; echo "$t rc=$?"
    grep -E "PASSED|FAILED|SKIPPED" "$stem-$t.log" | tail -n 4
  done
  FP8ATTN_PREPASS_BENCH_SECONDS=${PREPASS_S:-60} timeout 150 python3 bench/bench_prepass.py --lib .carry/libfp8attn.so \
    --out "$stem-prepass.json" > "$stem-prepass.log" 2>&1; echo "bench rc=$?"
  grep -E "$1" "$stem-prepass.log" | head -30
  if [ -n "${OUT:-}" ]; then cp "$stem"-* "$OUT"/ 2>/dev/null; fi
  true
}
# probe_quant_tests TAG [VAR=value ...]: the pre-pass byte tests (test_quant, test_quant_attention)
# under the given environment, logs to $OUT/<test>-TAG-<commit>.log, a line each.
probe_quant_tests() {
  local tag=$1 t log c
  shift
  [ -e /work/main/data ] || { mkdir -p /work/main && ln -sfn "$PWD/data" /work/main/data; }  # the tests' fixture path
  c=$(cat .carry/COMMIT)
  for t in test_quant test_quant_attention; do
    log="${OUT:-.}/$t-$tag-$c.log"
    env "$@" timeout 120 .carry/tests/$t > "$log" 2>&1
    echo "[$*] $t rc=$? $(grep -E "PASSED|FAILED" "$log" | tail -n 3 | tr '\n' ' ')"
  done
}
# probe_causal_context: lab/probes/causal_context.py with nvidia-smi sampling the SM clock
# and power beside it ($OUT/causal-context-<commit>.json, $OUT/smi-<commit>.csv).
probe_causal_context() {
  local c smi
  c=$(cat .carry/COMMIT)
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 50 > "${OUT:-.}/smi-$c.csv" 2>&1 &
  smi=$!
  timeout 200 python3 lab/probes/causal_context.py .carry/libfp8attn.so "${OUT:-.}/causal-context-$c.json"
  kill $smi 2>/dev/null
  echo "smi samples: $(wc -l < "${OUT:-.}/smi-$c.csv")"
}
