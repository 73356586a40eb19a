#!/usr/bin/env python3
"""A copy of a library whose long-tile E4M3 kernel (e4m3_block192) has the key loop's convergence
regions beyond the release's first one made NOPs: each BSSY Bn and the BSYNC Bn that closes it
replaced by NOP with the same control bits, everything else byte for byte the same. A test of
whether that region costs speed where the warp is always converged (lab/perf-log.md,
twenty-second session: any wgmma in the drain makes ptxas put one around the loop's step_max
branch). Refuses when the barrier register has another use inside the region.
  python3 lab/sass/nop_patch.py LIB OUT_LIB
"""
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reuse_patch import kernel_loop, open_kernel, write_and_relist  # noqa: E402

NOP_LO = 0x0000000000007918  # NOP's low word (any listing's NOP)


def regions(sass_path):
    """Addresses of the loop's BSSY/BSYNC pairs after its first BSSY: each BSSY Bn and the next
    BSYNC Bn after it, with no other use of Bn between them."""
    loop = [(a, t) for a, t, _ in kernel_loop(sass_path)]
    starts = [i for i, (_, t) in enumerate(loop) if t.startswith("BSSY")]
    out = []
    for i in starts[1:]:
        bar = loop[i][1].split()[1].rstrip(",")
        j = next(k for k in range(i + 1, len(loop)) if bar in loop[k][1].replace(",", " ").split())
        if not loop[j][1].startswith("BSYNC"):
            sys.exit(f"{bar}: {loop[j][1]} between its BSSY and BSYNC")
        out += [loop[i][0], loop[j][0]]
    return out


def main():
    lib, out_lib = sys.argv[1:3]
    tmp, sass, blob, base = open_kernel(lib)
    addrs = regions(sass)
    for addr in addrs:
        hi, = struct.unpack_from("<Q", blob, base + addr + 8)
        struct.pack_into("<Q", blob, base + addr, NOP_LO)
        struct.pack_into("<Q", blob, base + addr + 8, hi & ~((1 << 41) - 1))  # control bits kept
    a, b, diff = write_and_relist(blob, out_lib, tmp, sass)
    ok = len(a) == len(b) and {x[0] for x, _ in diff} == set(addrs) and all(y[1].startswith("NOP") for _, y in diff)
    print(f"{out_lib}: {len(addrs)} instructions made NOP at {[hex(x) for x in addrs]}; "
          f"the listing differs in {len(diff)} instructions, {'only there' if ok else 'ELSEWHERE TOO'}")
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
