"""fp8attn.attention_rope and fp8attn.rope refuse every class of bad argument with a TypeError or
ValueError naming it, before any device work: the tables' dtype, shape, layout and device, the
positions (type, sign, rows past the tables), and q, k, v as attention() checks them. Meta
tensors stand in for CUDA ones, so these run without a GPU; the no-GPU and wrong-device cases use
CPU tensors."""
from __future__ import annotations

import pytest

from conftest import have_torch, library_available

pytestmark = [pytest.mark.skipif(not have_torch(), reason="torch is not installed"),
              pytest.mark.skipif(not library_available(), reason="no libfp8attn.so")]

if have_torch():
    import torch

    import fp8attn

POS = 200  # table rows


def meta(*shape, dtype=None):
    return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")


def qkv(b=2, sq=64, sk=96, h=8, h_kv=2, dtype=None):
    return (meta(b, sq, h, 128, dtype=dtype), meta(b, sk, h_kv, 128, dtype=dtype),
            meta(b, sk, h_kv, 128, dtype=dtype))


def tables(rows=POS, half=64, dtype=None):
    return meta(rows, half, dtype=dtype or torch.float32), meta(rows, half, dtype=dtype or torch.float32)


def test_good_arguments_give_the_documented_shapes():
    q, k, v = qkv()
    cos, sin = tables()
    out, lse = fp8attn.attention_rope(q, k, v, cos, sin, q_pos0=POS - 64, k_pos0=POS - 96, causal=True)
    assert out.shape == (2, 64, 8, 128) and out.dtype == torch.bfloat16
    assert lse.shape == (2, 8, 64) and lse.dtype == torch.float32
    out16, _ = fp8attn.attention_rope(*qkv(dtype=torch.float16), cos, sin, mode="fp16",
                                      quant={"smooth_k": 0})
    assert out16.dtype == torch.float16
    r = fp8attn.rope(k, cos, sin, pos0=POS - 96)
    assert r.shape == k.shape and r.dtype == torch.bfloat16 and r.is_contiguous()


@pytest.mark.parametrize("name", ["cos", "sin"])
@pytest.mark.parametrize("dtype", ["float64", "bfloat16", "float16"])
def test_table_dtype(name, dtype):
    t = dict(zip(("cos", "sin"), tables()))
    t[name] = t[name].to(getattr(torch, dtype))
    with pytest.raises(TypeError, match=f"^{name} must be float32, got {dtype}"):
        fp8attn.attention_rope(*qkv(), t["cos"], t["sin"])
    with pytest.raises(TypeError, match=f"^{name} must be float32, got {dtype}"):
        fp8attn.rope(qkv()[0], t["cos"], t["sin"])


@pytest.mark.parametrize("name", ["cos", "sin"])
def test_table_shape_and_layout(name):
    good = dict(zip(("cos", "sin"), tables()))

    def call(bad):
        t = dict(good, **{name: bad})
        return fp8attn.attention_rope(*qkv(), t["cos"], t["sin"])
    with pytest.raises(ValueError, match=f"^{name} must have 2 dims"):
        call(meta(1, POS, 64, dtype=torch.float32))
    with pytest.raises(ValueError, match=rf"^{name} must have shape \(positions, 64\)"):
        call(meta(POS, 128, dtype=torch.float32))  # the (positions, 128) cache of transformers
    with pytest.raises(ValueError, match=rf"^{name} must have shape \(positions, 64\)"):
        call(meta(0, 64, dtype=torch.float32))
    with pytest.raises(ValueError, match=f"^{name} must be contiguous"):
        call(meta(64, POS, dtype=torch.float32).t())
    with pytest.raises(ValueError, match="^cos and sin must have the same shape"):
        call(meta(POS + 8, 64, dtype=torch.float32))
    with pytest.raises(TypeError, match=f"^{name} must be a torch.Tensor"):
        call([[1.0] * 64] * POS)


@pytest.mark.parametrize("field", ["q_pos0", "k_pos0"])
def test_positions(field):
    q, k, v = qkv()
    cos, sin = tables()
    n = {"q_pos0": 64, "k_pos0": 96}[field]
    with pytest.raises(ValueError, match=f"^{field} must be >= 0"):
        fp8attn.attention_rope(q, k, v, cos, sin, **{field: -1})
    with pytest.raises(TypeError, match=f"^{field} must be an int, got bool"):
        fp8attn.attention_rope(q, k, v, cos, sin, **{field: True})
    with pytest.raises(TypeError, match=f"^{field} must be an int, got float"):
        fp8attn.attention_rope(q, k, v, cos, sin, **{field: 1.0})
    with pytest.raises(ValueError, match=rf"^{field} \+ {n} rows = {POS + 1} is past the tables' {POS}"):
        fp8attn.attention_rope(q, k, v, cos, sin, **{field: POS - n + 1})
    fp8attn.attention_rope(q, k, v, cos, sin, **{field: POS - n})  # the last row that fits


def test_rope_alone():
    cos, sin = tables()
    x = meta(2, 64, 8, 128)
    with pytest.raises(TypeError, match="^x must be bfloat16, got float16"):
        fp8attn.rope(x.half(), cos, sin)
    with pytest.raises(ValueError, match="^x: head dim must be 128"):
        fp8attn.rope(meta(2, 64, 8, 64), cos, sin)
    with pytest.raises(ValueError, match="^x must have 4 dims"):
        fp8attn.rope(x[0], cos, sin)
    with pytest.raises(ValueError, match=rf"^pos0 \+ 64 rows = {POS + 1} is past"):
        fp8attn.rope(x, cos, sin, pos0=POS - 63)
    with pytest.raises(ValueError, match="^pos0 must be >= 0"):
        fp8attn.rope(x, cos, sin, pos0=-3)


def test_qkv_are_checked_as_attention_does():
    q, k, v = qkv()
    cos, sin = tables()
    with pytest.raises(TypeError, match="^q must be bfloat16, float16, got float32"):
        fp8attn.attention_rope(q.float(), k, v, cos, sin)
    with pytest.raises(TypeError, match="share a dtype"):
        fp8attn.attention_rope(q, k.half(), v.half(), cos, sin)
    with pytest.raises(ValueError, match=r"q's heads \(8\) must be a multiple of k's heads \(3\)"):
        fp8attn.attention_rope(q, meta(2, 96, 3, 128), meta(2, 96, 3, 128), cos, sin)
    with pytest.raises(ValueError, match="no keys"):
        fp8attn.attention_rope(q, k[:, :0], v[:, :0], cos, sin)
    with pytest.raises(ValueError, match="mode must be one of"):
        fp8attn.attention_rope(q, k, v, cos, sin, mode="fp8")
    with pytest.raises(TypeError, match="unknown quantization option 'smooth'"):
        fp8attn.attention_rope(q, k, v, cos, sin, quant={"smooth": 0})


def test_devices():
    cpu_tables = (torch.zeros(POS, 64), torch.zeros(POS, 64))
    with pytest.raises(ValueError, match="^cos is on cpu but q is on meta"):
        fp8attn.attention_rope(*qkv(), *cpu_tables)
    q, k, v = (torch.zeros(1, 16, 2, 128, dtype=torch.bfloat16) for _ in range(3))
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="q must be on a CUDA device"):
            fp8attn.attention_rope(q, k, v, *cpu_tables)
        cuda_q, cuda_k, cuda_v = q.cuda(), k.cuda(), v.cuda()
        with pytest.raises(ValueError, match="^sin is on cpu but q is on cuda"):
            fp8attn.attention_rope(cuda_q, cuda_k, cuda_v, cpu_tables[0].cuda(), cpu_tables[1])
    else:
        # No GPU at all: the library's own UNSUPPORTED_DEVICE, before anything else.
        with pytest.raises(fp8attn.Fp8AttnError, match="FP8ATTN_ERROR_UNSUPPORTED_DEVICE"):
            fp8attn.attention_rope(q, k, v, *cpu_tables)
        with pytest.raises(fp8attn.Fp8AttnError, match="FP8ATTN_ERROR_UNSUPPORTED_DEVICE"):
            fp8attn.rope(q, *cpu_tables)
