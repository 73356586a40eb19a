// CUDA graphs and concurrent streams: launches of several shapes (persistent ones among them:
// more tiles than SMs, causal and not, each precision mode, and the end-to-end path) captured
// into graphs, the graphs replayed many times on 4 streams at once beside eager launches on the
// same streams, and every replay's O and LSE compared bit for bit with an eager call's, on the
// device, by a compare kernel captured after the launch (so a replay that skipped a tile is
// caught even if a later one rewrites the output). Before each launch its outputs are poisoned
// (NaN) by a captured memset, so a tile left unwritten can never pass as an old value.
//
// Prints one line "RELIABILITY graph_replays=N streams=S graph_mismatches=M" for
// scripts/gpu/reliability.py. FP8ATTN_TEST_SEED overrides the seed (printed).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/attention.h"
#include "fp8attn/fp8attn.h"
#include "tests/gpu/attention_device_run.cuh"

namespace fp8attn::test {
namespace {

constexpr int kStreams = 4;
constexpr int kReplays = 25;  // per (stream, graph)

uint64_t seed_from_env(uint64_t dflt) {
  const char* e = std::getenv("FP8ATTN_TEST_SEED");
  return e ? std::strtoull(e, nullptr, 0) : dflt;
}

// CUDA_OK (test_attention_util.cuh): ASSERT_EQ on a cudaError_t, with its string.

// mismatches += number of 32-bit words where a and b differ (bitwise: NaN == NaN of the same bits).
__global__ void count_mismatches(const uint32_t* a, const uint32_t* b, int64_t n,
                                 unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
    local += a[i] != b[i];
  if (local) atomicAdd(mismatches, local);
}

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    if (cudaMalloc(&p, n) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// One kernel-alone launch with its own outputs and the eager reference outputs to compare with.
struct Launch {
  fp8attn_fwd_params params;
  std::unique_ptr<DeviceBuffer> o, lse;
};

// Enqueues on `st`: poison O and LSE, the launch, and the comparisons with ref_o / ref_lse.
void enqueue_checked(const fp8attn_fwd_params& base, void* o, float* lse, const DeviceBuffer& ref_o,
                     const DeviceBuffer& ref_lse, unsigned long long* mismatches, cudaStream_t st,
                     fp8attn_status* status) {
  cudaMemsetAsync(o, 0xFF, ref_o.bytes, st);
  cudaMemsetAsync(lse, 0xFF, ref_lse.bytes, st);
  fp8attn_fwd_params p = base;
  p.o = o, p.lse = lse;
  *status = fp8attn_attention_fwd(&p, st);
  count_mismatches<<<64, 256, 0, st>>>(static_cast<const uint32_t*>(o),
                                       static_cast<const uint32_t*>(ref_o.p), int64_t(ref_o.bytes / 4), mismatches);
  count_mismatches<<<16, 256, 0, st>>>(reinterpret_cast<const uint32_t*>(lse),
                                       static_cast<const uint32_t*>(ref_lse.p), int64_t(ref_lse.bytes / 4),
                                       mismatches);
}

// The shapes: persistent (tiles > 132 SMs) in both masks and every precision mode, a GQA-16
// decode shape, and a small one-tile-per-CTA shape.
std::vector<Shape> graph_shapes() {
  std::vector<Shape> v;
  v.push_back({2, 1024, 1024, 16, 2, false});                          // 256 tiles of 128 rows
  v.push_back({2, 1024, 1536, 16, 4, true});                           // causal, sq != sk
  Shape hilo{1, 2048, 2048, 16, 16, true, FP8ATTN_P_E4M3_HILO};        // 256 tiles
  Shape fp16{1, 2048, 1000, 16, 8, false, FP8ATTN_P_FP16};
  v.push_back(hilo);
  v.push_back(fp16);
  Shape khead{3, 777, 2049, 16, 2, true};
  khead.k_head = true;  // 192-key default kernel
  v.push_back(khead);
  v.push_back({4, 1, 8192, 32, 2, false});  // decode, GQA 16: one tile per CTA
  return v;
}

// The first launch of a kernel configuration made inside a capture (global mode): its one-time
// set-up (shared-memory attribute, tile counters) must neither fail nor invalidate the capture.
// Runs first (definition order), so the two-level hi+lo kernel is launched for the first time
// here, on a persistent shape (192 tiles).
TEST(Graphs, FirstLaunchInsideCapture) {
  FP8ATTN_REQUIRE_SM90();
  const uint64_t seed = seed_from_env(0x6a7f01);
  std::printf("[ seed ] %llu\n", static_cast<unsigned long long>(seed));
  Shape s{1, 2048, 2048, 12, 4, false, FP8ATTN_P_E4M3_HILO};  // 192 tiles
  const Problem prob = make_problem(s, seed);
  DeviceRun run(prob);
  fp8attn_fwd_params p = run.params();
  cudaStream_t st;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  const fp8attn_status status = fp8attn_attention_fwd(&p, st);
  const cudaError_t end = cudaStreamEndCapture(st, &graph);
  ASSERT_EQ(status, FP8ATTN_SUCCESS) << fp8attn_last_error();
  ASSERT_EQ(end, cudaSuccess) << "the capture was invalidated: " << cudaGetErrorString(end);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, st));
  CUDA_OK(cudaStreamSynchronize(st));
  Output from_graph, eager;
  std::string why;
  ASSERT_TRUE(run.download(from_graph, why)) << why;
  CUDA_OK(cudaMemset(p.o, 0xFF, size_t(s.b) * s.sq * s.h * kD * 2));
  ASSERT_EQ(fp8attn_attention_fwd(&p, nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_TRUE(run.download(eager, why)) << why;
  EXPECT_EQ(from_graph.o_bits, eager.o_bits);
  EXPECT_EQ(0, std::memcmp(from_graph.lse.data(), eager.lse.data(), eager.lse.size() * 4));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(st);
}

TEST(Graphs, ConcurrentReplaysMatchEagerBitwise) {
  FP8ATTN_REQUIRE_SM90();
  const uint64_t seed = seed_from_env(0x6a7f02);
  std::printf("[ seed ] %llu\n", static_cast<unsigned long long>(seed));
  const std::vector<Shape> shapes = graph_shapes();
  std::vector<Problem> probs;
  std::vector<std::unique_ptr<DeviceRun>> runs;
  std::vector<fp8attn_fwd_params> base;
  std::vector<std::unique_ptr<DeviceBuffer>> ref_o, ref_lse;
  for (size_t i = 0; i < shapes.size(); ++i) probs.push_back(make_problem(shapes[i], seed + i));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    runs.push_back(std::make_unique<DeviceRun>(probs[i]));
    base.push_back(runs.back()->params());
    // The eager reference, on the legacy default stream, alone on the device.
    ASSERT_EQ(fp8attn_attention_fwd(&base.back(), nullptr), FP8ATTN_SUCCESS) << fp8attn_last_error();
    ref_o.push_back(std::make_unique<DeviceBuffer>(size_t(s.b) * s.sq * s.h * kD * 2));
    ref_lse.push_back(std::make_unique<DeviceBuffer>(size_t(s.b) * s.h * s.sq * 4));
    CUDA_OK(cudaMemcpy(ref_o.back()->p, base.back().o, ref_o.back()->bytes, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaMemcpy(ref_lse.back()->p, base.back().lse, ref_lse.back()->bytes, cudaMemcpyDeviceToDevice));
  }
  CUDA_OK(cudaDeviceSynchronize());

  unsigned long long* mismatches = nullptr;
  CUDA_OK(cudaMalloc(&mismatches, sizeof(unsigned long long)));
  CUDA_OK(cudaMemset(mismatches, 0, sizeof(unsigned long long)));
  cudaStream_t streams[kStreams];
  for (auto& st : streams) CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  // Per (stream, shape): a graph with outputs of its own, and eager outputs of its own.
  struct Slot {
    std::unique_ptr<DeviceBuffer> o, lse, eager_o, eager_lse;
    cudaGraphExec_t exec = nullptr;
  };
  std::vector<std::vector<Slot>> slots(kStreams);
  for (int si = 0; si < kStreams; ++si) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      Slot sl;
      sl.o = std::make_unique<DeviceBuffer>(ref_o[i]->bytes);
      sl.lse = std::make_unique<DeviceBuffer>(ref_lse[i]->bytes);
      sl.eager_o = std::make_unique<DeviceBuffer>(ref_o[i]->bytes);
      sl.eager_lse = std::make_unique<DeviceBuffer>(ref_lse[i]->bytes);
      cudaGraph_t g;
      fp8attn_status status = FP8ATTN_SUCCESS;
      CUDA_OK(cudaStreamBeginCapture(streams[si], cudaStreamCaptureModeGlobal));
      enqueue_checked(base[i], sl.o->p, static_cast<float*>(sl.lse->p), *ref_o[i], *ref_lse[i],
                      mismatches, streams[si], &status);
      const cudaError_t end = cudaStreamEndCapture(streams[si], &g);
      ASSERT_EQ(status, FP8ATTN_SUCCESS) << shapes[i].name() << ": " << fp8attn_last_error();
      ASSERT_EQ(end, cudaSuccess) << shapes[i].name() << ": capture invalidated";
      CUDA_OK(cudaGraphInstantiate(&sl.exec, g, 0));
      cudaGraphDestroy(g);
      slots[si].push_back(std::move(sl));
    }
  }

  // Replays: every stream runs all its graphs, then an eager launch of each shape, kReplays
  // times; the four streams run side by side.
  long long replays = 0, eager_launches = 0;
  for (int rep = 0; rep < kReplays; ++rep) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      for (int si = 0; si < kStreams; ++si) {
        CUDA_OK(cudaGraphLaunch(slots[si][i].exec, streams[si]));
        ++replays;
      }
    }
    for (size_t i = 0; i < shapes.size(); ++i) {
      for (int si = 0; si < kStreams; ++si) {
        Slot& sl = slots[si][(i + si) % shapes.size()];  // different shapes side by side
        const size_t k = (i + si) % shapes.size();
        fp8attn_status status;
        enqueue_checked(base[k], sl.eager_o->p, static_cast<float*>(sl.eager_lse->p), *ref_o[k],
                        *ref_lse[k], mismatches, streams[si], &status);
        ASSERT_EQ(status, FP8ATTN_SUCCESS) << fp8attn_last_error();
        ++eager_launches;
      }
    }
  }
  CUDA_OK(cudaDeviceSynchronize());
  unsigned long long host_mismatches = 0;
  CUDA_OK(cudaMemcpy(&host_mismatches, mismatches, sizeof host_mismatches, cudaMemcpyDeviceToHost));
  std::printf("RELIABILITY graph_replays=%lld eager_launches=%lld streams=%d graph_mismatches=%llu\n",
              replays, eager_launches, kStreams, host_mismatches);
  EXPECT_EQ(host_mismatches, 0u) << "32-bit words of O/LSE that differ from the eager call's";
  for (auto& per : slots)
    for (auto& sl : per) cudaGraphExecDestroy(sl.exec);
  for (auto& st : streams) cudaStreamDestroy(st);
  cudaFree(mismatches);
}

// The end-to-end path (pre-pass + kernel) captured with a reserved workspace per stream, replayed
// on 4 streams at once: bitwise equal to the eager call. A workspace too small to be grown inside
// a capture is refused with a clear error, and the capture stays valid.
TEST(Graphs, EndToEndCapturedOnFourStreams) {
  FP8ATTN_REQUIRE_SM90();
  const uint64_t seed = seed_from_env(0x6a7f03);
  std::printf("[ seed ] %llu\n", static_cast<unsigned long long>(seed));
  const int B = 2, SQ = 1024, SK = 1536, H = 16, HKV = 4;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.f, 1.f);
  auto bf16_random = [&](size_t n) {
    std::vector<uint16_t> h(n);
    for (auto& x : h) x = model::float_to_bf16(n01(rng));
    return h;
  };
  const size_t nq = size_t(B) * SQ * H * kD, nk = size_t(B) * SK * HKV * kD;
  DeviceBuffer q(nq * 2), k(nk * 2), v(nk * 2);
  CUDA_OK(cudaMemcpy(q.p, bf16_random(nq).data(), nq * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(k.p, bf16_random(nk).data(), nk * 2, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(v.p, bf16_random(nk).data(), nk * 2, cudaMemcpyHostToDevice));
  auto tensor = [](const DeviceBuffer& d, int b, int s, int h) {
    return fp8attn_bf16_tensor{d.p, b, s, h, kD, int64_t(s) * h * kD, int64_t(h) * kD, kD};
  };
  fp8attn_attention_args a;
  fp8attn_attention_args_init(&a);
  a.q = tensor(q, B, SQ, H), a.k = tensor(k, B, SK, HKV), a.v = tensor(v, B, SK, HKV);
  a.causal = 1;
  const size_t o_bytes = nq * 2, lse_bytes = size_t(B) * H * SQ * 4;
  DeviceBuffer ref_o(o_bytes), ref_lse(lse_bytes);
  a.o = ref_o.p, a.lse = static_cast<float*>(ref_lse.p);
  fp8attn_workspace* eager_ws = fp8attn_workspace_create();
  ASSERT_EQ(fp8attn_attention(&a, eager_ws, nullptr), FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
  CUDA_OK(cudaDeviceSynchronize());
  fp8attn_workspace_destroy(eager_ws);

  unsigned long long* mismatches = nullptr;
  CUDA_OK(cudaMalloc(&mismatches, sizeof(unsigned long long)));
  CUDA_OK(cudaMemset(mismatches, 0, sizeof(unsigned long long)));
  const size_t ws_bytes = fp8attn_attention_workspace_bytes(B, SQ, SK, H, HKV, kD);
  cudaStream_t streams[kStreams];
  fp8attn_workspace* ws[kStreams];
  cudaGraphExec_t exec[kStreams];
  std::vector<std::unique_ptr<DeviceBuffer>> outs;
  for (int si = 0; si < kStreams; ++si) {
    CUDA_OK(cudaStreamCreateWithFlags(&streams[si], cudaStreamNonBlocking));
    ws[si] = fp8attn_workspace_create();
    // Too small, inside a capture: refused before any work, the capture survives.
    fp8attn_attention_args small = a;
    outs.push_back(std::make_unique<DeviceBuffer>(o_bytes));
    outs.push_back(std::make_unique<DeviceBuffer>(lse_bytes));
    small.o = outs[outs.size() - 2]->p, small.lse = static_cast<float*>(outs.back()->p);
    cudaGraph_t g;
    CUDA_OK(cudaStreamBeginCapture(streams[si], cudaStreamCaptureModeGlobal));
    const fp8attn_status refused = fp8attn_attention(&small, ws[si], streams[si]);
    const std::string why = fp8attn_quant_last_error();
    CUDA_OK(cudaStreamEndCapture(streams[si], &g));  // still valid: nothing was attempted
    cudaGraphDestroy(g);
    EXPECT_EQ(refused, FP8ATTN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(why.find("workspace"), std::string::npos) << why;
    ASSERT_EQ(fp8attn_workspace_reserve(ws[si], ws_bytes), FP8ATTN_SUCCESS);  // outside any capture
    CUDA_OK(cudaStreamBeginCapture(streams[si], cudaStreamCaptureModeGlobal));
    cudaMemsetAsync(small.o, 0xFF, o_bytes, streams[si]);
    cudaMemsetAsync(small.lse, 0xFF, lse_bytes, streams[si]);
    const fp8attn_status ok = fp8attn_attention(&small, ws[si], streams[si]);
    count_mismatches<<<64, 256, 0, streams[si]>>>(static_cast<const uint32_t*>(small.o),
                                                  static_cast<const uint32_t*>(ref_o.p), int64_t(o_bytes / 4), mismatches);
    count_mismatches<<<16, 256, 0, streams[si]>>>(reinterpret_cast<const uint32_t*>(small.lse),
                                                  static_cast<const uint32_t*>(ref_lse.p), int64_t(lse_bytes / 4), mismatches);
    const cudaError_t end = cudaStreamEndCapture(streams[si], &g);
    ASSERT_EQ(ok, FP8ATTN_SUCCESS) << fp8attn_quant_last_error();
    ASSERT_EQ(end, cudaSuccess) << "capture invalidated";
    CUDA_OK(cudaGraphInstantiate(&exec[si], g, 0));
    cudaGraphDestroy(g);
  }
  long long replays = 0;
  for (int rep = 0; rep < kReplays; ++rep) {
    for (int si = 0; si < kStreams; ++si) {
      CUDA_OK(cudaGraphLaunch(exec[si], streams[si]));
      ++replays;
    }
  }
  CUDA_OK(cudaDeviceSynchronize());
  unsigned long long host_mismatches = 0;
  CUDA_OK(cudaMemcpy(&host_mismatches, mismatches, sizeof host_mismatches, cudaMemcpyDeviceToHost));
  std::printf("RELIABILITY graph_replays=%lld streams=%d graph_mismatches=%llu (end to end)\n", replays,
              kStreams, host_mismatches);
  EXPECT_EQ(host_mismatches, 0u);
  for (int si = 0; si < kStreams; ++si) {
    cudaGraphExecDestroy(exec[si]);
    cudaStreamDestroy(streams[si]);
    fp8attn_workspace_destroy(ws[si]);
  }
  cudaFree(mismatches);
}

}  // namespace
}  // namespace fp8attn::test
