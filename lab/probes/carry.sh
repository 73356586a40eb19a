# Shared pieces of the probe scripts that carry their own library and test binaries (sourced).
#   carry_stage BUILD_DIR CARRY TEST...   here: build fp8attn + the tests, copy them, the fallback
#                                         libraries and COMMIT into CARRY
#   carry_env CARRY                       there: LD_LIBRARY_PATH for CARRY and its fallback/ libraries
#                                         the machine lacks
#   carry_tests CARRY LOG NAME:LIMIT...   there: each test binary under its time limit, its totals
#                                         and failed tests echoed, its whole log appended to LOG
#   carry_sanitize CARRY LOG [TARGET]     there: memcheck, racecheck and synccheck of CARRY's
#                                         test_sanitize_targets on Sanitize.TARGET (default
#                                         DefaultFull: the default kernel at a persistent shape),
#                                         each summary echoed, its log appended to LOG
#   carry_header CARRY, carry_fa3         there: the log's first lines; FA3 from .whl/ into /tmp/site
#   carry_unpack ARCHIVE NAME             there: a tar.xz of several builds into a fresh /tmp/NAME
#                                         (printed)
#   carry_patched REPO PATCH CARRY        here: REPO's HEAD with PATCH (a path inside REPO; several
#                                         joined by '+', applied in order) applied
#                                         in a temporary worktree, its library alone into CARRY
#                                         (COMMIT names both)
#   carry_bundle                          there: .carry/bundle.tar.xz's library and tests in .carry/
#                                         (BUNDLE_LIB), LD_LIBRARY_PATH set
#   carry_release CARRY [BUILD]           here: this tree's library alone (built in BUILD, default
#                                         build-stage) into CARRY
#   carry_begin ARCHIVE NAME LOG DIR...   there: unpack ARCHIVE (prints nothing), FA3, the header
#                                         and each DIR's COMMIT into LOG; sets B (the unpacked
#                                         folder) and LD_LIBRARY_PATH for DIR (the first)
#   carry_lot FIRST_CONFIG LOG            there: every .carry/lot*.tar.xz (lottery_stage.sh and
#                                         the like) into a fresh /tmp/lot (B), their BUILDS kept
#                                         apart; FA3; the header of FIRST_CONFIG's folder
#                                         (TAG=FOLDER[,...]) and the builds into LOG
#   carry_kernel_ab ROWS DIR:TAG...       there: kernel_ab.py, the first DIR's library against the
#                                         others, each in its own process, into $OUT (time limit
#                                         KAB_TIMEOUT, default 480 s)
#   carry_lottery SET N TAG=FOLDER...     there: lottery_check.sh on --shape-set SET's first N rows
#                                         into $OUT/lottery-SET.{log,json} (time limit LOT_TIMEOUT,
#                                         default 200 s; LOT_PEER=fa3_bf16 pairs with FA3 BF16);
#                                         prints the table of mean ratios
#   carry_branch_tests ARCHIVE NAME TEST:LIMIT...
#                                         there: a branch's bundle (carry_stage's layout) into
#                                         /tmp/NAME (C), its tests (fuzz count 400) echoed into
#                                         $OUT/NAME-tests.log, whole into $OUT/NAME-tests-full.log
#   carry_lib_errors LOG MODE TAG...      there, after carry_lot: lib_errors_gpu.py (kernel-only
#                                         errors in MODE beside FA3 FP8's) on each TAG's library
#                                         of $B into $OUT/errors-TAG.json, the lines into LOG
carry_stage() {
  local build=$1 carry=$2 t
  shift 2
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/work}
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DBLA_STATIC=OFF \
    -DBLAS_openblas_LIBRARY=/usr/lib/x86_64-linux-gnu/libopenblas.so \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
  nice -n 10 cmake --build "$build" -j 2 --target fp8attn "$@" 2>&1 |
    grep -E "error|Registers are spilled|Built target" || true
  rm -rf "$carry"
  mkdir -p "$carry/tests" "$carry/fallback/openblas" "$carry/fallback/gomp"
  cp "$build/src/libfp8attn.so" "$carry/"
  for t in "$@"; do cp "$build/tests/$t" "$carry/tests/"; done
  gcc -O2 -shared -fPIC -Wl,-soname,libopenblas.so.0 -o "$carry/fallback/openblas/libopenblas.so.0" \
    scripts/openblas_shim.c
  cp -L /lib/x86_64-linux-gnu/libgomp.so.1 "$carry/fallback/gomp/"
  local commit
  commit=$(git rev-parse --short=12 HEAD)
  [[ -n "$(git status --porcelain -- src model include tests CMakeLists.txt)" ]] && commit="$commit-dirty"
  echo "$commit" > "$carry/COMMIT"
  du -sh "$carry"
}
carry_env() {
  local carry=$1 dir lib
  export LD_LIBRARY_PATH="$carry"
  for dir in "$carry"/fallback/*/; do
    [[ -d "$dir" ]] || continue
    for lib in "$dir"*; do
      ldconfig -p | grep -q "$(basename "$lib")" || LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
    done
  done
}
# there: a BUNDLE=1 stage's library and tests (scripts/stage_gpu.sh) unpacked into .carry/ when
# not yet there, LD_LIBRARY_PATH pointing at it; BUNDLE_LIB names the library; OUT exported
# (default /tmp/out)
carry_bundle() {
  export OUT=${OUT:-/tmp/out}
  mkdir -p "$OUT"
  [[ -f .carry/libfp8attn.so ]] || tar -xJf .carry/bundle.tar.xz -C .carry
  BUNDLE_LIB=$PWD/.carry/libfp8attn.so
  export LD_LIBRARY_PATH="$PWD/.carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
carry_tests() {
  local carry=$1 log=$2 spec t limit t0 rc
  shift 2
  for spec in "$@"; do
    t=${spec%%:*} limit=${spec##*:}
    t0=$SECONDS
    timeout "$limit" "$carry/tests/$t" > "/tmp/$t.log" 2>&1; rc=$?
    echo "$t exit $rc ($((SECONDS - t0)) s; 124 = over its ${limit} s limit)"
    # The totals and each failed test (its seed and messages are in the log).
    grep -E "^\[  PASSED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]+ test|^\[  FAILED  \]" "/tmp/$t.log" | head -12
    { echo "===== $t exit $rc"; cat "/tmp/$t.log"; } >> "$log"
  done
}
carry_sanitize() {
  local carry=$1 log=$2 target=${3:-DefaultFull} tool san
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    timeout 120 "$san" --tool "$tool" "$carry/tests/test_sanitize_targets" \
      --gtest_filter="Sanitize.$target" > "/tmp/san-$tool.log" 2>&1
    echo "sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "/tmp/san-$tool.log" | tr '\n' ' ')"
    { echo "===== $tool"; cat "/tmp/san-$tool.log"; } >> "$log"
  done
}
# there: the commit of the carried build, the tree's, the date and the GPU's clocks
carry_header() {
  echo "commit $(cat "$1/COMMIT" 2>/dev/null || echo '?') tree $(git rev-parse --short=12 HEAD 2>/dev/null) $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
}
# there: FA3 importable from /tmp/site (scripts/gpu/fa3.sh's install_fa3)
carry_fa3() {
  source scripts/gpu/fa3.sh
  install_fa3
}
carry_lot() {
  local a first=${1#*=}
  first=${first%%,*}
  B=/tmp/lot; rm -rf "$B"; mkdir -p "$B"
  for a in .carry/lot*.tar.xz; do
    tar -xJf "$a" -C "$B" && { [[ -f "$B/BUILDS" ]] && mv "$B/BUILDS" "$B/BUILDS.$(basename "$a" .tar.xz)"; }
  done
  carry_fa3
  carry_header "$B/$first" | tee "$2"
  cat "$B"/BUILDS.* 2>/dev/null | tee -a "$2"
}
carry_unpack() {
  local dir=/tmp/$2
  rm -rf "$dir" && mkdir -p "$dir" && tar -xJf "$1" -C "$dir" && echo "$dir"
}
carry_patched() {
  local repo=$1 patch=$2 carry=$3 wt
  # Beside the repository, so that ccache (CCACHE_BASEDIR, the parent folder) reuses objects.
  wt=$(mktemp -d "$(cd "$repo/.." && pwd)/wt-patched.XXXXXX")
  git -C "$repo" worktree add -q --detach "$wt" HEAD
  (cd "$wt" && for one in ${patch//+/ }; do git apply "$one" || exit 1; done &&
    carry_stage build-patched "$carry" >/dev/null &&
    echo "$(git rev-parse --short=12 HEAD) + $patch" > "$carry/COMMIT")
  local rc=$?
  git -C "$repo" worktree remove --force "$wt"
  rm -rf "$carry/tests" "$carry/fallback"
  return $rc
}
carry_release() {
  carry_stage "${2:-build-stage}" "$1" >/dev/null
  rm -rf "$1/tests" "$1/fallback"
}
carry_begin() {
  local archive=$1 name=$2 log=$3 v
  shift 3
  B=$(carry_unpack "$archive" "$name")
  carry_fa3
  carry_header "$B/$1" | tee "$log"
  for v in "$@"; do echo "$v: $(cat "$B/$v/COMMIT")" | tee -a "$log"; done
  carry_env "$B/$1"
}
carry_kernel_ab() {
  local rows=$1 spec libs=() tags=()
  shift
  for spec in "$@"; do
    libs+=("$B/${spec%%:*}/libfp8attn.so")
    tags+=("${spec##*:}")
  done
  local variants=()
  for spec in "${libs[@]:1}"; do variants+=(--variant-lib "$spec"); done
  timeout "${KAB_TIMEOUT:-480}" python3 lab/probes/kernel_ab.py --lib "${libs[0]}" "${variants[@]}" \
    --variant-tags "$(IFS=,; echo "${tags[*]}")" --no-blocks --variant-rows "$rows" --runs 100 \
    --out "$OUT" 2>&1 | grep -v "^block size"
}
carry_branch_tests() {
  local archive=$1 name=$2
  shift 2
  C=$(carry_unpack "$archive" "$name")
  carry_env "$C"
  carry_header "$C" > "$OUT/$name-tests-full.log"
  FP8ATTN_FUZZ_COUNT=400 carry_tests "$C" "$OUT/$name-tests-full.log" "$@" | tee "$OUT/$name-tests.log"
}
carry_lib_errors() {
  local log=$1 mode=$2 t
  shift 2
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  for t in "$@"; do
    timeout 120 python3 lab/probes/lib_errors_gpu.py "$B/$t/libfp8attn.so" "$OUT/errors-$t.json" "$mode" \
      2>&1 | grep -v "^wrote" | sed "s/^/$t /" | tee -a "$log"
  done
}
# The accurate mode's A/B: the kernel-only errors of each TAG's library (a correctness screen),
# then the accurate mode of each head to head with FA3 BF16 over the sweep (LOT_SHAPES rows, 18
# by default). carry_accurate_ab LOG TAG...   (the first TAG's library heads LOG)
carry_accurate_ab() {
  local log=$1 t specs=()
  shift
  carry_lot "$1=$1" "$log" > /dev/null
  carry_lib_errors "$log" fp8attn_accurate "$@"
  for t in "$@"; do specs+=("$t=$t,MODE=fp8attn_accurate"); done
  LOT_TIMEOUT=${LOT_TIMEOUT:-420} LOT_PEER=fa3_bf16 carry_lottery sweep "${LOT_SHAPES:-18}" "${specs[@]}"
}
carry_lottery() {
  local set=$1 n=$2
  shift 2
  LOT_TIMEOUT=${LOT_TIMEOUT:-200} LOT_SHAPE_SET=$set LOT_SHAPES=$n bash lab/probes/lottery_check.sh "$@" \
    > "$OUT/lottery-$set.log" 2>&1
  mv "$OUT/lottery_ab.json" "$OUT/lottery-$set.json" 2>/dev/null
  rm -f "$OUT/lottery.log"
  grep -A60 "mean over rounds" "$OUT/lottery-$set.log" | head -60
}
