// TMA descriptors of the attention kernel's E4M3 operands.
#pragma once
#include <cuda.h>

namespace fp8attn::attn {

// 4-D E4M3 tensor map. dims/strides innermost first; strides in bytes for dims 1..3. False when
// the driver rejects the description (or has no cuTensorMapEncodeTiled).
bool make_tma_4d(CUtensorMap* map, const void* base, const cuuint64_t dims[4],
                 const cuuint64_t strides[3], const cuuint32_t box[4], CUtensorMapSwizzle swizzle);

}  // namespace fp8attn::attn
