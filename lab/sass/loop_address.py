#!/usr/bin/env python3
"""Where each build's key loop sits in its kernel (lab/sass/inner_loop.py's loop): start and end
address, the start modulo 128 bytes, the kernel's instruction count, and lab/sass/schedule_metrics.py's
static loop metrics beside them: for builds whose loops are statically alike but whose speeds
differ (lab/perf-log.md, twentieth session).
  python3 lab/sass/loop_address.py KERNEL TAG=LIB [TAG=LIB ...]
cuobjdump: as lab/sass/reuse_patch.py's.
"""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inner_loop import inner_loop, parse  # noqa: E402
from reuse_patch import listing  # noqa: E402
import schedule_metrics  # noqa: E402


def main():
    kernel, specs = sys.argv[1], sys.argv[2:]
    print(f"# lab/sass/loop_address.py {' '.join(sys.argv[1:])}")
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    keys = ("n_hot", "stall", "m4t2", "reuse", "exp_reused", "turn_i")
    print("tag | loop start | start mod 128 | loop end | kernel instructions | " + " | ".join(keys))
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            tag, lib = spec.split("=", 1)
            ins = parse(listing(lib, tmp, f"{kernel}.sm_90a")[1])
            body = inner_loop(ins)
            m = schedule_metrics.metrics(body)[0]
            print(f"{tag} | {body[0][0]:#x} | {body[0][0] % 128:#x} | {body[-1][0]:#x} | {len(ins)} | "
                  + " | ".join(str(m[k]) for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
