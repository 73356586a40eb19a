"""Every class of bad argument the Python side checks (the C ABI cannot see them): a TypeError or
ValueError naming the argument, raised before any device work. Meta tensors stand in for CUDA
ones, so these run without a GPU; the no-GPU and wrong-device cases use CPU tensors."""
from __future__ import annotations

import pytest

from conftest import have_torch, library_available

pytestmark = [pytest.mark.skipif(not have_torch(), reason="torch is not installed"),
              pytest.mark.skipif(not library_available(), reason="no libfp8attn.so")]

if have_torch():
    import torch

    import fp8attn

BF16 = "bfloat16"


def meta(*shape, dtype=None):
    return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")


def qkv(b=2, sq=64, sk=96, h=8, h_kv=2, d=128, dtype=None):
    return meta(b, sq, h, d, dtype=dtype), meta(b, sk, h_kv, d, dtype=dtype), meta(b, sk, h_kv, d, dtype=dtype)


def test_good_arguments_give_the_documented_shapes():
    q, k, v = qkv()
    out, lse = fp8attn.attention(q, k, v, causal=True)
    assert out.shape == (2, 64, 8, 128) and out.dtype == torch.bfloat16
    assert lse.shape == (2, 8, 64) and lse.dtype == torch.float32
    out16, _ = fp8attn.attention(*qkv(dtype=torch.float16))
    assert out16.dtype == torch.float16
    cache = fp8attn.quantize_kv(k, v)
    assert cache.k.shape == (2, 96, 2, 128) and cache.vt.shape == (2, 2, 128, 96)
    assert cache.k_descale.shape == (2, 2, 1) and cache.v_mean.shape == (2, 2, 128)
    out2, lse2 = fp8attn.attention(q, cache, causal=True, mode="fp16")
    assert out2.shape == out.shape and lse2.shape == lse.shape
    e4 = torch.float8_e4m3fn
    q8, k8, v8 = qkv(dtype=e4)
    d = meta(2, 2, dtype=torch.float32)
    o8, l8 = fp8attn.attention_fp8(q8, k8, v8, q_descale=d, k_descale=d, v_descale=d)
    assert o8.shape == (2, 64, 8, 128) and o8.dtype == torch.bfloat16 and l8.shape == (2, 8, 64)


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_dtype(name):
    args = dict(zip("qkv", qkv()))
    args[name] = args[name].to(torch.float32)
    with pytest.raises(TypeError, match=f"^{name} must be bfloat16, float16, got float32"):
        fp8attn.attention(args["q"], args["k"], args["v"])
    e5 = dict(zip("qkv", qkv(dtype=torch.float8_e4m3fn)))
    e5[name] = e5[name].view(torch.float8_e5m2)
    with pytest.raises(TypeError, match=f"^{name} must be float8_e4m3fn, got float8_e5m2"):
        fp8attn.attention_fp8(e5["q"], e5["k"], e5["v"])


def test_mixed_dtypes_and_not_a_tensor():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="share a dtype"):
        fp8attn.attention(q, k.to(torch.float16), v.to(torch.float16))
    with pytest.raises(TypeError, match="^k must be a torch.Tensor"):
        fp8attn.attention(q, 3, v)
    with pytest.raises(TypeError, match="v is missing"):
        fp8attn.attention(q, k)


@pytest.mark.parametrize("case, match", [
    (dict(d=64), "q: head dim must be 128"),
])
def test_head_dim(case, match):
    with pytest.raises(ValueError, match=match):
        fp8attn.attention(*qkv(**case))


def test_shape_agreement():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="k: batch 1 differs from q's batch 2"):
        fp8attn.attention(q, k[:1], v[:1])
    with pytest.raises(ValueError, match=r"q's heads \(8\) must be a multiple of k's heads \(3\)"):
        fp8attn.attention(q, meta(2, 96, 3, 128), meta(2, 96, 3, 128))
    with pytest.raises(ValueError, match="k and v must have the same shape"):
        fp8attn.attention(q, k, v[:, :50])
    with pytest.raises(ValueError, match="must have 4 dims"):
        fp8attn.attention(q[0], k, v)
    with pytest.raises(ValueError, match="no keys"):
        fp8attn.attention(q, k[:, :0], v[:, :0])


def test_last_dim_contiguity():
    q, k, v = qkv()
    qt = meta(2, 64, 128, 8).transpose(2, 3)  # (2, 64, 8, 128) with stride 8 on the last dim
    with pytest.raises(ValueError, match="q: the last dim must be contiguous"):
        fp8attn.attention(qt, k, v)
    # A non-contiguous view with a contiguous last dim is fine (transformers' (b, h, s, d)).
    out, _ = fp8attn.attention(meta(2, 8, 64, 128).transpose(1, 2), k, v)
    assert out.shape == (2, 64, 8, 128)


def test_mode_and_scale():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="mode must be one of"):
        fp8attn.attention(q, k, v, mode="fp8")
    with pytest.raises(TypeError, match="mode must be one of"):
        fp8attn.attention(q, k, v, mode=2)
    with pytest.raises(ValueError, match="softmax_scale must be finite and > 0"):
        fp8attn.attention(q, k, v, softmax_scale=-1.0)
    with pytest.raises(ValueError, match="softmax_scale must be finite and > 0"):
        fp8attn.attention(q, k, v, softmax_scale=float("nan"))
    with pytest.raises(TypeError, match="unknown quantization option 'smooth'"):
        fp8attn.attention(q, k, v, quant={"smooth": 0})


def test_fp8_descales():
    q8, k8, v8 = qkv(dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match=r"k_descale must have shape \(2, 2\), got \(2, 8\)"):
        fp8attn.attention_fp8(q8, k8, v8, k_descale=meta(2, 8, dtype=torch.float32))
    with pytest.raises(TypeError, match="q_descale must be float32"):
        fp8attn.attention_fp8(q8, k8, v8, q_descale=meta(2, 2))


def test_cache_agreement():
    q, k, v = qkv()
    cache = fp8attn.quantize_kv(k, v)
    with pytest.raises(ValueError, match="batch"):
        fp8attn.attention(q[:1], cache)
    with pytest.raises(ValueError, match="multiple of the cache's heads_kv"):
        fp8attn.attention(meta(2, 64, 3, 128), cache)
    with pytest.raises(TypeError, match="takes no v"):
        fp8attn.attention(q, cache, v)


def test_kernel_entry_out_and_lse():
    q8, k8, _ = qkv(dtype=torch.float8_e4m3fn)
    vt = meta(2, 2, 128, 96, dtype=torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="out must be bfloat16"):
        fp8attn.attention_fwd(q8, k8, vt, out=meta(2, 64, 8, 128, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"out must have shape \(2, 64, 8, 128\)"):
        fp8attn.attention_fwd(q8, k8, vt, out=meta(2, 64, 4, 128))
    with pytest.raises(ValueError, match=r"lse must have shape \(2, 8, 64\)"):
        fp8attn.attention_fwd(q8, k8, vt, lse=meta(2, 64, 8, dtype=torch.float32))
    with pytest.raises(TypeError, match="lse must be float32"):
        fp8attn.attention_fwd(q8, k8, vt, lse=meta(2, 8, 64))
    with pytest.raises(ValueError, match=r"vt's heads \(3\) must equal k's heads \(2\)"):
        fp8attn.attention_fwd(q8, k8, meta(2, 3, 128, 96, dtype=torch.float8_e4m3fn))


def test_device_checks():
    q, k, v = (torch.zeros(1, 16, 2, 128, dtype=torch.bfloat16) for _ in range(3))
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="q must be on a CUDA device"):
            fp8attn.attention(q, k, v)
        with pytest.raises(ValueError, match="k is on cpu but q is on cuda"):
            fp8attn.attention(q.cuda(), k, v.cuda())
    else:
        # No GPU at all: the library's own UNSUPPORTED_DEVICE, before anything else.
        with pytest.raises(fp8attn.Fp8AttnError, match="FP8ATTN_ERROR_UNSUPPORTED_DEVICE") as e:
            fp8attn.attention(q, k, v)
        assert e.value.status == fp8attn.load().constant("FP8ATTN_ERROR_UNSUPPORTED_DEVICE")
