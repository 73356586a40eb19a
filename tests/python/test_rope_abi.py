"""The rope entry through the binding, without torch or a GPU: the tables' checks answer before
any device work, with a message naming the field (include/fp8attn/rope.h)."""
from __future__ import annotations

import ctypes

import pytest


def _tables(lib, lib_module, rows=8):
    buf = (ctypes.c_float * (rows * 64 + 4))()
    base = (ctypes.addressof(buf) + 15) // 16 * 16  # 16-byte aligned host stand-in
    r = lib_module.RopeTables()
    lib.fp8attn_rope_tables_init(ctypes.byref(r))
    r.cos = r.sin = base
    r.max_positions = rows
    return r, buf


def test_good_tables_pass(lib, lib_module):
    r, _keep = _tables(lib, lib_module)
    assert lib.fp8attn_check_rope_tables(ctypes.byref(r), 8, 8) == 0, lib.fp8attn_last_error()
    assert lib.fp8attn_last_error() in (b"", "")


@pytest.mark.parametrize("field,value,sq,sk,word", [
    ("style", 1, 8, 8, "GPT-J"),
    ("cos", None, 8, 8, "null"),
    ("max_positions", 0, 8, 8, "max_positions"),
    ("q_pos0", 1, 8, 8, "q_pos0"),
    ("q_pos0", -1, 1, 8, "q_pos0"),
    ("k_pos0", 5, 8, 4, "k_pos0"),
])
def test_bad_tables_are_refused_naming_the_field(lib, lib_module, field, value, sq, sk, word):
    r, _keep = _tables(lib, lib_module)
    setattr(r, field, value)
    status = lib.fp8attn_check_rope_tables(ctypes.byref(r), sq, sk)
    assert status == lib.constant("FP8ATTN_ERROR_INVALID_ARGUMENT")
    msg = lib.fp8attn_last_error()
    msg = msg.decode() if isinstance(msg, bytes) else msg
    assert word in msg, msg


def test_misaligned_table_is_refused(lib, lib_module):
    r, _keep = _tables(lib, lib_module)
    r.sin = r.sin + 4
    assert lib.fp8attn_check_rope_tables(ctypes.byref(r), 8, 8) != 0
    msg = lib.fp8attn_last_error()
    assert "aligned" in (msg.decode() if isinstance(msg, bytes) else msg)
