#!/usr/bin/env python3
"""Compiler evidence for the attention kernels (issue 4, item 3), written to results/.

Compiles each shipped configuration (src/attn/instantiations/*.cu, one kernel a file) for sm_90a
with -Xptxas -v, disassembles it with cuobjdump, and reports per kernel instantiation: registers, stack frame and spills (ptxas), the number of QGMMA (FP8
wgmma) instructions, and where the local-memory accesses (STL/LDL) are: before or after the
producer's register release (USETMAXREG.DEALLOC), i.e. in the consumers or in the producer.
A second section does the pre-pass's kernels (src/quant/{kv_stats,quantize_kv,quantize_q}.cu):
registers, spills and the SASS instruction count of each instantiation, so that a kernel that
grows (the fused K/V pass doubled once, unnoticed for two days: lab/perf-log.md, 2026-12-02)
shows in the file's diff.

cuobjdump is not in this machine's CUDA install; the one that ships inside PyPI's triton wheel
is used (fetched with pip into .cache/, git-ignored) unless CUOBJDUMP names one.
Usage: python3 tools/compiler_report/report.py [--out results/compiler-<commit>.txt]
"""
import argparse
import datetime
import os
import pathlib
import re
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRITON = "triton==3.5.1"


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, **kw)


def cuobjdump() -> str:
    if os.environ.get("CUOBJDUMP"):
        return os.environ["CUOBJDUMP"]
    cache = ROOT / ".cache" / "triton-bin"
    exe = cache / "triton" / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not exe.exists():
        wheels = ROOT / ".cache" / "wheels"
        sh(f"{sys.executable} -m pip download -q --no-deps --only-binary=:all: -d {wheels} {TRITON}")
        whl = next(wheels.glob("triton-*.whl"))
        with zipfile.ZipFile(whl) as z:
            for tool in ("cuobjdump", "nvdisasm"):  # cuobjdump -sass runs nvdisasm
                z.extract(f"triton/backends/nvidia/bin/{tool}", cache)
                (exe.parent / tool).chmod(0o755)
    return str(exe)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    commit = sh(f"git -C {ROOT} rev-parse --short HEAD").stdout.strip()
    out = pathlib.Path(args.out) if args.out else ROOT / "results" / f"compiler-{commit}.txt"
    sources = sorted((ROOT / "src" / "attn" / "instantiations").glob("*.cu"))
    # Per-file options src/CMakeLists.txt gives (set_source_files_properties(FILE... PROPERTIES
    # COMPILE_OPTIONS "..."), one or more files, on one line or several).
    per_file = {f: m[2] for m in re.finditer(
        r'set_source_files_properties\(([^()]+?)\s+PROPERTIES\s+COMPILE_OPTIONS\s+"([^"]+)"\)',
        (ROOT / "src" / "CMakeLists.txt").read_text()) for f in m[1].split()}
    objs, stderr = compile_objs([str(src.relative_to(ROOT / "src")) for src in sources], per_file)
    ptxas = ptxas_info(stderr)
    functions = sass_functions(objs)
    if not functions:
        sys.exit("cuobjdump printed no SASS")
    kernels = {}
    for name, block in functions:
        lines = block.splitlines()
        dealloc = next((i for i, l in enumerate(lines) if "USETMAXREG.DEALLOC" in l), len(lines))
        local = [i for i, l in enumerate(lines) if re.search(r"\b(STL|LDL)\b", l)]
        kernels[name] = dict(qgmma=sum("QGMMA" in l for l in lines),
                             hgmma=sum("HGMMA" in l for l in lines),
                             local_consumer=sum(i < dealloc for i in local),
                             local_producer=sum(i >= dealloc for i in local))

    def short(n):
        # Config<PPrecision, two-level, block_n, stages, l from the tensor core, poly exp2 share,
        # VtType, O through the TMA, FirstBlock, fused row sums, exact softmax> (src/attn/config.h),
        # as the Itanium ABI mangles it.
        m = re.search(r"PPrecisionE(\d)ELb(\d)ELi(\d+)ELi(\d+)ELb(\d)ELi(\d+)ELNS\d_6VtTypeE(\d)ELb(\d)"
                      r"(?:ELNS\d_10FirstBlockE(\d))?(?:ELb(\d))?(?:ELb(\d))?", n)
        if not m:
            return n
        p, two, bn, st, tc, poly, vt, tma, first, fused, exact = m.groups()
        if tc == "1" and fused == "1":
            tc = "fused"
        pnames = {"0": "e4m3", "1": "e4m3_hilo", "2": "fp16"}
        return (f"P={pnames.get(p, p)} accumulation={'two-level' if two == '1' else 'one-level'} "
                f"block_n={bn} stages={st} l={ {'1': 'tensor-core', 'fused': 'tensor-core-fused'}.get(tc, 'fp32') } "
                f"poly_exp_every={poly} vt={'fp16' if vt == '1' else 'e4m3'} "
                f"o_store={'tma' if tma == '1' else 'registers'} "
                f"first_block={ {'1': 'skip', '2': 'trim'}.get(first, 'whole') } "
                f"softmax={'exact' if exact == '1' else 'slack'}")

    lines = [f"# compiler evidence for the attention kernels (tools/compiler_report/report.py)",
             f"# command: python3 tools/compiler_report/report.py (src/attn/instantiations/*.cu) ; nvcc: {sh('nvcc --version').stdout.splitlines()[-1]}",
             f"# commit: {commit} ; date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC ; machine: CPU build host (no GPU needed)",
             "# columns: registers at launch (setmaxnreg then gives 24 to the producer, 240 to the consumers;",
             "# FP16 P from E4M3 V^T: 40 / 232), stack/spill bytes from ptxas, QGMMA = FP8 wgmma instructions in the SASS,",
             "# HGMMA = FP16 wgmma instructions (P=fp16's P V), STL/LDL = local-memory",
             "# instructions in the consumer (before USETMAXREG.DEALLOC in program order) and producer code;",
             "# 'ptxas: ... C75xx' lines are ptxas's performance notes (C7511: wgmmas serialised).",
             f"# per-file options (src/CMakeLists.txt): {per_file or 'none'}", ""]
    for name in sorted(set(ptxas) | set(kernels)):
        if "attention_fwd_kernel" not in name:
            continue
        p, k = ptxas.get(name, {}), kernels.get(name, {})
        lines.append(f"{short(name)}: regs={p.get('regs')} stack={p.get('stack')}B spill_stores={p.get('spill_st')}B "
                     f"spill_loads={p.get('spill_ld')}B QGMMA={k.get('qgmma')} HGMMA={k.get('hgmma')} "
                     f"STL/LDL consumer={k.get('local_consumer')} producer={k.get('local_producer')}")
        for note in p.get("notes", []):
            lines.append(f"    ptxas: {note}")
    lines += ["", *prepass_section(per_file)]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {out}")


PREPASS_SOURCES = ("quant/kv_stats.cu", "quant/quantize_kv.cu", "quant/quantize_q.cu")


def compile_objs(rel_sources, per_file):
    """Each src/<rel> compiled with the flags of src/CMakeLists.txt that change code (-O3,
    -DNDEBUG, its per-file options) and -Xptxas=-v: (object paths, ptxas's output)."""
    objdir = ROOT / ".cache" / "compiler_report"
    objdir.mkdir(parents=True, exist_ok=True)
    objs, stderr = [], []
    for rel in rel_sources:
        src, obj = ROOT / "src" / rel, objdir / (pathlib.Path(rel).stem + ".o")
        cmd = (f"nvcc -std=c++20 -O3 -DNDEBUG -gencode=arch=compute_90a,code=sm_90a "
               f"--expt-relaxed-constexpr -Xptxas=-v {per_file.get(rel, '')} -I{ROOT}/include "
               f"-I{ROOT}/src -c {src} -o {obj}")
        log = subprocess.run(cmd, shell=True, capture_output=True, text=True)
        if log.returncode != 0:
            sys.exit(log.stderr)
        objs.append(obj)
        stderr.append(log.stderr)
    return objs, "\n".join(stderr)


def ptxas_info(stderr: str) -> dict:
    """Per entry function: regs, stack, spill_st, spill_ld and its C75xx notes, from ptxas -v."""
    ptxas, current = {}, None
    for line in stderr.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            current = m.group(1)
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            ptxas.setdefault(current, {}).update(stack=int(m[1]), spill_st=int(m[2]), spill_ld=int(m[3]))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            ptxas.setdefault(current, {}).update(regs=int(m[1]))
        if "C75" in line and current:
            ptxas.setdefault(current, {}).setdefault("notes", []).append(line.strip())
    return ptxas


def sass_functions(objs) -> list[tuple[str, str]]:
    """(mangled name, listing) of every function in the objects' SASS."""
    # cuobjdump 12.8 exits 1 after dumping a CUDA 13 object (it still prints every function).
    tool = cuobjdump()
    env = dict(os.environ, PATH=f"{pathlib.Path(tool).parent}:{os.environ.get('PATH', '')}")
    sass = "".join(subprocess.run(f"{tool} -sass {obj}", shell=True, capture_output=True, text=True,
                                  env=env).stdout for obj in objs)
    return [(block.split("\n", 1)[0].strip(), block)
            for block in re.split(r"\n\s*Function : ", sass)[1:]]


def prepass_section(per_file) -> list[str]:
    """One line per pre-pass kernel instantiation: registers, spills (ptxas), SASS instructions."""
    objs, stderr = compile_objs(PREPASS_SOURCES, per_file)
    ptxas = ptxas_info(stderr)
    counts = {name: len(re.findall(r"/\*[0-9a-f]{4,}\*/\s+[^;]*;", body))
              for name, body in sass_functions(objs)}
    names = sorted(set(ptxas) | set(counts))
    pretty = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                            text=True).stdout.splitlines() if names else []
    lines = ["# pre-pass kernels (src/" + ", src/".join(PREPASS_SOURCES) + "): one line per",
             "# instantiation, template arguments as c++filt prints them; SASS = instructions in",
             "# cuobjdump's listing (the default pre-pass: kv_group_stats_kernel<true, true, false>,",
             "# kv_finalize_kernel, quantize_kv_kernel<true, (Scale)2, false, false, false, false>,",
             "# quantize_q_kernel<true, (Scale)0, false>)"]
    for name, nice in zip(names, pretty or names):
        p = ptxas.get(name, {})
        short_name = re.sub(r"\(fp8attn::quant::[^)]*\)$", "", re.sub(r"^void ", "", nice))
        short_name = short_name.replace("fp8attn::quant::(anonymous namespace)::", "").replace(
            "fp8attn::quant::rows::", "")
        lines.append(f"{short_name}: regs={p.get('regs')} spill_stores={p.get('spill_st')}B "
                     f"spill_loads={p.get('spill_ld')}B SASS={counts.get(name)}")
    return lines


if __name__ == "__main__":
    main()
