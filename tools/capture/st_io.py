"""safetensors with BF16 tensors, written and read without torch (NumPy has no bfloat16).

Layout: 8-byte little-endian header length N, N bytes of JSON header (padded with spaces to a
multiple of 8), raw little-endian data. BF16 tensors travel as uint16 codes in NumPy.
"""
from __future__ import annotations

import hashlib
import json
import struct

import numpy as np

NP_DTYPE = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32, "F64": np.float64,
            "U8": np.uint8, "I32": np.int32, "I64": np.int64}


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """FP32 -> BF16 codes (uint16), round to nearest even."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if not np.isfinite(x).all():
        raise ValueError("non-finite value in a tensor to be stored as BF16")
    u = x.view(np.uint32)
    rounded = u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def bf16_to_f32(codes: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(codes, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def write(path: str, tensors: dict[str, tuple[str, np.ndarray]], metadata: dict[str, str]) -> None:
    """tensors: name -> (dtype name, array whose bytes are that dtype's, e.g. BF16 as uint16)."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, arr) in tensors.items():
        arr = np.ascontiguousarray(arr)
        if arr.dtype != NP_DTYPE[dtype]:
            raise TypeError(f"{name}: {arr.dtype} does not hold {dtype}")
        blob = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def read(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack_from("<Q", buf, 0)
    header = json.loads(buf[8:8 + n])
    metadata = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        dt = np.dtype(NP_DTYPE[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(buf, dtype=dt, count=(b - a) // dt.itemsize,
                                  offset=base + a).reshape(info["shape"])
    return out, metadata


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_array(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()
