#!/usr/bin/env python3
"""A copy of a library whose register-epilogue E4M3 kernel (e4m3_block192) holds its ping-pong turn
CYCLES cycles longer: the stall counts (bits 41-44 of the high word) of the instructions just before
the key loop's turn-ending BAR.ARV raised (each to at most 11 or 13, the largest values ptxas itself writes), nothing else changed (a longer stall
never breaks a dependency). A test of whether the turn's length, which sets how far apart the two
consumer warpgroups' softmax phases run, is what separates the kernel's fast and slow operating
points (lab/perf-log.md, twenty-second session: every slower build since the uniform counter had
a shorter turn in schedule_metrics.py's turn_c, 331-352 cycles against the release's 373).
  python3 lab/sass/turn_pad.py LIB OUT_LIB CYCLES [--after]
--after: the control: the same cycles on the first such instructions after that BAR.ARV (this
warpgroup's own softmax starts later; the other's turn is not held).
"""
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reuse_patch import kernel_loop, open_kernel, write_and_relist  # noqa: E402
from schedule_metrics import hot_path  # noqa: E402


# Plain ALU instructions, whose stall field takes any value (a QGMMA's did not: nvdisasm refused
# the listing).
PADDABLE = {"FMUL", "FADD", "FFMA", "FMNMX", "IMAD", "MOV", "VIADD", "IADD3", "LOP3", "ISETP", "FSETP",
            "SEL", "FSEL", "SHF", "LEA"}


def turn_end(sass_path, after=False):
    """The hot path's instructions from its first BAR.SYNC to the BAR.ARV after it (exclusive),
    last first; after: those from that BAR.ARV on (exclusive), first first."""
    hot = hot_path(kernel_loop(sass_path))
    ops = [t.split()[0] for _, t, _ in hot]
    sync = next(i for i, o in enumerate(ops) if o.startswith("BAR.SYNC"))
    arv = next(i for i, o in enumerate(ops) if o.startswith("BAR.ARV") and i > sync)
    return hot[arv + 1:] if after else hot[sync + 1:arv][::-1]


def main():
    lib, out_lib, cycles = sys.argv[1], sys.argv[2], int(sys.argv[3])
    after = "--after" in sys.argv[4:]
    tmp, sass, blob, base = open_kernel(lib)
    left, patched = cycles, []
    for addr, text, _ in turn_end(sass, after):
        if left == 0:
            break
        if text.lstrip("@!P0123456789 ").split()[0].split(".")[0] not in PADDABLE:
            continue  # QGMMA and the like: their encodings refuse other stall values
        off = base + addr + 8
        hi, = struct.unpack_from("<Q", blob, off)
        stall = (hi >> 41) & 0xF
        # The stall field's largest values in ptxas's own listings: 11 beside the yield bit (45),
        # 13 without it; 15 with it set made nvdisasm refuse the encoding.
        add = max(0, min((11 if (hi >> 45) & 1 else 13) - stall, left))
        if add:
            struct.pack_into("<Q", blob, off, (hi & ~(0xF << 41)) | ((stall + add) << 41))
            patched.append((hex(addr), text.split()[0], stall, stall + add))
            left -= add
    if left:
        sys.exit(f"only {cycles - left} of {cycles} cycles fit {'after' if after else 'before'} the turn's BAR.ARV")
    a, b, diff = write_and_relist(blob, out_lib, tmp, sass)
    ok = len(a) == len(b) and all(x[0] == y[0] and x[1] == y[1] and (x[2] ^ y[2]) & ~(0xF << 41) == 0
                                  for x, y in diff)
    print(f"{out_lib}: +{cycles} stall cycles {'after' if after else 'in'} the turn, {patched}; the listing differs in "
          f"{len(diff)} instructions, {'only in bits 41-44' if ok else 'BEYOND bits 41-44'}")
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
