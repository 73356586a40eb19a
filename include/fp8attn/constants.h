// fp8attn constants query: the numbers a binding needs (layout constants, enum values, struct
// sizes and field offsets of the C ABI), read from the library itself so that no binding keeps
// a hand-made copy that can drift. python/fp8attn builds its ctypes structs and checks every
// field offset against this table when it loads the library.
//
//   double v;
//   fp8attn_constant("FP8ATTN_VT_PAD", &v);                           // 32
//   fp8attn_constant("offsetof(fp8attn_fwd_params, causal)", &v);     // byte offset
//   for (int i = 0; i < fp8attn_constant_count(); ++i) puts(fp8attn_constant_name(i));
//
// Names: every #define and enum value of fp8attn.h and quant.h by its own name;
// "FP8ATTN_HEAD_DIM" (the only head dim); "FP8ATTN_BUFFER_ALIGN" (the alignment, in bytes, of the
// buffers passed to fp8attn_kv_cache_init, fp8attn_q_quant_init and fp8attn_quantize_kv);
// "sizeof(T)" and "offsetof(T, field)" for every struct T of the C ABI. Values are exact in a
// double (integers below 2^53, and the two float constants).
#ifndef FP8ATTN_CONSTANTS_H_
#define FP8ATTN_CONSTANTS_H_

#include <stdint.h>

#include "fp8attn.h"

#ifdef __cplusplus
extern "C" {
#endif

// Number of entries in the table, and the name of entry i (NULL when i is out of range).
int32_t fp8attn_constant_count(void);
const char* fp8attn_constant_name(int32_t i);

// Value of the named constant. Unknown name: FP8ATTN_ERROR_INVALID_ARGUMENT, *value untouched.
fp8attn_status fp8attn_constant(const char* name, double* value);

// fp8attn_vt_key_at(p) as an exported symbol (the header's version is inline): the key of a
// 32-key group stored at V^T position p, or -1 when p is outside 0..31.
int32_t fp8attn_vt_key_index(int32_t p);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FP8ATTN_CONSTANTS_H_
