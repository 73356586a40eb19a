// Warpgroup-level primitives: wgmma ordering, register reallocation, named barriers,
// shared-memory matrix descriptors.
#pragma once
#include <cstdint>

namespace fp8attn::ptx {

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Pins a register in place so the compiler does not move its reads/writes across an async wgmma
// that is still writing (or reading) it.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_operand(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
// The same for every register of an array (an accumulator or a fragment set).
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(r[i]);
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(r[i]);
}

template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

// Orders this thread's ordinary shared-memory writes before later async-proxy reads (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Named barriers (id 0 is __syncthreads). sync waits; arrive signals without waiting.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Shared-memory matrix descriptor of a K-major tile whose rows are kSwizzleBytes long (128: Q and K,
// 64: the V^T atoms), swizzled over kSwizzleBytes: 8-row groups are 8 * kSwizzleBytes apart (SBO);
// the leading offset is unused because one wgmma's K (32 bytes) stays inside the swizzle atom.
// Bits: [0,14) addr>>4, [16,30) LBO>>4, [32,46) SBO>>4, [62,64) layout (1 = 128B, 2 = 64B swizzle).
template <int kSwizzleBytes>
struct DescKMajor {
  static_assert(kSwizzleBytes == 128 || kSwizzleBytes == 64, "the kernel uses 128B and 64B swizzles");
  static constexpr uint32_t kLayout = kSwizzleBytes == 128 ? 1 : 2;
  // The upper 32 bits: SBO and layout, constants.
  static constexpr uint32_t kHi = ((8 * kSwizzleBytes) >> 4) | (kLayout << 30);
  // The lower 32 bits: start address and LBO. The address field is 14 bits of addr >> 4 (shared
  // memory < 256 KiB), so offsets inside a tile are 32-bit adds to lo (no carry into hi).
  __device__ __forceinline__ static uint32_t lo(uint32_t smem_byte_addr) {
    return ((smem_byte_addr & 0x3FFFF) >> 4) | (1u << 16);
  }
  __device__ __forceinline__ static uint64_t make(uint32_t lo_bits) {
    return (static_cast<uint64_t>(kHi) << 32) | lo_bits;
  }
};
template <int kSwizzleBytes>
__device__ __forceinline__ uint64_t make_desc_kmajor(uint32_t smem_byte_addr) {
  return DescKMajor<kSwizzleBytes>::make(DescKMajor<kSwizzleBytes>::lo(smem_byte_addr));
}

}  // namespace fp8attn::ptx
