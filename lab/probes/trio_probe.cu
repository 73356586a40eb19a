// Lab probe (GPU; standalone): the synthetic FP16-P key loop of ladder_probe.cu with THREE
// consumer warpgroups instead of two (issue 14, twenty-ninth session; lab/perf-log.md).
// Each consumer warpgroup holds 64 query rows; the ping-pong turn becomes a ring of three
// (warpgroup w waits on named barrier 1 + w, issues its QK^T and P V, and hands the turn to
// w + 1). Three warpgroups fit the register file only at 160 registers a consumer thread
// (producer 32: 32 + 3 x 160 = 512 per thread slot of 512 threads), so the key block shrinks to
// 96 keys (S 48 + O 68 + P 24 registers) or 128 (S 64 + O 68 + P 32).
//   W2 N192: two consumer warpgroups, 192-key blocks, cap 24 / 240: the ladder's A16 (the
//            accurate mode's shape today), for the same run's baseline.
//   W3 N96 / N128: three consumer warpgroups, cap 32 / 160.
// Rungs as the ladder's: bare (consumers only, no cap), cap (an idle producer warpgroup and
// setmaxnreg), ring (the producer's warp 0 loads every block's K and FP16 V^T with its ones rows
// from an L2-resident buffer into two-stage rings, as the kernel does).
// The softmax is the kernel's instruction mix per score (synthetic_loop.cuh's, any block length).
// Figures: cycles per key block (median over one CTA per SM) and cycles per 128 x 192 scores
// (the accurate kernel's block), the comparable figure across shapes.
//   bash lab/probes/gen_wgmma_n96.sh   # once: lab/probes/wgmma_n96.cuh
//   nvcc -std=c++20 -gencode=arch=compute_90a,code=sm_90a -O3 -Xptxas -v -I src -I lab/probes \
//        -o /tmp/trio lab/probes/trio_probe.cu
//   /tmp/trio OUT.json
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
#include "wgmma_n96.cuh"

namespace ptx = fp8attn::ptx;
using D = ptx::DescKMajor<128>;

constexpr int kBlocks = 192, kWarm = 24, kMaxW = 3;
constexpr int kHalfStride = 17408;  // one 64-key FP16 V^T half (16 KiB) + its 8 rows of ones (1 KiB)

template <int kW, int kN>
struct Plan {
  static constexpr int kKBytes = kN * 128;
  static constexpr int kVLoad = kN * kHalfStride / 64;  // the block's halves (a 96-key block: 1.5)
  static constexpr int kVStride = (kN + 63) / 64 * kHalfStride;
  static constexpr int kPBytes = (kN + 63) / 64 * 8192;  // one warpgroup's P (SS mode)
  static constexpr int kQ = 0, kK = kW * 8192, kV = kK + 2 * kKBytes, kP = kV + 2 * kVStride;
  static constexpr int kBars = kP + kW * kPBytes;
  static constexpr int kSmem = kBars + 128 + 1024;
  static constexpr int kProducerRegs = kW == 2 ? 24 : 32;
  static constexpr int kConsumerRegs = kW == 2 ? 240 : 160;
  static_assert(kProducerRegs + kW * kConsumerRegs <= (kW == 2 ? 504 : 512), "setmaxnreg pool");
  static_assert(kK % 1024 == 0 && kV % 1024 == 0, "128-byte swizzle: 1024-byte aligned tiles");
};

__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(ptx::smem_addr(bar)) : "memory");
}

// S = Q K^T over one kN-key block: 4 x m64nNk32 SS.
template <int kN>
__device__ __forceinline__ void issue_qk(float (&s)[kN / 2], uint32_t lq, uint32_t lk) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if constexpr (kN == 96) synth::wgmma_ss(s, D::make(lq + 2 * k), D::make(lk + 2 * k), k > 0);
    else ptx::wgmma_ss(s, D::make(lq + 2 * k), D::make(lk + 2 * k), k > 0);
  }
}

// How the P V runs: kRs136, P from registers into O and the row sums (m64n136k16, the accurate
// kernel's today); kRs128, P from registers into O only (m64n128k16) and l from kN / 2 FADD a
// thread in the softmax (4 registers fewer); kSs136, P stored to shared memory (stmatrix, 128-byte
// swizzle) and the P V issued from there (m64n136k16 SS): no P register is live across the softmax.
enum PvMode : int { kRs136 = 0, kRs128 = 1, kSs136 = 2 };

// O (+ row sums) += P V: kN / 16 x m64n{136,128}k16, P from registers, V^T halves kHalfStride apart.
template <int kN, int kO>
__device__ __forceinline__ void issue_pv(float (&o)[kO], const uint32_t (&pf)[kN / 4], uint32_t lv) {
#pragma unroll
  for (int k = 0; k < kN / 16; ++k) {
    const uint32_t a[4] = {pf[4 * k], pf[4 * k + 1], pf[4 * k + 2], pf[4 * k + 3]};
    ptx::wgmma_rs_f16(o, a, D::make(lv + ((k / 4) * kHalfStride + (k % 4) * 32) / 16), 1);
  }
}

// P (FP16) with stmatrix into the SS A layout [halves][64 rows][128 B], 128-byte swizzle (the
// ladder's S16 store), made visible to the async proxy.
template <int kN>
__device__ __forceinline__ void store_p(const float (&s)[kN / 2], uint32_t p_base, int t128) {
  const int warp = t128 / 32, lane = t128 % 32, m = lane / 8, rr = lane % 8;
  const int row = 16 * warp + (m % 2) * 8 + rr;
#pragma unroll
  for (int k = 0; k < kN / 16; ++k) {
    const int key0 = 16 * k + (m / 2) * 8;
    const uint32_t addr = p_base + (key0 / 64) * 8192 + row * 128 + ((((key0 % 64) / 8) ^ (row % 8)) << 4);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(addr), "r"(ptx::pack_f16x2(s[8 * k], s[8 * k + 1])), "r"(ptx::pack_f16x2(s[8 * k + 2], s[8 * k + 3])),
                   "r"(ptx::pack_f16x2(s[8 * k + 4], s[8 * k + 5])), "r"(ptx::pack_f16x2(s[8 * k + 6], s[8 * k + 7]))
                 : "memory");
  }
  ptx::fence_proxy_async_shared();
}

// kStage: 0 bare, 1 cap, 2 ring.
template <int kW, int kN, int kStage, int kMode = kRs136>
__global__ void __launch_bounds__(128 * (kW + (kStage > 0)), 1)
loop(unsigned long long* out, const uint8_t* gsrc, size_t gbytes, float scale) {
  using P = Plan<kW, kN>;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  for (int i = threadIdx.x; i < P::kBars / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + P::kBars);
  uint64_t *k_full = bars, *k_empty = bars + 2, *v_full = bars + 4, *v_empty = bars + 6;
  if (threadIdx.x == 0) {
    for (int i = 0; i < 2; ++i) {
      ptx::mbar_init(&k_full[i], 1);
      ptx::mbar_init(&v_full[i], 1);
      ptx::mbar_init(&k_empty[i], 4 * kW);  // one arrive per consumer warp
      ptx::mbar_init(&v_empty[i], 4 * kW);
    }
    ptx::mbar_fence_init();
  }
  ptx::fence_proxy_async_shared();
  __syncthreads();
  constexpr int kCons0 = kStage == 0 ? 0 : 1;
  const int wg_all = threadIdx.x / 128, t128 = threadIdx.x % 128;
  const uint32_t base = ptx::smem_addr(smem);
  if (kStage > 0 && wg_all == 0) {  // producer warpgroup
    ptx::setmaxnreg_dec<P::kProducerRegs>();
    if (kStage == 2 && t128 == 0) {
      size_t off = (size_t(blockIdx.x) * 196608) % (gbytes / 2);
      for (int j = 0; j < kBlocks; ++j) {
        const int st = j % 2;
        const uint32_t ph = ((j / 2) & 1) ^ 1;
        ptx::mbar_wait(&k_empty[st], ph);
        if (off + P::kKBytes + P::kVLoad > gbytes) off = 0;
        ptx::mbar_arrive_expect_tx(&k_full[st], P::kKBytes);
        bulk_load(base + P::kK + st * P::kKBytes, gsrc + off, P::kKBytes, &k_full[st]);
        off += P::kKBytes;
        ptx::mbar_wait(&v_empty[st], ph);
        ptx::mbar_arrive_expect_tx(&v_full[st], P::kVLoad);
        bulk_load(base + P::kV + st * P::kVStride, gsrc + off, P::kVLoad, &v_full[st]);
        off += P::kVLoad;
      }
    }
    return;
  }
  if constexpr (kStage > 0) ptx::setmaxnreg_inc<P::kConsumerRegs>();
  const int wg = wg_all - kCons0;
  const uint32_t lq = D::lo(base + P::kQ + wg * 8192);
  constexpr int kO = kMode == kRs128 ? 64 : 68;
  float s[kN / 2], o[kO], l[2] = {0.f, 0.f};
  uint32_t pf[kMode == kSs136 ? 1 : kN / 4];
  synth::zero(s);
  synth::zero(o);
  synth::zero(pf);
  const uint32_t p_base = base + P::kP + wg * P::kPBytes, lp = D::lo(p_base);
  const int my_turn = 1 + wg, next_turn = 1 + (wg + 1) % kW;
  if (wg == kW - 1) ptx::named_barrier_arrive(1, 256);  // warpgroup 0 goes first
  for (int j = 0; j < kBlocks; ++j) {
    // The start stamp goes to global memory at once: two registers fewer across the loop.
    if (j == kWarm && t128 == 0) out[(blockIdx.x * kMaxW + wg) * 2] = clock64();
    const int st = j % 2, pst = (j + 1) % 2;
    if constexpr (kStage == 2) ptx::mbar_wait(&k_full[st], (j / 2) & 1);
    const uint32_t lk = D::lo(base + P::kK + (kStage == 2 ? st : 0) * P::kKBytes);
    const uint32_t lv = D::lo(base + P::kV + (kStage == 2 ? pst : 0) * P::kVStride);
    ptx::named_barrier_sync(my_turn, 256);
    ptx::wgmma_fence();
    issue_qk<kN>(s, lq, lk);
    ptx::wgmma_commit();
    if (kStage == 2 && j > 0) ptx::mbar_wait(&v_full[pst], ((j - 1) / 2) & 1);
    ptx::wgmma_fence();
    if constexpr (kMode == kSs136) {
#pragma unroll
      for (int k = 0; k < kN / 16; ++k)
        synth::wgmma_ss_f16(o, D::make(lp + ((k / 4) * 8192 + (k % 4) * 32) / 16),
                            D::make(lv + ((k / 4) * kHalfStride + (k % 4) * 32) / 16), 1);
    } else {
      issue_pv<kN, kO>(o, pf, lv);
    }
    ptx::wgmma_commit();
    ptx::named_barrier_arrive(next_turn, 256);
    ptx::wgmma_wait<1>();
    synth::fence_regs(s);
    if (kStage == 2 && t128 % 32 == 0) ptx::mbar_arrive(&k_empty[st]);
    synth::softmax<kN / 2, kMode == kRs128>(s, scale, l);
    ptx::wgmma_wait<0>();
    synth::fence_regs(o);
    if (kStage == 2 && j > 0 && t128 % 32 == 0) ptx::mbar_arrive(&v_empty[pst]);
    if constexpr (kMode == kSs136) {
      store_p<kN>(s, p_base, t128);
    } else {
#pragma unroll
      for (int i = 0; i < kN / 4; ++i) pf[i] = ptx::pack_f16x2(s[2 * i], s[2 * i + 1]);
      synth::fence_regs(pf);
    }
  }
  if (l[0] + l[1] == 1234.5f) out[1] = 0;  // keeps the row sums' FADDs
  const unsigned long long t1 = clock64();
  if (wg == 0) ptx::named_barrier_sync(1, 256);  // the last warpgroup's final hand-over
  synth::keep_alive(o, out);
  if (t128 == 0) {
    out[(blockIdx.x * kMaxW + wg) * 2] = t1 - out[(blockIdx.x * kMaxW + wg) * 2];
    out[(blockIdx.x * kMaxW + wg) * 2 + 1] = kBlocks - kWarm;
  }
}

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* d;
  cudaMalloc(&d, sizeof(unsigned long long) * sms * kMaxW * 2);
  const size_t gbytes = size_t(24) << 20;  // 24 MiB of zeros: L2-resident, as the kernel's K / V mostly are
  uint8_t* g;
  cudaMalloc(&g, gbytes);
  cudaMemset(g, 0, gbytes);
  struct Run { const char* name; void (*k)(unsigned long long*, const uint8_t*, size_t, float); int w, n, threads, smem; };
#define RUN(name, W, N, S, M) {name, loop<W, N, S, M>, W, N, 128 * (W + (S > 0)), Plan<W, N>::kSmem}
  const Run runs[] = {RUN("W2 N192 bare", 2, 192, 0, kRs136), RUN("W2 N192 cap 24/240", 2, 192, 1, kRs136),
                      RUN("W2 N192 ring", 2, 192, 2, kRs136),
                      RUN("W3 N96 bare", 3, 96, 0, kRs136), RUN("W3 N96 ring", 3, 96, 2, kRs136),
                      RUN("W3 N96 rs128 bare", 3, 96, 0, kRs128), RUN("W3 N96 rs128 ring", 3, 96, 2, kRs128),
                      RUN("W3 N96 ss bare", 3, 96, 0, kSs136), RUN("W3 N96 ss ring", 3, 96, 2, kSs136),
                      RUN("W3 N128 ss bare", 3, 128, 0, kSs136), RUN("W3 N128 ss ring", 3, 128, 2, kSs136),
                      RUN("W2 N192 ss ring", 2, 192, 2, kSs136)};
#undef RUN
  FILE* f = argc > 1 ? std::fopen(argv[1], "w") : nullptr;
  if (f) std::fprintf(f, "{\"probe\": \"lab/probes/trio_probe.cu\", \"sms\": %d, \"records\": [\n", sms);
  bool first = true;
  for (const Run& r : runs) {
    cudaFuncSetAttribute(r.k, cudaFuncAttributeMaxDynamicSharedMemorySize, r.smem);
    for (int rep = 0; rep < 3; ++rep) {
      cudaMemset(d, 0, sizeof(unsigned long long) * sms * kMaxW * 2);
      r.k<<<sms, r.threads, r.smem>>>(d, g, gbytes, 0.125f);
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { std::printf("%s: %s\n", r.name, cudaGetErrorString(e)); return 1; }
    }
    std::vector<unsigned long long> h(sms * kMaxW * 2);
    cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    std::vector<double> meds;
    for (int w = 0; w < r.w; ++w) {
      std::vector<double> v;
      for (int b = 0; b < sms; ++b)
        if (h[(b * kMaxW + w) * 2 + 1]) v.push_back(double(h[(b * kMaxW + w) * 2]) / h[(b * kMaxW + w) * 2 + 1]);
      std::sort(v.begin(), v.end());
      meds.push_back(v.empty() ? 0 : v[v.size() / 2]);
    }
    double mean = 0;
    for (double m : meds) mean += m / meds.size();
    // One block of every warpgroup covers r.w x 64 rows x r.n keys; the accurate kernel's block
    // is 128 x 192.
    const double per_ref = mean * (128.0 * 192.0) / (r.w * 64.0 * r.n);
    std::printf("%-22s cycles/block", r.name);
    for (double m : meds) std::printf(" %.0f", m);
    std::printf("  per 128x192 scores %.0f\n", per_ref);
    if (f) {
      std::fprintf(f, "%s {\"mode\": \"%s\", \"warpgroups\": %d, \"block_keys\": %d, \"cycles_per_block_median\": [",
                   first ? "" : ",", r.name, r.w, r.n);
      for (size_t i = 0; i < meds.size(); ++i) std::fprintf(f, "%s%.1f", i ? ", " : "", meds[i]);
      std::fprintf(f, "], \"cycles_per_128x192_scores\": %.1f}\n", per_ref);
    }
    first = false;
  }
  if (f) { std::fprintf(f, "]}\n"); std::fclose(f); }
  return 0;
}
