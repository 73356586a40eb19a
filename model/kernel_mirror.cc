#include "model/kernel_mirror.h"

#include <vector>

#include <stdexcept>

#include "model/codecs.h"

namespace fp8attn::model {

namespace {
constexpr int kHeadDim = 128;

Tensor decode(const uint8_t* codes, int b, int s, int h) {
  Tensor t(b, s, h, kHeadDim);
  e4m3_to_floats(codes, t.data.data(), t.size());
  return t;
}
}  // namespace

FlashNumerics kernel_numerics(int p_precision, Accumulator acc, bool k_descale_per_block, bool vt_fp16,
                              bool three_warpgroups) {
  const bool hilo = p_precision == FP8ATTN_P_E4M3_HILO;
  FlashNumerics nm;
  if (p_precision == FP8ATTN_P_FP16) {
    // FP16 P against V in FP16 (up-converted from E4M3, exact, or an FP16 V^T's values: the
    // caller's V operand says which): one-level, the FP16 wgmma accumulating in FP32 (not the FP8
    // accumulator model: that is for the QK^T, still FP8), l the FP32 sum of the unrounded p, or,
    // in the kernels for an FP16 V^T with one K descale per head (kFusedRowSum, either mask), the
    // tensor core's sum of the FP16 P. Blocks: 192 keys in the two-warpgroup kernel for an FP16
    // V^T with per-head K descales (its registers allow it), 128 in its three-warpgroup form
    // (three_warpgroups: src/attn/select.h's fp16_vt_three_warpgroups), the converter kernel and
    // with per-block K descales.
    const bool fused_row_sum = vt_fp16 && !k_descale_per_block;
    nm.block_n = fused_row_sum && !three_warpgroups ? 192 : 128;
    nm.last_to_first = true;
    nm.p_format = Format::FP16;
    nm.p_hilo = false;
    nm.p_offset_log2 = FP8ATTN_P_OFFSET_LOG2;  // the kernel's softmax is the same for every P
    nm.rescale_slack_log2 = FP8ATTN_RESCALE_SLACK_LOG2;
    nm.l_from_rounded_p = fused_row_sum;
    nm.acc_qk = acc;
    nm.acc_pv = Accumulator::kFP32;
    nm.two_level = false;
    nm.exp2_ftz = true;
    nm.o_format = Format::BF16;
    return nm;
  }
  // FP8ATTN_P_E4M3_EXACT: FA3 FP8's softmax (offset 8, the exact running max, l the FP32 sum of
  // p), 192-key blocks (the kernel takes no per-block K descale).
  const bool exact = p_precision == FP8ATTN_P_E4M3_EXACT;
  nm.block_n = (hilo || (k_descale_per_block && !exact)) ? FP8ATTN_K_SCALE_BLOCK : 192;
  nm.last_to_first = true;
  nm.p_format = Format::E4M3;
  nm.p_hilo = hilo;
  nm.p_offset_log2 = exact ? FP8ATTN_P_EXACT_OFFSET_LOG2 : FP8ATTN_P_OFFSET_LOG2;
  nm.rescale_slack_log2 = exact ? 0.f : FP8ATTN_RESCALE_SLACK_LOG2;
  // E4M3 P (one-level, 128- or 192-key blocks): l is the tensor core's sum of the rounded P
  // (kVariantTcRowSum); hi+lo P (two-level) and the exact softmax: l sums the FP32 p.
  nm.l_from_rounded_p = !hilo && !exact;
  nm.acc_qk = acc;
  nm.acc_pv = acc;
  nm.two_level = hilo;
  nm.exp2_ftz = true;
  nm.o_format = Format::BF16;
  return nm;
}

KernelMirrorOutputs kernel_mirror_forward(const KernelMirrorInputs& in) {
  if (!in.q || !in.k || !(in.v || in.v_f16) || in.batch <= 0 || in.heads <= 0 || in.heads_kv <= 0 ||
      in.heads % in.heads_kv != 0 || in.seqlen_q < 0 || in.seqlen_k < 0) {
    throw std::invalid_argument("kernel_mirror_forward: bad shapes or null inputs");
  }
  if (in.p_precision != FP8ATTN_P_E4M3 && in.p_precision != FP8ATTN_P_E4M3_HILO &&
      in.p_precision != FP8ATTN_P_FP16 && in.p_precision != FP8ATTN_P_E4M3_EXACT) {
    throw std::invalid_argument("kernel_mirror_forward: unknown p_precision");
  }
  if (in.v_f16 && in.p_precision != FP8ATTN_P_FP16) {
    throw std::invalid_argument("kernel_mirror_forward: FP16 V needs p_precision FP8ATTN_P_FP16");
  }
  const Tensor q = decode(in.q, in.batch, in.seqlen_q, in.heads);
  const Tensor k = decode(in.k, in.batch, in.seqlen_k, in.heads_kv);
  Tensor v(in.batch, in.seqlen_k, in.heads_kv, kHeadDim);
  if (in.v_f16) {
    for (size_t i = 0; i < v.data.size(); ++i) v.data[i] = fp16_to_float(in.v_f16[i]);
  } else {
    v = decode(in.v, in.batch, in.seqlen_k, in.heads_kv);
  }
  FlashInputs fi;
  fi.q = &q;
  fi.k = &k;
  fi.v = &v;
  fi.q_scale = in.q_descale;
  const FlashNumerics nm =
      kernel_numerics(in.p_precision, in.accumulator, in.k_descale_per_block, in.vt_fp16 || in.v_f16,
                      in.three_warpgroups);
  // k_descale comes as (b, h_kv, ceil(sk / 128)); a per-head descale is its first entry per head,
  // laid out again for the engine's (b, h_kv, ceil(sk / block_n)).
  std::vector<float> k_scale_per_head;
  fi.k_scale = in.k_descale;
  if (in.k_descale && !in.k_descale_per_block) {
    const int blocks_in = (in.seqlen_k + FP8ATTN_K_SCALE_BLOCK - 1) / FP8ATTN_K_SCALE_BLOCK;
    const int blocks_out = (in.seqlen_k + nm.block_n - 1) / nm.block_n;
    k_scale_per_head.resize(static_cast<size_t>(in.batch) * in.heads_kv * blocks_out);
    for (int bh = 0; bh < in.batch * in.heads_kv; ++bh)
      for (int j = 0; j < blocks_out; ++j)
        k_scale_per_head[static_cast<size_t>(bh) * blocks_out + j] = in.k_descale[static_cast<size_t>(bh) * blocks_in];
    fi.k_scale = k_scale_per_head.data();
  }
  fi.v_scale = in.v_descale;
  fi.lse_bias = in.lse_bias;
  fi.o_bias = in.o_bias;
  fi.softmax_scale = in.softmax_scale;
  fi.causal = in.causal;
  FlashOutputs fo = flash_forward(fi, nm);
  KernelMirrorOutputs out;
  out.o_f32 = std::move(fo.o_acc);
  out.o = std::move(fo.o);
  out.lse = std::move(fo.lse);
  out.o_bf16.resize(out.o_f32.data.size());
  floats_to_bf16(out.o_f32.data.data(), out.o_bf16.data(), out.o_f32.size());
  return out;
}

std::vector<uint8_t> vt_to_v(const uint8_t* vt, int batch, int heads_kv, int seqlen_k,
                             int vt_seqlen_pad) {
  if (vt_seqlen_pad < seqlen_k || vt_seqlen_pad % FP8ATTN_VT_PAD != 0) {
    throw std::invalid_argument("vt_to_v: vt_seqlen_pad must be >= seqlen_k and a multiple of 32");
  }
  std::vector<uint8_t> v(static_cast<size_t>(batch) * seqlen_k * heads_kv * kHeadDim);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads_kv; ++h) {
      for (int c = 0; c < kHeadDim; ++c) {
        const uint8_t* src = vt + ((static_cast<size_t>(b) * heads_kv + h) * kHeadDim + c) * vt_seqlen_pad;
        for (int p = 0; p < vt_seqlen_pad; ++p) {
          const int key = p / FP8ATTN_VT_KEY_GROUP * FP8ATTN_VT_KEY_GROUP +
                          fp8attn_vt_key_at(p % FP8ATTN_VT_KEY_GROUP);
          if (key >= seqlen_k) continue;
          v[((static_cast<size_t>(b) * seqlen_k + key) * heads_kv + h) * kHeadDim + c] = src[p];
        }
      }
    }
  }
  return v;
}

std::vector<uint16_t> vt16_to_v(const uint16_t* vt, int batch, int heads_kv, int seqlen_k,
                                int vt_seqlen_pad) {
  if (vt_seqlen_pad < seqlen_k || vt_seqlen_pad % FP8ATTN_VT_PAD != 0) {
    throw std::invalid_argument("vt16_to_v: vt_seqlen_pad must be >= seqlen_k and a multiple of 32");
  }
  std::vector<uint16_t> v(static_cast<size_t>(batch) * seqlen_k * heads_kv * kHeadDim);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads_kv; ++h)
      for (int c = 0; c < kHeadDim; ++c) {
        const uint16_t* src = vt + ((static_cast<size_t>(b) * heads_kv + h) * kHeadDim + c) * vt_seqlen_pad;
        for (int key = 0; key < seqlen_k; ++key)
          v[((static_cast<size_t>(b) * seqlen_k + key) * heads_kv + h) * kHeadDim + c] = src[key];
      }
  return v;
}

}  // namespace fp8attn::model
