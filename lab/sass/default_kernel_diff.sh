#!/usr/bin/env bash
# Runs HERE (no GPU): compiles the default kernel (E4M3 P, one-level, 192-key blocks, l from the
# tensor core) from two source trees and compares their SASS: the whole kernel's instruction
# count, and the instructions of every loop of >= 200 (lab/sass/loops.py: the steady-state key
# loop). Used to show that a change confined to the epilogue leaves the key loop unchanged
# (results/sass-default-kernel-rel.txt). It names the kernel by the Config of 2026-11-30
# (kVariantTcRowSum), which no longer exists: for today's builds, lab/tools/sass_compare.py
# compares every kernel of two libraries byte for byte.
#   [CUOBJDUMP=path] lab/sass/default_kernel_diff.sh BASE_COMMIT > results/<name>.txt   (new: the working tree)
set -euo pipefail
cd "$(dirname "$0")/../.."
NEW=$PWD
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
BASE=$TMP/base; mkdir -p "$BASE"
git archive "$1" src include | tar -x -C "$BASE"
cat > "$TMP/inst.cu" <<'CU'
#include "attn/kernel.cuh"
using namespace fp8attn::attn;
void* default_kernel() {  // taking its address instantiates it
  return reinterpret_cast<void*>(&attention_fwd_kernel<Config<PPrecision::kE4M3, false, 192, 2, 0, kVariantTcRowSum>>);
}
CU
for side in BASE NEW; do
  tree=${!side}
  nice -n 10 nvcc -cubin -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -std=c++20 -O3 \
    -I"$tree/src" -I"$tree/include" -o "$TMP/$side.cubin" "$TMP/inst.cu"
  "${CUOBJDUMP:-cuobjdump}" -sass "$TMP/$side.cubin" | grep -E '^\s+/\*[0-9a-f]{4,}\*/' > "$TMP/$side.sass"
done
echo "command: $0 $*"
echo "base: $(git rev-parse --short=12 "$1"); new: $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- src include || echo -dirty)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); nvcc: $(nvcc --version | tail -1)"
for side in BASE NEW; do echo "$side: $(wc -l < "$TMP/$side.sass") instructions"; done
[[ -n "${KEEP_SASS:-}" ]] && mkdir -p "$KEEP_SASS" && cp "$TMP"/BASE.sass "$TMP"/NEW.sass "$KEEP_SASS"/
# The steady-state key loops: the innermost loops (backward branches) that issue wgmmas, compared
# instruction by instruction (register names included, addresses not).
python3 - "$TMP/BASE.sass" "$TMP/NEW.sass" <<'PY'
import re, sys
pat = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
def loops_of(path):
    raw = []
    for ln in open(path):
        m = pat.search(ln)
        if m:
            raw.append((int(m.group(1), 16), m.group(2).strip()))
    at = {a: i for i, (a, _) in enumerate(raw)}
    found = []
    for i, (a, t) in enumerate(raw):
        op = re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] if t else ""
        if op.startswith("BRA"):
            m = re.search(r"0x([0-9a-f]+)", t)
            if m and int(m.group(1), 16) <= a and int(m.group(1), 16) in at:
                s0 = at[int(m.group(1), 16)]
                body = [re.sub(r"0x[0-9a-f]+", "ADDR", x) for _, x in raw[s0:i + 1]]
                if any("QGMMA" in x or "HGMMA" in x for x in body):
                    found.append(body)
    # innermost: no other wgmma loop strictly inside
    found.sort(key=len)
    return found
b, n = loops_of(sys.argv[1]), loops_of(sys.argv[2])
print(f"wgmma loops: base {len(b)} (sizes {[len(x) for x in b][:6]}), new {len(n)} (sizes {[len(x) for x in n][:6]})")
k = min(2, len(b), len(n))
def opcodes(body):  # the instruction without its operands' register numbers
    return [re.sub(r"\bU?R\d+\b", "R", re.sub(r"\bU?P\d\b", "P", x)) for x in body]
import collections
for j in range(k):
    same = b[j] == n[j]
    same_ops = opcodes(b[j]) == opcodes(n[j])
    hist = lambda body: collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", x).split()[0] for x in body)
    print(f"innermost wgmma loop {j}: base {len(b[j])} instructions, new {len(n[j])}: "
          + ("IDENTICAL" if same else "registers or order differ")
          + f"; same instructions in the same order, registers aside: {same_ops}"
          + f"; same opcode histogram: {hist(b[j]) == hist(n[j])}")
    if not same_ops:
        hb, hn = hist(b[j]), hist(n[j])
        print("  opcode count changes: " + ", ".join(f"{o} {hb[o]}->{hn[o]}" for o in sorted(set(hb) | set(hn)) if hb[o] != hn[o]))
PY
strip() { sed -E 's@/\*[0-9a-f]{4,}\*/@@; s@/\* 0x[0-9a-f]+ \*/@@; s@0x[0-9a-f]+@ADDR@g' "$1"; }
for side in BASE NEW; do
  echo "--- $side loops"; python3 "$NEW/lab/sass/loops.py" "$TMP/$side.sass" --min 200
done
if diff <(python3 "$NEW/lab/sass/loops.py" "$TMP/BASE.sass" --min 200) \
        <(python3 "$NEW/lab/sass/loops.py" "$TMP/NEW.sass" --min 200 ) > /dev/null; then
  echo "loops: identical opcode histograms"
else
  echo "loops: DIFFER"
fi
echo "--- instruction diff (addresses stripped): $(diff <(strip "$TMP/BASE.sass") <(strip "$TMP/NEW.sass") | grep -c "^[<>]") lines differ; hunks:"
diff <(strip "$TMP/BASE.sass") <(strip "$TMP/NEW.sass") | grep -E "^[0-9]" | tr "\n" " " || true
echo
