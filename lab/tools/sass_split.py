"""Splits `cuobjdump -sass` output into one file per kernel, named by a normalized key.

The attention kernel's Config changed its template parameter list (the softmax variant became a
bool), so its instantiations are keyed by what they compute, read from the demangled name:
  old: Config<(PPrecision)P, TWO, N, STAGES, POLY, VARIANT>     (VARIANT 2: l from the tensor core)
  new: Config<(PPrecision)P, TWO, N, STAGES, TCROWSUM, POLY>
Inside a function's text, the mangled names are replaced by the key too.
usage: sass_split.py ALL.sass OUTDIR
"""
import os
import re
import subprocess
import sys


def demangle(names):
    out = subprocess.run(["cu++filt"], input="\n".join(names), capture_output=True, text=True).stdout
    return out.splitlines()


def key_of(demangled, mangled):
    m = re.search(r"attention_fwd_kernel<fp8attn::attn::Config<\(fp8attn::attn::PPrecision\)(\d+), "
                  r"(true|false), (\d+), (\d+), ([^,>]+)(?:, ([^,>]+))?>", demangled)
    if not m:
        return re.sub(r"[^A-Za-z0-9_.<>,=-]+", "_", demangled)[:200]
    p, two, n, st, a, b = m.groups()
    if a in ("true", "false"):  # new: tc_rowsum, poly
        tc, poly = a == "true", int(b or 0)
    else:  # old: poly, variant
        poly, variant = int(a), int(b or 0)
        tc = variant == 2
        if variant not in (0, 2):
            return f"attention_fwd_kernel.P{p}.{'2L' if two == 'true' else '1L'}.N{n}.S{st}.variant{variant}"
    return (f"attention_fwd_kernel.P{p}.{'2L' if two == 'true' else '1L'}.N{n}.S{st}."
            f"{'tcsum' if tc else 'fp32sum'}.poly{poly}")


def main():
    text = open(sys.argv[1]).read()
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    parts = re.split(r"^\s*Function : (\S+)\s*$", text, flags=re.M)
    names = parts[1::2]
    bodies = parts[2::2]
    for mangled, dem, body in zip(names, demangle(names), bodies):
        key = key_of(dem, mangled)
        # the body ends where the next section header (".section", "Fatbin") starts
        body = re.split(r"^\s*\.{3,}+\s*$", body, flags=re.M)[0]
        for other in names:
            body = body.replace(other, "<fn>")
        with open(os.path.join(outdir, key), "w") as f:
            f.write(body)


if __name__ == "__main__":
    main()
