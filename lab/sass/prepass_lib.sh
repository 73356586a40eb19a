# Sourced by lab/sass/prepass_counts.sh and prepass_loads.sh (run from the repo root): the
# pre-pass sources of a revision in a temporary tree, and one of its kernel files compiled to
# sm_90a SASS beside ptxas' report.
# cuobjdump: CUOBJDUMP, else the one tools/compiler_report/report.py fetches from PyPI's triton
# wheel into .cache/, else the one on PATH.
CUOBJDUMP=${CUOBJDUMP:-$PWD/.cache/triton-bin/triton/backends/nvidia/bin/cuobjdump}
[[ -x "$CUOBJDUMP" ]] || CUOBJDUMP=$(command -v cuobjdump || echo cuobjdump)

# prepass_tree REV DIR PATH...: PATHs of git revision REV (the working tree if REV is empty) into DIR.
prepass_tree() {
  local rev=$1 dir=$2
  shift 2
  if [[ -n "$rev" ]]; then
    git archive "$rev" "$@" | tar -x -C "$dir"
  else
    cp -r "$@" "$dir/"
  fi
}

# prepass_sass DIR NAME: DIR/src/quant/NAME.cu -> DIR/NAME.{cubin,sass,ptxas}.
prepass_sass() {
  local dir=$1 f=$2
  nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
    -Xptxas=-v -I"$dir/include" -I"$dir/src" -cubin -o "$dir/$f.cubin" "$dir/src/quant/$f.cu" \
    2> "$dir/$f.ptxas"
  "$CUOBJDUMP" -sass "$dir/$f.cubin" > "$dir/$f.sass" 2>/dev/null
}

# prepass_stage REV TITLE PATH...: PATHs of REV (or the working tree) into a temporary $tmp,
# removed at exit, and the report's two header lines.
prepass_stage() {
  local rev=$1 title=$2
  shift 2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  prepass_tree "$rev" "$tmp" "$@"
  echo "# $title, sm_90a, $(nvcc --version | tail -1)"
  echo "# source: ${rev:-working tree at $(git rev-parse --short=12 HEAD)}"
}
