// Seeded synthetic Q, K, V (BF16 values), generated per (tensor, batch, head) stream so that a
// subset of heads holds exactly the data the full set holds for those heads.
//   gaussian: N(0, 1)
//   outlier:  N(0, 1) + N(0, 100) x Bernoulli(0.001)  (the FlashAttention-3 paper's test)
//   kbias:    Q, V N(0, 1); K = N(0, 1) + beta_c, beta_c ~ N(0, kKBiasStd^2) per (batch, kv
//             head, channel): the channel-wise bias of real keys (Qwen2 k_proj bias, KIVI)
#ifndef FP8ATTN_MODEL_SYNTHETIC_H_
#define FP8ATTN_MODEL_SYNTHETIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "model/tensor.h"

namespace fp8attn::model {

inline constexpr float kKBiasStd = 8.0f;

struct Dataset {
  std::string name;
  Tensor q, k, v;  // (b, s, h, d), (b, s, h_kv, d) x 2; BF16 values
};

// heads: the query heads to generate (empty: all); their kv heads come along (see head_subset).
Dataset make_synthetic(const std::string& kind, int batch, int seqlen, int heads, int heads_kv,
                       int head_dim, uint64_t seed, const std::vector<int>& heads_subset = {});

// n heads evenly spaced over `heads` (heads % n == 0): i * heads / n. With GQA their kv heads are
// i * heads / n / (heads / heads_kv); the subset keeps the group structure (n/h_kv' heads each).
std::vector<int> head_subset(int heads, int n);
// The kv heads the query heads `q_heads` use, in order, without repeats.
std::vector<int> kv_heads_of(const std::vector<int>& q_heads, int heads, int heads_kv);

// q, k, v from a safetensors file (b, s, h, d) (BF16; any float dtype is accepted), restricted to
// head_subset(h, heads_subset) and their kv heads (0: all heads) and the first `batches` batch
// entries (0: all). The dataset is named after the file.
Dataset load_dataset(const std::string& path, int heads_subset = 0, int batches = 0);

}  // namespace fp8attn::model

#endif  // FP8ATTN_MODEL_SYNTHETIC_H_
