// The end-to-end call's arguments for contiguous (batch, seq, heads, 128) BF16 q, k, v and
// contiguous O / LSE buffers: what the GPU tests of fp8attn_attention build around their own data.
#pragma once
#include <cstdint>

#include "fp8attn/attention.h"

namespace fp8attn::test {

inline fp8attn_attention_args contiguous_attention_args(void* q, void* k, void* v, void* o,
                                                        float* lse, int b, int sq, int sk, int h,
                                                        int h_kv) {
  constexpr int d = 128;
  fp8attn_attention_args a;
  fp8attn_attention_args_init(&a);
  a.q = {q, b, sq, h, d, int64_t(sq) * h * d, int64_t(h) * d, d};
  a.k = {k, b, sk, h_kv, d, int64_t(sk) * h_kv * d, int64_t(h_kv) * d, d};
  a.v = {v, b, sk, h_kv, d, int64_t(sk) * h_kv * d, int64_t(h_kv) * d, d};
  a.o = o, a.lse = lse;
  return a;
}

}  // namespace fp8attn::test
