"""torch.compile (inductor, dynamic sequence lengths), CUDA graph capture and opcheck of every
custom op, on an sm_90 GPU."""
from __future__ import annotations

from gpu_common import has_sm90, needs_sm90, randn_qkv

pytestmark = needs_sm90

if has_sm90():
    import torch

    import fp8attn


def same(a, b) -> bool:
    return torch.equal(a.view(torch.int16), b.view(torch.int16)) if a.dtype == torch.bfloat16 \
        else torch.equal(a, b)


def test_inductor_dynamic_seqlens_match_eager():
    torch._dynamo.reset()

    def block(q, k, v):  # attention after an op inductor generates code for
        return fp8attn.attention(q * 1.0, k, v, causal=True)

    compiled = torch.compile(block, backend="inductor", fullgraph=True, dynamic=True)
    for i, s in enumerate((256, 384, 1000)):
        q, k, v = randn_qkv(1, s, s, 12, 2, seed_offset=30 + i)
        got, want = compiled(q, k, v), block(q, k, v)
        assert same(got[0], want[0]) and same(got[1], want[1]), f"seqlen {s}"
        if i == 0:  # the next lengths must reuse the dynamic graph
            torch._dynamo.config.error_on_recompile = True
    torch._dynamo.config.error_on_recompile = False


def test_inductor_fa3_entry_and_cache_flow():
    torch._dynamo.reset()
    q, k, v = randn_qkv(2, 300, 300, 8, 2, seed_offset=40)
    qz = fp8attn.quantize_per_head(q, k, v)
    qd = qz.q_descale[:, ::4].contiguous()

    def fa3(q8, k8, v8):
        return fp8attn.attention_fp8(q8, k8, v8, q_descale=qd, k_descale=qz.k_descale,
                                     v_descale=qz.v_descale, causal=True)

    got, want = torch.compile(fa3, fullgraph=True)(qz.q8, qz.k8, qz.v8), fa3(qz.q8, qz.k8, qz.v8)
    assert same(got[0], want[0]) and same(got[1], want[1])
    cache = fp8attn.quantize_kv(k, v)

    def with_cache(q):
        return fp8attn.attention(q, cache, causal=True)

    got, want = torch.compile(with_cache, fullgraph=True)(q), with_cache(q)
    assert same(got[0], want[0]) and same(got[1], want[1])


def test_cuda_graph_capture_and_replay():
    q, k, v = randn_qkv(1, 512, 512, 12, 2, seed_offset=50)
    sq, sk, sv = q.clone(), k.clone(), v.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up: first-call allocations happen outside the capture
        for _ in range(2):
            fp8attn.attention(sq, sk, sv, causal=True)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out, lse = fp8attn.attention(sq, sk, sv, causal=True)
    for i in range(3):  # new inputs each replay
        q2, k2, v2 = randn_qkv(1, 512, 512, 12, 2, seed_offset=51 + i)
        sq.copy_(q2), sk.copy_(k2), sv.copy_(v2)
        g.replay()
        want_o, want_l = fp8attn.attention(q2, k2, v2, causal=True)
        torch.cuda.synchronize()
        assert same(out, want_o) and same(lse, want_l), f"replay {i}"


def _opcheck(op, args, utils):
    torch.library.opcheck(op, args, test_utils=utils)


BF16_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
              "test_aot_dispatch_dynamic")
# test_schema re-runs the op on inputs perturbed by mul, which torch lacks for float8_e4m3fn.
FP8_UTILS = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def test_opcheck_every_op():
    from fp8attn import prepass_ops
    q, k, v = randn_qkv(1, 192, 256, 4, 2, seed_offset=60)
    quant, scale = prepass_ops.quant_list(), 128 ** -0.5
    _opcheck(torch.ops.fp8attn.attention.default, (q, k, v, quant, scale, True, 0), BF16_UTILS)
    _opcheck(torch.ops.fp8attn.quantize_kv.default, (k, v, quant), BF16_UTILS)
    cache = fp8attn.quantize_kv(k, v)
    _opcheck(torch.ops.fp8attn.attention_kvcache.default,
             (q, *cache.tensors(), quant, scale, True, 0), FP8_UTILS)
    qz = fp8attn.quantize_per_head(q, k, v)
    _opcheck(torch.ops.fp8attn.attention_fp8.default,
             (qz.q8, qz.k8, qz.v8, qz.q_descale[:, ::2].contiguous(), qz.k_descale,
              qz.v_descale, scale, True, 0), FP8_UTILS)
    _opcheck(torch.ops.fp8attn.attention_fwd.default,
             (qz.q8, qz.k8, qz.vt8, qz.q_descale, qz.k_descale, qz.v_descale, None, None, scale,
              True, 0), FP8_UTILS)
