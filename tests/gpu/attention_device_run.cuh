// The device runner of the attention tests: a Problem's device copies, outputs poisoned and
// guarded (test_attention_util.cuh has the problems, the FP64 reference and the host mirror).
#pragma once

#include "test_attention_util.cuh"

namespace fp8attn::test {

// Device copies of a Problem, outputs poisoned with NaN (BF16 0xFFFF, FP32 0xFFFFFFFF) and
// surrounded by poisoned guard bands that must survive the call.
class DeviceRun {
 public:
  static constexpr size_t kGuard = 4096;  // bytes of guard before and after each output

  explicit DeviceRun(const Problem& p) : p_(p) {}
  ~DeviceRun() {
    for (void* ptr : allocs_) cudaFree(ptr);
  }

  template <class T>
  T* upload(const std::vector<T>& h) {
    if (h.empty()) return nullptr;
    void* d = nullptr;
    if (cudaMalloc(&d, h.size() * sizeof(T)) != cudaSuccess) return nullptr;
    allocs_.push_back(d);
    cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
    return static_cast<T*>(d);
  }
  uint8_t* poisoned(size_t bytes) {
    void* d = nullptr;
    if (cudaMalloc(&d, bytes + 2 * kGuard) != cudaSuccess) return nullptr;
    allocs_.push_back(d);
    cudaMemset(d, 0xFF, bytes + 2 * kGuard);
    return static_cast<uint8_t*>(d) + kGuard;
  }

  // Fills params for the problem with contiguous inputs and outputs; the caller may edit them.
  fp8attn_fwd_params params() {
    const Shape& s = p_.s;
    fp8attn_fwd_params a;
    fp8attn_fwd_params_init(&a, s.b, s.sq, s.sk, s.h, s.h_kv, kD);
    a.q = upload(p_.q8);
    a.k = upload(p_.k8);
    if (s.vt_fp16) {  // natural key order, FP16 codes of the same E4M3 values (exact)
      const int64_t pad = s.sk_pad();
      a.vt = upload(fp16_vt_codes(p_, int64_t(s.h_kv) * kD * pad, kD * pad, pad));
      a.vt_dtype = FP8ATTN_VT_FP16;
    } else {
      a.vt = upload(p_.vt8);
    }
    o_bytes_ = size_t(s.b) * s.sq * s.h * kD * 2;
    lse_bytes_ = size_t(s.b) * s.h * s.sq * 4;
    o_ = poisoned(o_bytes_);
    lse_ = poisoned(lse_bytes_);
    a.o = o_;
    a.lse = reinterpret_cast<float*>(lse_);
    a.q_descale = upload(p_.q_descale);
    a.qd_stride_b = int64_t(s.h) * s.sq, a.qd_stride_h = s.sq, a.qd_stride_s = 1;
    a.k_descale = upload(p_.k_descale);
    a.kd_stride_b = int64_t(s.h_kv) * s.k_blocks(), a.kd_stride_h = s.k_blocks();
    a.kd_stride_blk = s.k_head ? 0 : 1;  // k_head: one descale per (b, h_kv), 192-key blocks
    a.v_descale = upload(p_.v_descale);
    a.vd_stride_b = int64_t(s.h_kv) * kD, a.vd_stride_h = kD, a.vd_stride_d = 1;
    a.lse_bias = upload(p_.lse_bias);
    a.o_bias = upload(p_.o_bias);
    a.ob_stride_b = int64_t(s.h_kv) * kD, a.ob_stride_h = kD;
    a.softmax_scale = p_.softmax_scale;
    a.causal = s.causal;
    a.p_precision = s.p_precision;
    return a;
  }

  static std::vector<uint8_t> fetch(const void* d, size_t bytes) {
    std::vector<uint8_t> h(bytes);
    if (cudaMemcpy(h.data(), d, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) h.clear();
    return h;
  }

  // Downloads O and LSE; false (with a message) if a guard byte changed.
  bool download(Output& out, std::string& why) {
    std::vector<uint8_t> o(o_bytes_ + 2 * kGuard), l(lse_bytes_ + 2 * kGuard);
    if (cudaMemcpy(o.data(), o_ - kGuard, o.size(), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(l.data(), lse_ - kGuard, l.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
      why = std::string("cudaMemcpy: ") + cudaGetErrorString(cudaGetLastError());
      return false;
    }
    auto guards_intact = [](const std::vector<uint8_t>& v, size_t n) {
      for (size_t i = 0; i < kGuard; ++i)
        if (v[i] != 0xFF || v[kGuard + n + i] != 0xFF) return false;
      return true;
    };
    if (!guards_intact(o, o_bytes_)) why += "bytes around O were overwritten; ";
    if (!guards_intact(l, lse_bytes_)) why += "bytes around LSE were overwritten; ";
    out.o_bits.resize(o_bytes_ / 2);
    out.lse.resize(lse_bytes_ / 4);
    std::memcpy(out.o_bits.data(), o.data() + kGuard, o_bytes_);
    std::memcpy(out.lse.data(), l.data() + kGuard, lse_bytes_);
    return why.empty();
  }

 private:
  const Problem& p_;
  std::vector<void*> allocs_;
  uint8_t* o_ = nullptr;
  uint8_t* lse_ = nullptr;
  size_t o_bytes_ = 0, lse_bytes_ = 0;
};

// Waits for a launch on `run`'s buffers that returned st, and downloads the outputs.
inline ::testing::AssertionResult wait_and_download(DeviceRun& run, fp8attn_status st, Output& out) {
  if (st != FP8ATTN_SUCCESS)
    return ::testing::AssertionFailure() << "status " << st << ": " << fp8attn_last_error();
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return ::testing::AssertionFailure() << "kernel: " << cudaGetErrorString(e);
  std::string why;
  if (!run.download(out, why)) return ::testing::AssertionFailure() << why;
  return ::testing::AssertionSuccess();
}

// Launches the kernel on `a` (parameters of `run`'s buffers), waits, and downloads the outputs.
inline ::testing::AssertionResult launch_and_download(DeviceRun& run, const fp8attn_fwd_params& a, Output& out) {
  return wait_and_download(run, fp8attn_attention_fwd(&a, nullptr), out);
}

}  // namespace fp8attn::test
