// The persistent kernel's tile counters: one per (device, stream) for eager launches, one per
// captured launch (tile_counters.h says why).
#include "attn/tile_counters.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "attn/capture_mode.h"

namespace fp8attn::attn {
namespace {

constexpr int kMaxDevices = 64;
constexpr int kChunk = 1024;  // counters per allocation (4 KiB)

struct DeviceCounters {
  std::vector<int*> chunks;  // never freed: a captured graph may hold any counter for ever
  int used = kChunk;         // counters handed out of chunks.back()
  std::map<unsigned long long, int*> by_stream;  // cudaStreamGetId -> its counter
};

std::mutex g_mu;
DeviceCounters g_dev[kMaxDevices];

std::string err(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorString(e);
}

// A counter never handed out before. Its memory is not zeroed: the caller zeroes it on its stream.
std::string fresh(DeviceCounters& d, int** out) {
  if (d.used == kChunk) {
    RelaxedCaptureMode relaxed;  // legal inside a capture, captures nothing
    int* chunk = nullptr;
    if (const cudaError_t e = cudaMalloc(&chunk, kChunk * sizeof(int)); e != cudaSuccess)
      return err("cudaMalloc of the tile counters", e);
    d.chunks.push_back(chunk);
    d.used = 0;
  }
  *out = d.chunks.back() + d.used++;
  return {};
}

}  // namespace

std::string acquire_tile_counter(cudaStream_t stream, TileCounter* out) {
  int dev = 0;
  if (const cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return err("cudaGetDevice", e);
  if (dev < 0 || dev >= kMaxDevices) return "device index >= 64";
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (const cudaError_t e = cudaStreamIsCapturing(stream, &capture); e != cudaSuccess)
    return err("cudaStreamIsCapturing", e);
  if (capture == cudaStreamCaptureStatusInvalidated)
    return "the stream's graph capture has been invalidated (by an earlier call)";
  std::lock_guard<std::mutex> lock(g_mu);
  DeviceCounters& d = g_dev[dev];
  if (capture == cudaStreamCaptureStatusActive) {
    // Replays of the graph may run beside any other launch: a counter of its own, zeroed by a
    // captured memset (a few hundred ns per replay, against one per stream for eager launches).
    out->needs_zero = true;
    return fresh(d, &out->counter);
  }
  // Eager: streams have process-unique ids (a destroyed stream's handle may be reused, its id not).
  unsigned long long id = 0;
  if (const cudaError_t e = cudaStreamGetId(stream, &id); e != cudaSuccess)
    return err("cudaStreamGetId", e);
  auto it = d.by_stream.find(id);
  if (it != d.by_stream.end()) {
    out->counter = it->second;
    out->needs_zero = false;
    return {};
  }
  if (std::string e = fresh(d, &out->counter); !e.empty()) return e;
  d.by_stream.emplace(id, out->counter);
  out->needs_zero = true;  // once: every launch leaves it at 0
  return {};
}

}  // namespace fp8attn::attn
