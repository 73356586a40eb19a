// Lab probe (GPU; standalone, no torch): a synthetic steady-state key loop, to weigh issue 14's
// "P V warpgroup" design before building it (lab/perf-log.md, twenty-sixth session). No TMA, no
// masks, no O rescale: Q, K, V and P tiles sit in shared memory (zeros), and each block runs the
// real kernel's tensor work and a softmax of the real one's instruction mix (per thread: 96
// FMNMX in 4 partial maxima a row, 4 shuffles, 96 FFMA + 96 MUFU.EX2, 48 conversions).
//   A16 / A8: two consumer warpgroups in the shipped ping-pong (turn: QK^T 4 x m64n192k32, then
//     the P V from registers: 12 x m64n136k16 FP16 (the accurate mode) or 6 x m64n136k32 E4M3
//     (the default); arrive; S wait; softmax; P V wait; P fragments).
//   B16: two softmax warpgroups (QK^T only, then the softmax, P stored to shared memory with
//     stmatrix, an mbarrier arrive) and a third warpgroup that holds O for both and issues the
//     P V from shared memory (12 x m64n136k16 SS per softmax warpgroup and block), releasing each
//     P buffer through a second mbarrier.
// Prints cycles per key block (the softmax warpgroups' loop, median over CTAs) per mode; run with
// one CTA per SM on every SM (the power and the L2 as in a real launch).
//   nvcc -std=c++20 -gencode=arch=compute_90a,code=sm_90a -O3 -I src -I lab/probes -o /tmp/pvwg lab/probes/pvwg_probe.cu
//   /tmp/pvwg OUT.json
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

using synth::wgmma_ss_f16;
using synth::softmax;

constexpr int kBlocks = 128;  // key blocks a CTA runs
constexpr int kWarm = 16;     // blocks before the timed span
// Shared memory: Q [2][64][128 B], K [192][128 B], V16 [3][136][128 B], P [2][3][64][128 B].
constexpr int kQ = 0, kK = 16384, kV = kK + 24576, kP = kV + 3 * 17408, kBars = kP + 2 * 24576;
constexpr int kSmem = kBars + 64 + 1024;


// mode 0: A16, 1: A8 (256 threads); 2: B16 (384 threads); 3 / 4: A16 / A8 without the softmax
// (the tensor work and the turns alone). (A sixth mode, the softmax alone, measured 80 cycles:
// ptxas removed its work; it was taken out after its run.)
template <int kMode>
__global__ void __launch_bounds__(kMode == 2 ? 384 : 256, 1) loop(unsigned long long* out, float scale) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  for (int i = threadIdx.x; i < kBars / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + kBars);  // p_full[2], p_free[2]
  if (threadIdx.x == 0) {
    for (int i = 0; i < 4; ++i) ptx::mbar_init(&bars[i], 128);
    ptx::mbar_fence_init();
  }
  ptx::fence_proxy_async_shared();
  __syncthreads();
  const int wg = threadIdx.x / 128, t128 = threadIdx.x % 128, warp = t128 / 32, lane = t128 % 32;
  const uint32_t base = ptx::smem_addr(smem);
  const uint32_t lq = D::lo(base + kQ + (wg & 1) * 8192), lk = D::lo(base + kK), lv = D::lo(base + kV);
  unsigned long long t0 = 0, t1 = 0;
  if constexpr (kMode != 2) {
    constexpr bool k16 = kMode == 0 || kMode == 3;
    constexpr bool kSoftmax = kMode <= 1;
    float s[96], o[68];
    uint32_t pf[k16 ? 48 : 24];
    synth::zero(s);
    synth::zero(o);
    synth::zero(pf);
    const int my_turn = 1 + wg, other_turn = 2 - wg;
    if (wg == 1) ptx::named_barrier_arrive(other_turn, 256);
    for (int j = 0; j < kBlocks; ++j) {
      if (j == kWarm) t0 = clock64();
      ptx::named_barrier_sync(my_turn, 256);
      ptx::wgmma_fence();
      synth::issue_qk(s, lq, lk);
      ptx::wgmma_commit();
      ptx::wgmma_fence();
      synth::issue_pv_rs<k16, 17408>(o, pf, lv);
      ptx::wgmma_commit();
      ptx::named_barrier_arrive(other_turn, 256);
      ptx::wgmma_wait<1>();
      synth::fence_regs(s);
      if constexpr (kSoftmax) softmax(s, scale);
      ptx::wgmma_wait<0>();
      synth::fence_regs(o);
      synth::make_p<k16>(s, pf);
    }
    t1 = clock64();
    if (wg == 0) ptx::named_barrier_sync(1, 256);  // the last arrive of warpgroup 1
    synth::keep_alive(o, out);
  } else {
    uint64_t* p_full = bars;
    uint64_t* p_free = bars + 2;
    if (wg < 2) {  // softmax warpgroups
      float s[96];
#pragma unroll
      for (int i = 0; i < 96; ++i) s[i] = 0.f;
      const uint32_t p_base = base + kP + wg * 24576;
      for (int j = 0; j < kBlocks; ++j) {
        if (j == kWarm) t0 = clock64();
        ptx::wgmma_fence();
        synth::issue_qk(s, lq, lk);
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
        synth::fence_regs(s);
        softmax(s, scale);
        ptx::mbar_wait(&p_free[wg], (j & 1) ^ 1);
        // P (FP16) with stmatrix into the SS A layout: [3 halves][64 rows][128 B], 128-byte swizzle.
        const int m = lane / 8, rr = lane % 8;
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
        ptx::mbar_arrive(&p_full[wg]);
      }
      t1 = clock64();
    } else {  // the P V warpgroup: O for both softmax warpgroups' rows
      float o0[68], o1[68];
#pragma unroll
      for (int i = 0; i < 68; ++i) o0[i] = o1[i] = 0.f;
      const uint32_t lp0 = D::lo(base + kP), lp1 = D::lo(base + kP + 24576);
      for (int j = 0; j < kBlocks; ++j) {
        if (j == kWarm) t0 = clock64();
        ptx::mbar_wait(&p_full[0], j & 1);
        ptx::wgmma_fence();
#pragma unroll
        for (int k = 0; k < 12; ++k)
          wgmma_ss_f16(o0, D::make(lp0 + ((k / 4) * 8192 + (k % 4) * 32) / 16),
                       D::make(lv + ((k / 4) * 17408 + (k % 4) * 32) / 16), 1);
        ptx::wgmma_commit();
        ptx::mbar_wait(&p_full[1], j & 1);
        ptx::wgmma_fence();
#pragma unroll
        for (int k = 0; k < 12; ++k)
          wgmma_ss_f16(o1, D::make(lp1 + ((k / 4) * 8192 + (k % 4) * 32) / 16),
                       D::make(lv + ((k / 4) * 17408 + (k % 4) * 32) / 16), 1);
        ptx::wgmma_commit();
        ptx::wgmma_wait<1>();
        synth::fence_regs(o0);
        ptx::mbar_arrive(&p_free[0]);
        ptx::wgmma_wait<0>();
        synth::fence_regs(o1);
        ptx::mbar_arrive(&p_free[1]);
      }
      t1 = clock64();
      synth::keep_alive(o0, o1, out);
    }
  }
  if (t128 == 0) out[(blockIdx.x * 3 + wg) * 2] = t1 - t0, out[(blockIdx.x * 3 + wg) * 2 + 1] = kBlocks - kWarm;
}

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* d;
  cudaMalloc(&d, sizeof(unsigned long long) * sms * 6);
  const char* names[] = {"A16 ping-pong, FP16 P V from registers (accurate)",
                         "A8 ping-pong, E4M3 P V from registers (default)",
                         "B16 two softmax warpgroups + a P V warpgroup, FP16 P V from shared memory",
                         "A16 without the softmax (tensor work and turns)",
                         "A8 without the softmax (tensor work and turns)"};
  void (*k[])(unsigned long long*, float) = {loop<0>, loop<1>, loop<2>, loop<3>, loop<4>};
  const int threads[] = {256, 256, 384, 256, 256};
  FILE* f = argc > 1 ? std::fopen(argv[1], "w") : nullptr;
  if (f) std::fprintf(f, "{\"probe\": \"lab/probes/pvwg_probe.cu\", \"sms\": %d, \"records\": [\n", sms);
  for (int mode = 0; mode < 5; ++mode) {
    cudaFuncSetAttribute(k[mode], cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
    for (int rep = 0; rep < 3; ++rep) {
      cudaMemset(d, 0, sizeof(unsigned long long) * sms * 6);
      k[mode]<<<sms, threads[mode], kSmem>>>(d, 0.125f);
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { std::printf("mode %d: %s\n", mode, cudaGetErrorString(e)); return 1; }
    }
    std::vector<unsigned long long> h(sms * 6);
    cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
    std::vector<double> per[3];
    for (int b = 0; b < sms; ++b)
      for (int w = 0; w < 3; ++w)
        if (h[(b * 3 + w) * 2 + 1]) per[w].push_back(double(h[(b * 3 + w) * 2]) / h[(b * 3 + w) * 2 + 1]);
    std::printf("%-76s", names[mode]);
    if (f) std::fprintf(f, "%s {\"mode\": \"%s\", \"cycles_per_block_median\": [", mode ? "," : "", names[mode]);
    for (int w = 0; w < 3; ++w) {
      if (per[w].empty()) continue;
      std::sort(per[w].begin(), per[w].end());
      const double med = per[w][per[w].size() / 2];
      std::printf("  wg%d %.0f", w, med);
      if (f) std::fprintf(f, "%s%.1f", w ? ", " : "", med);
    }
    std::printf("  cycles per key block (median over %d CTAs)\n", sms);
    if (f) std::fprintf(f, "]}\n");
  }
  if (f) { std::fprintf(f, "]}\n"); std::fclose(f); }
  return 0;
}
