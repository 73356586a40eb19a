#!/usr/bin/env python3
"""A copy of a library whose long-tile E4M3 kernel differs from the original only in the operand-reuse
flags of its exp-argument FFMAs (the FFMAs feeding MUFU.EX2 on the steady-state loop's hot path,
lab/sass/schedule_metrics.py): a test of whether reuse / register-bank reads cost speed on Hopper,
everything else (schedule, registers, addresses) byte for byte the same.
  clear:      every reuse flag on those FFMAs cleared (the release's 48 pairs lose the cache hit
              that serves the second FFMA of each pair), nothing else changed
  clear_swap: the same, and bit 45 of each pair swapped (set on the second, clear on the first):
              xtile v2's control pattern on the release's schedule and registers
  set:        the flag set on each operand slot that the next instruction, also an exp FFMA, reads
              from the same register, and bit 45 set on it (the encoding refuses reuse without it:
              nvdisasm reports an undefined opex value): the release's pattern, e.g. on xtile v2
The cubin sits verbatim inside libfp8attn.so's fatbin; the flags are bits 58-60 (slots a, b, c) of
each instruction's high 64-bit word, bit 45 beside them (ptxas sets it on every instruction that
carries .reuse, read here as "do not switch warps after this one"), patched in place (same size).
The patched library's listing is checked: only those FFMAs differ, in those bits.
  python3 lab/sass/reuse_patch.py LIB OUT_LIB clear|clear_swap|set
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inner_loop import inner_loop, parse  # noqa: E402
from schedule_metrics import decode, hot_path  # noqa: E402

CUOBJDUMP = os.environ.get("CUOBJDUMP", "/tmp/cuobj/x/nvidia/cu13/bin/cuobjdump")
CUBIN = "e4m3_block192.sm_90a"
# The register-epilogue E4M3 kernel's Config as mangled since the first-block template parameters
# (before them: "ELi192ELi2ELb1ELi0ELNS0_6VtTypeE0ELb0EEEEEvNS0_12KernelParamsE", for libraries of
# the first sessions).
KERNEL = "ELi192ELi2ELb1ELi0ELNS0_6VtTypeE0ELb0ELNS0_10FirstBlockE2ELb0ELb0EEEEEvNS0_12KernelParamsE"


def listing(lib, tmp, cubin=CUBIN):
    """(cubin bytes, path of its -sass listing) of LIB's cubin (default e4m3_block192's)."""
    work = tempfile.mkdtemp(dir=tmp)
    os.symlink(os.path.abspath(lib), os.path.join(work, "lib.so"))
    subprocess.run([CUOBJDUMP, "-xelf", cubin, "lib.so"], cwd=work, check=True, capture_output=True)
    cub = os.path.join(work, next(f for f in os.listdir(work) if f.endswith(".cubin")))
    sass = cub + ".sass"
    with open(sass, "w") as f:
        subprocess.run([CUOBJDUMP, "-sass", cub], stdout=f, check=True)
    return open(cub, "rb").read(), sass


def cubin_offset(blob, cub):
    """Where the cubin sits in the library's bytes; it must be stored once, verbatim."""
    at = bytes(blob).find(cub)
    if at < 0 or bytes(blob).find(cub, at + 1) >= 0:
        sys.exit("the cubin is not stored once, verbatim, in the library (compressed fatbin?)")
    return at


def text_offset(cub, name_part):
    """File offset of the .text section of the one function whose name holds name_part."""
    shoff, = struct.unpack_from("<Q", cub, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cub, 0x3A)
    secs = [struct.unpack_from("<IIQQQQ", cub, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx][4]
    name = lambda s: cub[strtab + s[0]:cub.index(b"\0", strtab + s[0])].decode()  # noqa: E731
    hits = [s[4] for s in secs if name(s).startswith(".text.") and name_part in name(s)]
    if len(hits) != 1:
        sys.exit(f"{len(hits)} .text sections match {name_part}")
    return hits[0]


def kernel_section(sass_path):
    """The listing's lines of the long-tile E4M3 function only."""
    text = open(sass_path).read()
    parts = re.split(r"(?=\n\s+Function : )", text)
    part = [p for p in parts if KERNEL in p.split("\n", 2)[1]]
    if len(part) != 1:
        sys.exit(f"{len(part)} functions match the long-tile E4M3 Config")
    return part[0]


def kernel_loop(sass_path):
    """The kernel's key loop (inner_loop.py's) out of the cubin's listing."""
    tmp = sass_path + ".kernel"
    open(tmp, "w").write(kernel_section(sass_path))
    return inner_loop(parse(tmp))


def open_kernel(lib):
    """(a temporary folder, the kernel's cubin listing, LIB's bytes, the offset of the kernel's
    .text in them): what each patch tool starts from."""
    tmp = tempfile.mkdtemp()
    cub, sass = listing(lib, tmp)
    blob = bytearray(open(lib, "rb").read())
    return tmp, sass, blob, cubin_offset(blob, cub) + text_offset(cub, KERNEL[:40])


def targets(sass_path, mode):
    """{address: new reuse bits} for the exp FFMAs of the kernel's hot path."""
    hot = hot_path(kernel_loop(sass_path))
    dec = [decode(t) for _, t, _ in hot]
    exp = set()
    for p, (op, _, _, srcs) in enumerate(dec):
        if op == "MUFU.EX2" and srcs:
            q = next((j for j in range(p - 1, -1, -1) if dec[j][2] == srcs[0][1]), None)
            if q is not None and dec[q][0] == "FFMA":
                exp.add(q)
    out = {}  # address: (reuse bits, bit 45 or None to keep it)
    for q in sorted(exp):
        if mode == "clear":
            out[hot[q][0]] = (0, None)
        elif mode == "clear_swap":
            paired = q + 1 in exp and {r for _, r, _ in dec[q][3]} & {r for _, r, _ in dec[q + 1][3]} - {dec[q][2]}
            first = paired and ((hot[q][2] >> 58) & 0x7) != 0
            second = q - 1 in exp and ((hot[q - 1][2] >> 58) & 0x7) != 0
            out[hot[q][0]] = (0, 0 if first else 1 if second else None)
        elif q + 1 in exp:
            nxt = {(s, r) for s, r, _ in dec[q + 1][3]}
            bits = sum(1 << s for s, r, _ in dec[q][3] if (s, r) in nxt and s < 3)
            out[hot[q][0]] = (bits, 1 if bits else None)
    return out, len(exp)


def write_and_relist(blob, out_lib, tmp, sass):
    """Write the patched library, list its cubin again: (original's instructions, the copy's,
    the pairs that differ), for each patch tool's check."""
    open(out_lib, "wb").write(blob)
    os.chmod(out_lib, 0o755)
    _, sass2 = listing(out_lib, tmp)
    a, b = parse(sass), parse(sass2)
    return a, b, [(x, y) for x, y in zip(a, b) if x != y]


def main():
    lib, out_lib, mode = sys.argv[1:4]
    if mode not in ("clear", "clear_swap", "set"):
        sys.exit("mode: clear, clear_swap or set")
    tmp, sass, blob, base = open_kernel(lib)
    patch, n_exp = targets(sass, mode)
    changed = 0
    for addr, (bits, b45) in patch.items():
        off = base + addr + 8
        hi, = struct.unpack_from("<Q", blob, off)
        new = (hi & ~(0x7 << 58)) | (bits << 58)
        if b45 is not None:
            new = (new & ~(1 << 45)) | (b45 << 45)
        changed += new != hi
        struct.pack_into("<Q", blob, off, new)
    a, b, diff = write_and_relist(blob, out_lib, tmp, sass)
    ok = len(a) == len(b) and all(
        x[0] == y[0] and x[1].replace(".reuse", "") == y[1].replace(".reuse", "")
        and (x[2] ^ y[2]) & ~(0x7 << 58 | 1 << 45) == 0 for x, y in diff)
    print(f"{out_lib}: {mode}, {n_exp} exp FFMAs, {changed} instruction words changed; the listing "
          f"differs in {len(diff)} instructions, {'only in bits 58-60 and 45' if ok else 'BEYOND bits 58-60 and 45'}")
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
