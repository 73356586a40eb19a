// Lab probe (GPU; standalone): the synthetic key loop of lab/probes/pvwg_probe.cu (its A16 / A8
// modes), climbed toward the kernel one piece at a time (lab/perf-log.md, twenty-sixth session):
//   bare:  two consumer warpgroups only (256 threads, no register cap): pvwg_probe's A16 / A8;
//   cap:   a third, idle producer warpgroup and setmaxnreg 24 / 240 as the kernel's (384 threads);
//   ring:  cap, and the producer's warp 0 loads every block's K (24 KiB) and V (FP16 V^T with its
//          ones rows, 51 KiB; E4M3 V^T atoms with theirs, 27 KiB) from global memory into
//          two-stage rings with bulk copies and mbarriers, the consumers waiting for each and
//          releasing it as the kernel does.
//   S16 (twenty-eighth session): A16 with P stored to shared memory (stmatrix, after the P V
//          wait) and the P V issued from it (12 x m64n136k16 SS), so that no P register is
//          live across the softmax and the wgmma reads no register file while it runs.
// Cycles per key block, median over one CTA per SM.
//   nvcc -std=c++20 -gencode=arch=compute_90a,code=sm_90a -O3 -I src -I lab/probes -o /tmp/ladder lab/probes/ladder_probe.cu
//   /tmp/ladder OUT.json
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#include "ptx/convert.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/warpgroup.cuh"
#include "ptx/wgmma_f16.cuh"
#include "ptx/wgmma_fp8.cuh"
#include "synthetic_loop.cuh"

namespace ptx = fp8attn::ptx;
using D = ptx::DescKMajor<128>;

constexpr int kBlocks = 128, kWarm = 16;
constexpr int kKBytes = 24576, kV16Bytes = 3 * 17408, kV8Bytes = 3 * 9216;
// Shared memory: Q [2][64][128 B], K ring [2][24 KiB], V ring [2][51 KiB], P [2][3][64][128 B]
// (S16 only), barriers.
constexpr int kQ = 0, kK = 16384, kV = kK + 2 * kKBytes, kP = kV + 2 * kV16Bytes, kBars = kP + 2 * 24576;
static_assert(kP % 1024 == 0, "P's 128-byte swizzle needs 1024-byte alignment");
constexpr int kSmem = kBars + 128 + 1024;

using synth::softmax;


__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(ptx::smem_addr(bar)) : "memory");
}

// kP16: FP16 P V (accurate) or E4M3 (default). kStage: 0 bare, 1 cap, 2 ring. kSS (FP16 only):
// P through shared memory and an SS P V (S16).
template <bool kP16, int kStage, bool kSS = false>
__global__ void __launch_bounds__(kStage == 0 ? 256 : 384, 1)
loop(unsigned long long* out, const uint8_t* gsrc, size_t gbytes, float scale) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  for (int i = threadIdx.x; i < kBars / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + kBars);  // k_full[2], k_empty[2], v_full[2], v_empty[2]
  uint64_t *k_full = bars, *k_empty = bars + 2, *v_full = bars + 4, *v_empty = bars + 6;
  if (threadIdx.x == 0) {
    for (int i = 0; i < 2; ++i) {
      ptx::mbar_init(&k_full[i], 1);
      ptx::mbar_init(&v_full[i], 1);
      ptx::mbar_init(&k_empty[i], 8);  // one arrive per consumer warp
      ptx::mbar_init(&v_empty[i], 8);
    }
    ptx::mbar_fence_init();
  }
  ptx::fence_proxy_async_shared();
  __syncthreads();
  constexpr int kCons0 = kStage == 0 ? 0 : 1;  // the first consumer warpgroup
  const int wg_all = threadIdx.x / 128, t128 = threadIdx.x % 128;
  const uint32_t base = ptx::smem_addr(smem);
  constexpr uint32_t kVBytes = kP16 ? kV16Bytes : kV8Bytes;
  unsigned long long t0 = 0, t1 = 0;
  if (kStage > 0 && wg_all == 0) {  // producer warpgroup
    ptx::setmaxnreg_dec<24>();
    if (kStage == 2 && t128 == 0) {
      // Every CTA reads the same L2-resident buffer from its own offset (the kernel's K / V blocks
      // are read by many query tiles: mostly L2 hits).
      const uint8_t* src = gsrc;
      const size_t per_cta = gbytes;
      size_t off = (size_t(blockIdx.x) * 196608) % (gbytes / 2);
      for (int j = 0; j < kBlocks; ++j) {
        const int st = j % 2;
        const uint32_t ph = ((j / 2) & 1) ^ 1;
        ptx::mbar_wait(&k_empty[st], ph);
        if (off + kKBytes + kVBytes > per_cta) off = 0;  // wrap
        ptx::mbar_arrive_expect_tx(&k_full[st], kKBytes);
        bulk_load(base + kK + st * kKBytes, src + off, kKBytes, &k_full[st]);
        off += kKBytes;
        ptx::mbar_wait(&v_empty[st], ph);
        ptx::mbar_arrive_expect_tx(&v_full[st], kVBytes);
        bulk_load(base + kV + st * kV16Bytes, src + off, kVBytes, &v_full[st]);
        off += kVBytes;
      }
    }
    return;
  }
  if constexpr (kStage > 0) ptx::setmaxnreg_inc<240>();
  const int wg = wg_all - kCons0;
  const uint32_t lq = D::lo(base + kQ + wg * 8192);
  static_assert(!kSS || kP16, "S16: FP16 P only");
  float s[96], o[68];
  uint32_t pf[kSS ? 1 : (kP16 ? 48 : 24)];
  synth::zero(s);
  synth::zero(o);
  synth::zero(pf);
  const uint32_t p_base = base + kP + wg * 24576, lp = D::lo(p_base);
  const int my_turn = 1 + wg, other_turn = 2 - wg;
  if (wg == 1) ptx::named_barrier_arrive(other_turn, 256);
  for (int j = 0; j < kBlocks; ++j) {
    if (j == kWarm) t0 = clock64();
    const int st = j % 2, pst = (j + 1) % 2;
    if constexpr (kStage == 2) ptx::mbar_wait(&k_full[st], (j / 2) & 1);
    const uint32_t lk = D::lo(base + kK + (kStage == 2 ? st : 0) * kKBytes);
    const uint32_t lv = D::lo(base + kV + (kStage == 2 ? pst : 0) * kV16Bytes);
    ptx::named_barrier_sync(my_turn, 256);
    ptx::wgmma_fence();
    synth::issue_qk(s, lq, lk);
    ptx::wgmma_commit();
    if (kStage == 2 && j > 0) ptx::mbar_wait(&v_full[pst], ((j - 1) / 2) & 1);
    ptx::wgmma_fence();
    if constexpr (kSS) {
#pragma unroll
      for (int k = 0; k < 12; ++k)
        synth::wgmma_ss_f16(o, D::make(lp + ((k / 4) * 8192 + (k % 4) * 32) / 16),
                            D::make(lv + ((k / 4) * 17408 + (k % 4) * 32) / 16), 1);
    } else {
      synth::issue_pv_rs<kP16, kP16 ? 17408 : 9216>(o, pf, lv);
    }
    ptx::wgmma_commit();
    ptx::named_barrier_arrive(other_turn, 256);
    ptx::wgmma_wait<1>();
    synth::fence_regs(s);
    if (kStage == 2 && t128 % 32 == 0) ptx::mbar_arrive(&k_empty[st]);
    softmax(s, scale);
    ptx::wgmma_wait<0>();
    synth::fence_regs(o);
    if (kStage == 2 && j > 0 && t128 % 32 == 0) ptx::mbar_arrive(&v_empty[pst]);
    if constexpr (kSS) {
      // P (FP16) with stmatrix into the SS A layout: [3 halves][64 rows][128 B], 128-byte
      // swizzle (pvwg_probe's B16 store); made visible to the next turn's wgmma (async proxy).
      const int warp = t128 / 32, lane = t128 % 32, m = lane / 8, rr = lane % 8;
      const int row = 16 * warp + (m % 2) * 8 + rr;
#pragma unroll
      for (int k = 0; k < 12; ++k) {
        const int key0 = 16 * k + (m / 2) * 8;
        const uint32_t addr = p_base + (key0 / 64) * 8192 + row * 128 + ((((key0 % 64) / 8) ^ (row % 8)) << 4);
        const uint32_t r0 = ptx::pack_f16x2(s[8 * k], s[8 * k + 1]), r1 = ptx::pack_f16x2(s[8 * k + 2], s[8 * k + 3]);
        const uint32_t r2 = ptx::pack_f16x2(s[8 * k + 4], s[8 * k + 5]), r3 = ptx::pack_f16x2(s[8 * k + 6], s[8 * k + 7]);
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                     ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
      }
      ptx::fence_proxy_async_shared();
    } else {
      synth::make_p<kP16>(s, pf);
    }
  }
  t1 = clock64();
  if (wg == 0) ptx::named_barrier_sync(1, 256);
  synth::keep_alive(o, out);
  if (t128 == 0) out[(blockIdx.x * 2 + wg) * 2] = t1 - t0, out[(blockIdx.x * 2 + wg) * 2 + 1] = kBlocks - kWarm;
}

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* d;
  cudaMalloc(&d, sizeof(unsigned long long) * sms * 4);
  const size_t gbytes = size_t(24) << 20;  // 24 MiB of zeros: L2-resident (60 MiB), as the kernel's K / V mostly are
  uint8_t* g;
  cudaMalloc(&g, gbytes);
  cudaMemset(g, 0, gbytes);
  struct Run { const char* name; void (*k)(unsigned long long*, const uint8_t*, size_t, float); int threads; };
  const Run runs[] = {{"A16 bare", loop<true, 0>, 256}, {"A8 bare", loop<false, 0>, 256},
                      {"A16 cap (setmaxnreg 24 / 240)", loop<true, 1>, 384},
                      {"A8 cap (setmaxnreg 24 / 240)", loop<false, 1>, 384},
                      {"A16 cap + K / FP16 V^T ring", loop<true, 2>, 384},
                      {"A8 cap + K / E4M3 V^T ring", loop<false, 2>, 384},
                      {"S16 bare", loop<true, 0, true>, 256},
                      {"S16 cap (setmaxnreg 24 / 240)", loop<true, 1, true>, 384},
                      {"S16 cap + K / FP16 V^T ring", loop<true, 2, true>, 384}};
  FILE* f = argc > 1 ? std::fopen(argv[1], "w") : nullptr;
  if (f) std::fprintf(f, "{\"probe\": \"lab/probes/ladder_probe.cu\", \"sms\": %d, \"records\": [\n", sms);
  bool first = true;
  for (const Run& r : runs) {
    cudaFuncSetAttribute(r.k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    for (int rep = 0; rep < 3; ++rep) {
      cudaMemset(d, 0, sizeof(unsigned long long) * sms * 4);
      r.k<<<sms, r.threads, kSmem>>>(d, g, gbytes, 0.125f);
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { std::printf("%s: %s\n", r.name, cudaGetErrorString(e)); return 1; }
    }
    std::vector<unsigned long long> h(sms * 4);
    cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    std::printf("%-34s", r.name);
    if (f) std::fprintf(f, "%s {\"mode\": \"%s\", \"cycles_per_block_median\": [", first ? "" : ",", r.name);
    first = false;
    for (int w = 0; w < 2; ++w) {
      std::vector<double> v;
      for (int b = 0; b < sms; ++b)
        if (h[(b * 2 + w) * 2 + 1]) v.push_back(double(h[(b * 2 + w) * 2]) / h[(b * 2 + w) * 2 + 1]);
      std::sort(v.begin(), v.end());
      const double med = v.empty() ? 0 : v[v.size() / 2];
      std::printf("  wg%d %.0f", w, med);
      if (f) std::fprintf(f, "%s%.1f", w ? ", " : "", med);
    }
    std::printf("  cycles per key block (median over %d CTAs)\n", sms);
    if (f) std::fprintf(f, "]}\n");
  }
  if (f) { std::fprintf(f, "]}\n"); std::fclose(f); }
  return 0;
}
