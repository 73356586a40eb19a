#include "attn/launch.cuh"

template fp8attn_status fp8attn::attn::launch<fp8attn::attn::KernelFP16VtTrioBlock128>(
    const fp8attn_fwd_params&, const fp8attn::DeviceInfo&, const fp8attn::attn::LaunchOptions&,
    cudaStream_t);
