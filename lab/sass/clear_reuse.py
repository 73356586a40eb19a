#!/usr/bin/env python3
"""Lab tool: a copy of libfp8attn.so whose attention kernel has its operand-reuse flags cleared in
the steady-state loop (all instructions, or FFMAs only). Everything else is byte-identical.

A `.reuse` flag (bits 58-61 of an instruction's high 64-bit word on sm_70 and later) asks the
hardware to keep that source operand in the reuse cache for the next instruction, which then
reads it from there instead of the register file (no bank conflict). Clearing a flag is always
safe: the next instruction reads the register file instead. So a library with cleared flags
computes the same bits, and its speed against the original measures what the reuse (and the
register-bank conflicts it avoids) is worth in this loop.

  python3 lab/sass/clear_reuse.py LIB OUT.so [--config e4m3_block192] [--scope loop|ffma]
Prints how many instructions had flags cleared; needs cuobjdump (CUOBJDUMP, default the wheel's
copy under /tmp/cuobj). The loop is lab/sass/inner_loop.py's (the smallest backward-branch loop
holding both products).
"""
from __future__ import annotations

import argparse
import re
import shutil
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import inner_loop  # noqa: E402
from reuse_patch import cubin_offset, listing, text_offset  # noqa: E402

REUSE_MASK = 0xF << 58  # in the high 64-bit word


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("out")
    ap.add_argument("--config", default="e4m3_block192")
    ap.add_argument("--scope", choices=("loop", "ffma"), default="loop")
    a = ap.parse_args()
    so = bytearray(Path(a.lib).read_bytes())
    tmp = tempfile.mkdtemp()
    try:
        cubin, sass = listing(a.lib, tmp, f"{a.config}.sm_90a")
        ins = inner_loop.parse(sass)
    finally:
        shutil.rmtree(tmp)
    base = cubin_offset(so, cubin)
    text_off = text_offset(cubin, "attention_fwd_kernel")
    loop = inner_loop.inner_loop(ins)
    if not loop:
        sys.exit("clear_reuse: no steady-state loop found")
    cleared = 0
    for addr, text, hi in loop:
        op = re.sub(r"^@!?U?P\w+\s+", "", text)
        if a.scope == "ffma" and not op.startswith("FFMA"):
            continue
        if not hi & REUSE_MASK:
            continue
        at = base + text_off + addr + 8
        word = struct.unpack_from("<Q", so, at)[0]
        assert word == hi, f"instruction at {addr:#x}: the listing and the library differ"
        struct.pack_into("<Q", so, at, word & ~REUSE_MASK)
        cleared += 1
    Path(a.out).write_bytes(bytes(so))
    print(f"clear_reuse: {a.config} loop of {len(loop)} instructions from {loop[0][0]:#x}: "
          f"reuse flags cleared on {cleared} ({a.scope}) -> {a.out}")


if __name__ == "__main__":
    main()
