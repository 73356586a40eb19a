"""The binding against the library, without torch or a GPU: the constants table, the struct
layouts, the V^T key order, argument checks that need no device."""
from __future__ import annotations

import ctypes

import pytest


def test_every_struct_matches_the_library(lib, lib_module):
    # load() already ran check_layout; run it again explicitly and check it saw every struct.
    lib_module.check_layout(lib.constants)
    for cname, struct in lib_module.STRUCTS.items():
        assert lib.constants[f"sizeof({cname})"] == ctypes.sizeof(struct)
        for field, _ in struct._fields_:
            assert f"offsetof({cname}, {field})" in lib.constants, (cname, field)


def test_layout_check_catches_a_shifted_field(lib, lib_module):
    bad = dict(lib.constants)
    bad["offsetof(fp8attn_fwd_params, causal)"] += 4
    with pytest.raises(RuntimeError, match="fp8attn_fwd_params.causal"):
        lib_module.check_layout(bad)
    missing = {k: v for k, v in lib.constants.items() if k != "sizeof(fp8attn_kv_cache)"}
    with pytest.raises(RuntimeError, match="sizeof"):
        lib_module.check_layout(missing)
    extra = dict(lib.constants)
    extra["offsetof(fp8attn_q_quant, new_field)"] = 99
    with pytest.raises(RuntimeError, match="new_field"):
        lib_module.check_layout(extra)


def test_constants_are_the_headers_values(lib):
    # The header's documented values (fp8attn.h, quant.h); a change there must be deliberate.
    assert lib.constant("FP8ATTN_HEAD_DIM") == 128
    assert lib.constant("FP8ATTN_VT_PAD") == 32
    assert lib.constant("FP8ATTN_VT_KEY_GROUP") == 32
    assert lib.constant("FP8ATTN_K_SCALE_BLOCK") == 128
    assert lib.constant("FP8ATTN_BUFFER_ALIGN") == 256
    assert {lib.constant(n) for n in ("FP8ATTN_P_E4M3", "FP8ATTN_P_E4M3_HILO",
                                      "FP8ATTN_P_FP16", "FP8ATTN_P_E4M3_EXACT")} == {0, 1, 2, 3}
    assert lib.constant("FP8ATTN_P_EXACT_OFFSET_LOG2") == 8.0
    assert lib.constant("FP8ATTN_SUCCESS") == 0
    with pytest.raises(KeyError):
        lib.constant("FP8ATTN_NO_SUCH_THING")
    v = ctypes.c_double(-7.0)
    assert lib.fp8attn_constant(b"FP8ATTN_NO_SUCH_THING", ctypes.byref(v)) != 0
    assert v.value == -7.0  # untouched
    assert lib.fp8attn_constant_name(lib.fp8attn_constant_count()) is None
    assert lib.fp8attn_constant_name(-1) is None


def test_vt_key_order_is_a_permutation_of_the_documented_form(lib):
    order = lib.vt_key_order()
    assert sorted(order) == list(range(32))
    # fp8attn.h: p = 16*half + 4*quad + m holds key 16*half + 8*(m//2) + 2*quad + m%2.
    for p, key in enumerate(order):
        half, quad, m = p // 16, (p % 16) // 4, p % 4
        assert key == half * 16 + (m // 2) * 8 + quad * 2 + (m % 2)
    assert lib.fp8attn_vt_key_index(32) == -1 and lib.fp8attn_vt_key_index(-1) == -1


def test_check_fwd_params_names_the_bad_argument(lib, lib_module):
    p = lib_module.FwdParams()
    lib.fp8attn_fwd_params_init(ctypes.byref(p), 1, 16, 16, 2, 2, 64)
    status = lib.fp8attn_check_fwd_params(ctypes.byref(p))
    assert status == lib.constant("FP8ATTN_ERROR_INVALID_ARGUMENT")
    assert "head_dim" in lib.last_error("kernel")
    with pytest.raises(lib_module.Fp8AttnError, match="head_dim") as e:
        lib.check(status, "kernel")
    assert e.value.status == status


def test_params_init_fills_contiguous_strides(lib, lib_module):
    b, sq, sk, h, hkv = 3, 5, 7, 11, 1
    p = lib_module.FwdParams()
    ctypes.memset(ctypes.byref(p), 0x5A, ctypes.sizeof(p))
    lib.fp8attn_fwd_params_init(ctypes.byref(p), b, sq, sk, h, hkv, 128)
    assert (p.batch, p.seqlen_q, p.seqlen_k, p.heads, p.heads_kv) == (b, sq, sk, h, hkv)
    assert (p.q_stride_b, p.q_stride_s, p.q_stride_h) == (sq * h * 128, h * 128, 128)
    assert (p.k_stride_b, p.k_stride_s, p.k_stride_h) == (sk * hkv * 128, hkv * 128, 128)
    assert p.vt_seqlen_pad == 32 and p.q is None and p.lse is None and p.causal == 0
    assert abs(p.softmax_scale - 128 ** -0.5) < 1e-7


def test_quant_options_defaults_and_overrides(lib, lib_module):
    o = lib.quant_options()
    assert (o.smooth_k, o.smooth_v, o.hadamard_qk) == (1, 1, 1)
    assert o.k_scale == lib.constant("FP8ATTN_K_SCALE_HEAD") and o.hadamard_seed != 0
    o2 = lib.quant_options(hadamard_qk=0)
    assert o2.hadamard_qk == 0 and o2.smooth_k == 1
    with pytest.raises(TypeError, match="no_such"):
        lib.quant_options(no_such=1)


def test_buffer_sizes_grow_with_the_shape_and_refuse_bad_ones(lib):
    a = lib.fp8attn_kv_cache_bytes(1, 1000, 2, 128, 0)
    b = lib.fp8attn_kv_cache_bytes(1, 2000, 2, 128, 0)
    assert 0 < a < b and a % 256 == 0 and b % 256 == 0
    assert lib.fp8attn_kv_cache_bytes(1, 1000, 2, 64, 0) == 0
    assert lib.fp8attn_q_quant_bytes(0, 16, 2, 128) == 0
    assert lib.fp8attn_attention_workspace_bytes(1, 16, 0, 2, 2, 128) == 0


def test_kv_cache_init_refuses_a_misaligned_buffer(lib, lib_module):
    need = lib.fp8attn_kv_cache_bytes(1, 64, 1, 128, 0)
    cache = lib_module.KvCache()
    # A host address works here: init only carves the buffer, it touches no memory.
    status = lib.fp8attn_kv_cache_init(ctypes.byref(cache), 4096 + 16, need, 1, 64, 1, 128, 0)
    assert status == lib.constant("FP8ATTN_ERROR_INVALID_ARGUMENT")
    assert "256-byte aligned" in lib.last_error("quant")
    assert lib.fp8attn_kv_cache_init(ctypes.byref(cache), 4096 * 256, need, 1, 64, 1, 128, 0) == 0
    assert cache.vt_seqlen_pad == 64 and cache.k == 4096 * 256


def test_library_path_override_and_missing_library(lib_module, tmp_path, monkeypatch):
    monkeypatch.setenv("FP8ATTN_LIB", str(tmp_path / "nowhere.so"))
    assert lib_module.library_path() == tmp_path / "nowhere.so"
    with pytest.raises(OSError, match="cannot load"):
        lib_module.Library(tmp_path / "nowhere.so")
