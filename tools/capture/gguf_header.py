"""Reads only a GGUF's header and tensor table, so that a truncated file can be measured: the
size the file must have, from its own tensor table, against the bytes that exist."""
from __future__ import annotations

import struct

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Cursor:
    def __init__(self, f):
        self.f = f

    def take(self, fmt: str):
        n = struct.calcsize("<" + fmt)
        data = self.f.read(n)
        if len(data) != n:
            raise ValueError("the header itself is truncated")
        return struct.unpack("<" + fmt, data)[0]

    def string(self) -> str:
        return self.f.read(self.take("Q")).decode("utf-8", "replace")

    def value(self, vtype: int):
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype, n = self.take("I"), self.take("Q")
            return [self.value(etype) for _ in range(n)]
        return self.take(_SCALAR[vtype])


def expected_size(path: str) -> dict:
    """{'n_tensors', 'expected_bytes', 'tensor_data_start', 'kv': {key: scalar}}."""
    with open(path, "rb") as f:
        c = _Cursor(f)
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        c.take("I")  # version
        n_tensors, n_kv = c.take("Q"), c.take("Q")
        kv = {}
        for _ in range(n_kv):
            key = c.string()
            val = c.value(c.take("I"))
            if not isinstance(val, list):
                kv[key] = val
        infos = []
        for _ in range(n_tensors):
            name = c.string()
            dims = [c.take("Q") for _ in range(c.take("I"))]
            infos.append((name, dims, c.take("I"), c.take("Q")))
        align = int(kv.get("general.alignment", 32))
        start = (f.tell() + align - 1) // align * align
    end = 0
    for _, dims, ttype, offset in infos:
        block, nbytes = GGML_QUANT_SIZES[GGMLQuantizationType(ttype)]
        end = max(end, offset + int(np.prod(dims)) // block * nbytes)
    return {"n_tensors": n_tensors, "tensor_data_start": start, "expected_bytes": start + end, "kv": kv}
