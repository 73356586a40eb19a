#!/usr/bin/env python3
"""Whether two builds of libfp8attn.so share each attention kernel's key loop byte for byte
(lab/sass/inner_loop.py's loop: instruction text with branch targets masked, and the control
bits), and how many NANOSLEEP instructions each kernel has: a check that a change outside the
consumers' loop (e.g. the producer's waits) left the loop ptxas scheduled alone.
  python3 lab/sass/loop_identity.py A.so B.so KERNEL...   (KERNEL = e4m3_block192, ...)
cuobjdump: as lab/sass/reuse_patch.py's (CUOBJDUMP, else the nvidia-cuda-cuobjdump wheel's in /tmp/cuobj).
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inner_loop import inner_loop, parse  # noqa: E402
from reuse_patch import listing  # noqa: E402  (a kernel's cubin out of a library, and its listing)


def loop_signature(body):
    """A key loop's identity: its instruction texts with addresses masked, and its control words."""
    return [re.sub(r"0x[0-9a-f]+", "X", t) for _, t, _ in body], [h for _, _, h in body]


def main():
    a, b, kernels = sys.argv[1], sys.argv[2], sys.argv[3:]
    print(f"# lab/sass/loop_identity.py {a} {b} {' '.join(kernels)}")
    with tempfile.TemporaryDirectory() as tmp:
        for k in kernels:
            sig = []
            for lib in (a, b):
                path = listing(lib, tmp, f"{k}.sm_90a")[1]
                body = inner_loop(parse(path))
                sleeps = sum("NANOSLEEP" in line for line in open(path))
                sig.append(((None, None) if body is None else loop_signature(body), sleeps))
            (la, sa), (lb, sb) = sig
            same = la[0] is not None and la == lb
            n = len(la[0]) if la[0] else 0
            print(f"{k}: key loop {'identical' if same else 'DIFFERENT'} ({n} / {len(lb[0]) if lb[0] else 0} "
                  f"instructions); NANOSLEEP {sa} / {sb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
