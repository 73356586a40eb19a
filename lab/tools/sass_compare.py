"""Per-kernel machine code (SASS) of two builds of libfp8attn.so, compared byte for byte.

Reads the sm_90a cubins embedded in each library's .nv_fatbin section (plain ELF images), and
from each its kernels' .text.<kernel> sections (the SASS bytes) and .nv.info.<kernel> sections
(registers, parameters, barriers). No CUDA tool is needed (this machine has no cuobjdump).

Kernel names are normalized: the attention kernels are keyed by what their Config computes (P
precision, accumulation, key block, stages, l from the tensor core, polynomial exp2), whichever
template parameter list spells it:
  before: Config<(PPrecision)P, TWO, N, STAGES, POLY, VARIANT>   (VARIANT 2: l from the tensor core)
  after:  Config<(PPrecision)P, TWO, N, STAGES, TCROWSUM, POLY>
and every other kernel by its demangled name.

usage: python3 lab/tools/sass_compare.py BEFORE.so AFTER.so [--before-commit C] [--out FILE]
"""
import argparse
import datetime
import re
import socket
import struct
import subprocess
import sys


def elf_sections(img):
    """{name: bytes} of one ELF64 image starting at img[0]."""
    e_shoff, = struct.unpack_from("<Q", img, 0x28)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", img, 0x3A)
    heads = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        name, _type, _flags, _addr, s_off, s_size = struct.unpack_from("<IIQQQQ", img, off)
        heads.append((name, _type, s_off, s_size))
    strtab = heads[e_shstrndx]
    names = img[strtab[2]:strtab[2] + strtab[3]]
    out = {}
    for name, typ, off, size in heads:
        n = names[name:names.index(b"\0", name)].decode()
        out[n] = b"" if typ == 8 else img[off:off + size]  # SHT_NOBITS: no bytes
    return out


def elf_size(img):
    e_shoff, = struct.unpack_from("<Q", img, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", img, 0x3A)
    return e_shoff + e_shentsize * e_shnum


def cubins(lib):
    data = open(lib, "rb").read()
    secs = elf_sections(data)
    fat = secs[".nv_fatbin"]
    i = 0
    while (i := fat.find(b"\x7fELF", i)) >= 0:
        size = elf_size(fat[i:])
        yield fat[i:i + size]
        i += size


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout
    return out.splitlines()


def key_of(demangled):
    vt = re.search(r", \(fp8attn::attn::VtType\)(\d+)>", demangled)
    suffix = " vt-fp16" if vt and vt.group(1) == "1" else ""
    demangled = re.sub(r", \(fp8attn::attn::VtType\)\d+>", ">", demangled)
    m = re.search(r"attention_fwd_kernel<fp8attn::attn::Config<\(fp8attn::attn::PPrecision\)(\d+), "
                  r"(true|false), (\d+), (\d+), ([^,>]+)(?:, ([^,>]+))?>", demangled)
    if not m:
        return demangled
    p, two, n, st, a, b = m.groups()
    level = "two-level" if two == "true" else "one-level"
    if a in ("true", "false"):  # after: tc_rowsum, poly
        tc, poly = a == "true", int(b or 0)
    else:  # before: poly, variant
        poly, variant = int(a), int(b or 0)
        if variant not in (0, 2):
            return f"attention_fwd_kernel P{p} {level} N{n} stages{st} variant{variant} poly{poly}"
        tc = variant == 2
    return f"attention_fwd_kernel P{p} {level} N{n} stages{st} {'tc-rowsum' if tc else 'fp32-rowsum'} poly{poly}{suffix}"


def normalize_info(info):
    """EIATTR_PARAM_CBANK (format 0x04, attribute 0x0a, 8 bytes) names the parameter bank by its
    symbol's index in the cubin, which moves when the cubin holds other kernels: zeroed."""
    return re.sub(rb"\x04\x0a\x08\x00....", b"\x04\x0a\x08\x00\0\0\0\0", info, flags=re.S)


def kernels(lib):
    text, info = {}, {}
    for img in cubins(lib):
        for name, body in elf_sections(img).items():
            if name.startswith(".text."):
                text[name[6:]] = body
            elif name.startswith(".nv.info."):
                info[name[9:]] = normalize_info(body)
    names = sorted(text)
    keyed = {}
    for mangled, dem in zip(names, demangle(names)):
        keyed[key_of(dem)] = (text[mangled], info.get(mangled, b""))
    return keyed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--out")
    ap.add_argument("--before-commit", default="?", help="the commit BEFORE.so was built from")
    a = ap.parse_args()
    before, after = kernels(a.before), kernels(a.after)
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "src", "include"]).returncode != 0
    nvcc = subprocess.run(["/usr/local/cuda/bin/nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    lines = [f"# SASS identity, per kernel: {a.before} (before) vs {a.after} (after)",
             f"# command: python3 lab/tools/sass_compare.py {' '.join(sys.argv[1:])}",
             f"# commit: before {a.before_commit}, after {commit}{'-dirty' if dirty else ''}",
             f"# machine: {socket.gethostname()}, {' '.join(nvcc)}",
             f"# date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
             "# compared: .text.<kernel> (SASS bytes) and .nv.info.<kernel> (but the parameter bank's symbol"
             " index) of the embedded sm_90a cubins"]
    same = diff = only = 0
    for k in sorted(set(before) | set(after)):
        if k not in after:
            lines.append(f"only in before  {k}")
            only += 1
        elif k not in before:
            lines.append(f"only in after   {k}")
            only += 1
        else:
            (tb, ib), (ta, ia) = before[k], after[k]
            if tb == ta and ib == ia:
                lines.append(f"identical       {k} ({len(ta)} bytes of SASS, {len(ta) // 16} instructions)")
                same += 1
            else:
                what = ("SASS" if tb != ta else "") + (" nv.info" if ib != ia else "")
                lines.append(f"DIFFERENT       {k} ({what.strip()}: {len(tb)} -> {len(ta)} bytes)")
                diff += 1
    lines.append(f"# summary: {same} identical, {diff} different, {only} in one build only")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    main()
