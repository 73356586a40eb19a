"""Driver for lab/probes/ncu_prepass.sh: the pre-pass at the seed shape (b=2, s=8192,
h=32/32), warmed up, then inside the profiler range: fp8attn_quantize_qkv (statistics, finalize,
K/V pass, Q pass; at cb2e8d6 one launch for Q, K and V), the two separate calls (statistics, finalize, K/V pass, Q pass) with the
defaults, and the separate calls without the rotation (the unrotated Q pass beside the rotated).
"""
import sys

import torch

from prepass_setup import SeedPrepass


def main() -> None:
    sp = SeedPrepass(sys.argv[1])
    default, plain = sp.options(), sp.options(hadamard_qk=0)
    qkv, split = sp.qkv, sp.split

    for _ in range(3):
        qkv(default), split(default), split(plain)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    qkv(default)
    split(default)
    split(plain)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
