// The persistent kernel's tile counters (host side). A counter is one int that is 0 between
// launches: the kernel's last claim resets it (scheduler.cuh), so no memset runs per launch.
// Two launches in flight at the same time must never share one, so:
//   - an eager launch uses the counter of its (device, stream): launches on one stream run one
//     after the other; the first launch on a stream zeroes its new counter on that stream;
//   - a launch captured into a CUDA graph gets a counter of its own, never handed out again
//     (zeroed by a memset node captured just before it), so the graph can be replayed on any
//     stream, beside any other launch. CUDA orders the launches of one graph executable; two
//     executables instantiated from one captured graph share its counters and must not run at
//     the same time.
// Capture-safe: allocations run in relaxed capture mode, nothing synchronizes.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace fp8attn::attn {

struct TileCounter {
  int* counter = nullptr;
  bool needs_zero = false;  // the caller must cudaMemsetAsync it to 0 on the stream first
};

// A counter for one launch on `stream` of the current device. Returns an empty string, or
// what failed.
std::string acquire_tile_counter(cudaStream_t stream, TileCounter* out);

}  // namespace fp8attn::attn
