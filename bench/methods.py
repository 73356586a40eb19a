"""The methods the harness times and measures: fp8attn through its public Python API (the
kernel alone on the harness's quantized inputs, one method per P precision) and PyTorch SDPA in
BF16 on its cuDNN and flash backends, all on the same data."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import fp8attn
from fp8attn.ops import prepare_attention_fwd

# method -> the library's fp8attn_p_precision name (its value is read from the library)
FP8_METHODS = {"fp8attn": "FP8ATTN_P_E4M3", "fp8attn_p_hilo": "FP8ATTN_P_E4M3_HILO",
               "fp8attn_p_fp16": "FP8ATTN_P_FP16"}
SDPA_METHODS = {"sdpa_cudnn_bf16": SDPBackend.CUDNN_ATTENTION,
                "sdpa_flash_bf16": SDPBackend.FLASH_ATTENTION}


def fp8attn_speed_factory(lib, p_precision: str):
    """lib: fp8attn.load(path) (loaded by the caller; the calls use the process's library)."""
    del lib

    def factory(shape, inputs):
        qz = inputs["quantized"]
        out = torch.empty((shape.b, shape.sq, shape.h, shape.d), dtype=torch.bfloat16, device="cuda")
        lse = torch.empty((shape.b, shape.h, shape.sq), dtype=torch.float32, device="cuda")
        launch = prepare_attention_fwd(qz.q8, qz.k8, qz.vt8, out, lse, q_descale=qz.q_descale,
                                       k_descale=qz.k_descale, v_descale=qz.v_descale,
                                       causal=shape.causal,
                                       p_precision=fp8attn.load().constant(p_precision))
        launch()  # raises with the library's message if refused

        def run():
            return launch(), inputs  # holds everything the launch points at
        return run
    return factory


def _sdpa_call(backend, q, k, v, causal, gqa):
    """q, k, v in SDPA's own (b, h, s, d) layout; returns O as (b, s, h, d)."""
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                              enable_gqa=gqa).transpose(1, 2)


def _sdpa_runner(backend, q, k, v, causal, notes: list, tag: str):
    """A callable running SDPA on `backend` on (b, s, h, d) data, given to SDPA as contiguous
    (b, h, s, d) copies made here, outside any timing: SDPA's native layout, the baseline's best
    case. If the backend refuses native GQA, K and V are expanded to h heads (same FLOPs; noted
    in the results)."""
    gqa = q.shape[2] != k.shape[2]
    q, k, v = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    try:
        _sdpa_call(backend, q, k, v, causal, gqa)
        return lambda: _sdpa_call(backend, q, k, v, causal, gqa)
    except RuntimeError as e:
        if not gqa:
            raise
        group = q.shape[1] // k.shape[1]
        ke, ve = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        _sdpa_call(backend, q, ke, ve, causal, False)
        notes.append(f"{tag}: {backend.name} refused enable_gqa ({str(e).splitlines()[0][:120]}); "
                     "K and V expanded to h heads")
        return lambda: _sdpa_call(backend, q, ke, ve, causal, False)


def sdpa_speed_factory(backend, notes: list):
    def factory(shape, inputs):
        q, k, v = inputs["bf16"]
        return _sdpa_runner(backend, q, k, v, shape.causal, notes, f"speed {shape}")
    return factory


def speed_methods(lib, notes: list) -> dict:
    methods = {name: fp8attn_speed_factory(lib, p) for name, p in FP8_METHODS.items()}
    methods.update({name: sdpa_speed_factory(be, notes) for name, be in SDPA_METHODS.items()})
    return methods


def accuracy_methods(lib, notes: list) -> dict:
    """name -> (kind, fn) as bench.accuracy.run_dataset takes them."""
    def fp8(p):
        def run(qz, causal):
            return fp8attn.attention_fwd(qz.q8, qz.k8, qz.vt8, q_descale=qz.q_descale,
                                         k_descale=qz.k_descale, v_descale=qz.v_descale,
                                         causal=causal, p_precision=fp8attn.load().constant(p))
        return ("fp8", run)

    def sdpa(backend, name):
        return ("bf16", lambda q, k, v, causal: _sdpa_runner(backend, q, k, v, causal, notes,
                                                             f"accuracy {name}")())
    methods = {name: fp8(p) for name, p in FP8_METHODS.items()}
    methods.update({name: sdpa(be, name) for name, be in SDPA_METHODS.items()})
    return methods
