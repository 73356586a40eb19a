// Programmatic dependent launch (sm_90): a grid launched after another on the same stream with
// quant/pdl.h's launch_after may start while that one drains.
#pragma once

namespace fp8attn::ptx {

// Waits until the previous grid of the stream has completed and its writes are visible. Before
// it, a dependent grid reads nothing that grid (or one before it) may still write, and writes
// nothing it may still read. Returns at once in a grid launched without the dependency.
__device__ __forceinline__ void wait_for_previous_grid() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// Lets the next grid (launched with launch_after) start as soon as every CTA of this one has
// called this or exited: its CTAs then take the SMs this grid's last wave leaves free.
__device__ __forceinline__ void let_next_grid_start() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace fp8attn::ptx
