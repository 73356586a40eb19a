#!/usr/bin/env python3
"""Issue 17's bar against tools/eval/e2e_bound.py's file: per row, how much faster the kernel
alone would have to be for the best rope + quantize pair (pre-pass at copy speed on its useful
bytes) to reach the issue's goal (>= 1.00 at every row, >= 1.20 at >= 4096 tokens per sequence).
With B the file's best pair ratio and r its pre-pass / kernel time, a kernel s times faster
gives B (1 + r) / (1 / s + r); s = 1 / (B (1 + r) / goal - r).
usage: lab/study/e2e_kernel_need.py results/e2e-bound-<commit>.txt [--out PATH]"""
import sys


def main():
    path = sys.argv[1]
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    lines = [f"# Kernel speed-up issue 17's goal would need with a copy-speed pre-pass (lab/study/e2e_kernel_need.py {path})", "",
             "| b | sq | sk | h/h_kv | causal | best rope pair / FA3 BF16 pair | goal | kernel speed-up needed |",
             "|---:|---:|---:|---|---|---:|---:|---:|"]
    section = False
    for ln in open(path):
        if ln.startswith("# against FA3 BF16"):
            section = True
            continue
        if not section or ln.startswith("#") or "|" not in ln:
            continue
        cols = [c.strip() for c in ln.split("|")]
        b, sq, sk, h, hkv, causal = cols[0].split()
        r, best_pair = float(cols[2]), float(cols[4])
        goal = 1.2 if int(sq) >= 4096 else 1.0
        s = 1.0 / (best_pair * (1 + r) / goal - r)
        need = "none" if best_pair >= goal else f"{s - 1:+.1%}"
        lines.append(f"| {b} | {sq} | {sk} | {h}/{hkv} | {'yes' if causal == '1' else 'no'} | {best_pair:.3f} | {goal:.2f} | {need} |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out:
        open(out, "w").write(text)


if __name__ == "__main__":
    main()
