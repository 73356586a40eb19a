// Lab probe (GPU; standalone, no torch): how long a warpgroup's wgmma issue holds the warp, per
// instruction, when the tensor pipe starts idle: the accurate mode's P V (12 x m64n136k16 FP16,
// A from registers), the same with A from shared memory, the default's P V (6 x m64n136k32 E4M3,
// A from registers), the QK^T (4 x m64n192k32 E4M3, both from shared memory), and the two turns
// (the QK^T then the P V), with one warpgroup alone or two issuing at once on one SM.
// Question (lab/perf-log.md, twenty-sixth session): does the issue block because the tensor
// pipe's queue is full (then the hold follows the queued tensor time, SS or RS alike), or does
// each instruction cost a fixed issue time (then SS could be cheaper)?
//   nvcc -std=c++20 -gencode=arch=compute_90a,code=sm_90a -O3 -I src -I lab/probes -o /tmp/wgmma_issue lab/probes/wgmma_issue.cu
//   /tmp/wgmma_issue OUT.json
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include <algorithm>
#include <vector>

#include "ptx/warpgroup.cuh"
#include "ptx/wgmma_f16.cuh"
#include "ptx/wgmma_fp8.cuh"
#include "synthetic_loop.cuh"

namespace ptx = fp8attn::ptx;

using synth::wgmma_ss_f16;

constexpr int kMaxIssue = 16;
constexpr int kSlots = kMaxIssue + 2;  // a stamp before each issue, after the last, after the wait
constexpr int kReps = 64;

// Mode: 0 RS HGMMA n136k16 x12; 1 SS HGMMA n136k16 x12; 2 RS QGMMA n136k32 x6; 3 SS QGMMA
// n192k32 x4 (QK^T); 4 QK^T x4 then RS HGMMA x12 (accurate turn); 5 QK^T x4 then RS QGMMA x6
// (default turn).
template <int mode>
__global__ void __launch_bounds__(256, 1) probe(unsigned long long* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* a = smem;              // [64][128 B], 8 KiB
  uint8_t* b = smem + 8192;       // [192][128 B], 24 KiB
  for (int i = threadIdx.x; i < 32768 / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const bool stamp = threadIdx.x % 128 == 0;
  using D = ptx::DescKMajor<128>;
  const uint32_t la = D::lo(static_cast<uint32_t>(__cvta_generic_to_shared(a)));
  const uint32_t lb = D::lo(static_cast<uint32_t>(__cvta_generic_to_shared(b)));
  constexpr bool kS = mode >= 3;
  float s[kS ? 96 : 1], o[68];
  for (int i = 0; i < (kS ? 96 : 1); ++i) s[i] = 0.f;
  for (int i = 0; i < 68; ++i) o[i] = 0.f;
  const uint32_t pa[4] = {0u, 0u, 0u, 0u};
  for (int rep = 0; rep < kReps; ++rep) {
    uint32_t t[kSlots];  // 32-bit clock: fewer live registers
    int n = 0;
    __syncthreads();
    ptx::wgmma_fence();
    if constexpr (kS) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        t[n++] = static_cast<uint32_t>(clock());
        ptx::wgmma_ss(s, D::make(la + 2 * k), D::make(lb + 2 * k), 1);
      }
    }
    if constexpr (mode == 0 || mode == 4) {
#pragma unroll
      for (int k = 0; k < 12; ++k) {
        t[n++] = static_cast<uint32_t>(clock());
        ptx::wgmma_rs_f16(o, pa, D::make(lb + 2 * (k % 4)), 1);
      }
    } else if constexpr (mode == 1) {
#pragma unroll
      for (int k = 0; k < 12; ++k) {
        t[n++] = static_cast<uint32_t>(clock());
        wgmma_ss_f16(o, D::make(la + 2 * (k % 4)), D::make(lb + 2 * (k % 4)), 1);
      }
    } else if constexpr (mode == 2 || mode == 5) {
#pragma unroll
      for (int k = 0; k < 6; ++k) {
        t[n++] = static_cast<uint32_t>(clock());
        ptx::wgmma_rs(o, pa, D::make(lb + 2 * (k % 4)), 1);
      }
    }
    t[n++] = static_cast<uint32_t>(clock());
    ptx::wgmma_commit();
    ptx::wgmma_wait<0>();
    for (int i = 0; i < (kS ? 96 : 1); ++i) ptx::fence_operand(s[i]);
    for (int i = 0; i < 68; ++i) ptx::fence_operand(o[i]);
    t[n++] = static_cast<uint32_t>(clock());
    if (stamp)
      for (int i = 0; i < kSlots; ++i) out[(rep * 2 + wg) * kSlots + i] = i < n ? t[i] : 0u;
  }
  // Keep the accumulators live.
  float acc = 0.f;
  for (int i = 0; i < (kS ? 96 : 1); ++i) acc += s[i];
  for (int i = 0; i < 68; ++i) acc += o[i];
  if (acc == 12345.f) out[0] = 1;
}

int main(int argc, char** argv) {
  const char* names[] = {"pv_fp16_rs_x12", "pv_fp16_ss_x12", "pv_e4m3_rs_x6", "qk_e4m3_ss_x4",
                         "turn_accurate_qk4_pv12", "turn_default_qk4_pv6"};
  const int issues[] = {12, 12, 6, 4, 16, 10};
  unsigned long long* d;
  cudaMalloc(&d, sizeof(unsigned long long) * kReps * 2 * kSlots);
  void (*kernels[])(unsigned long long*) = {probe<0>, probe<1>, probe<2>, probe<3>, probe<4>, probe<5>};
  for (auto k : kernels) cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 33 * 1024);
  FILE* f = argc > 1 ? std::fopen(argv[1], "w") : nullptr;
  if (f) std::fprintf(f, "{\"probe\": \"lab/probes/wgmma_issue.cu\", \"records\": [\n");
  bool first = true;
  for (int wgs = 1; wgs <= 2; ++wgs) {
    for (int mode = 0; mode < 6; ++mode) {
      cudaMemset(d, 0, sizeof(unsigned long long) * kReps * 2 * kSlots);
      kernels[mode]<<<1, 128 * wgs, 33 * 1024>>>(d);
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { std::printf("mode %d: %s\n", mode, cudaGetErrorString(e)); return 1; }
      std::vector<unsigned long long> h(kReps * 2 * kSlots);
      cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
      for (int w = 0; w < wgs; ++w) {
        const int n = issues[mode];
        // Per issue i: median over reps (skipping the first 4) of t[i+1] - t[i]; then the wait.
        std::vector<long long> med(n + 1);
        for (int i = 0; i <= n; ++i) {
          std::vector<long long> v;
          for (int r = 4; r < kReps; ++r) {
            const unsigned long long* t = &h[(r * 2 + w) * kSlots];
            v.push_back(static_cast<long long>(static_cast<uint32_t>(t[i + 1] - t[i])));
          }
          std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
          med[i] = v[v.size() / 2];
        }
        long long issue_total = 0;
        for (int i = 0; i < n; ++i) issue_total += med[i];
        std::printf("%d warpgroup(s), wg %d, %-24s issue per instruction:", wgs, w, names[mode]);
        for (int i = 0; i < n; ++i) std::printf(" %lld", med[i]);
        std::printf(" | issue total %lld, then wait %lld cycles\n", issue_total, med[n]);
        if (f) {
          std::fprintf(f, "%s {\"warpgroups\": %d, \"wg\": %d, \"sequence\": \"%s\", \"issue_cycles\": [", first ? "" : ",", wgs, w, names[mode]);
          for (int i = 0; i < n; ++i) std::fprintf(f, "%s%lld", i ? ", " : "", med[i]);
          std::fprintf(f, "], \"issue_total\": %lld, \"wait_after\": %lld}\n", issue_total, med[n]);
          first = false;
        }
      }
    }
  }
  if (f) { std::fprintf(f, "]}\n"); std::fclose(f); }
  return 0;
}
