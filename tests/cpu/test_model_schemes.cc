// Scheme options: quantization granularities, the exactness of smoothing and rotation, the named
// schemes and their NAME:key=value variants, and the evaluation's three references.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "model/codecs.h"
#include "model/evaluate.h"
#include "model/prepare.h"
#include "model/kernel_mirror.h"
#include "model/scheme.h"

namespace fm = fp8attn::model;

namespace {

// Everything exact but the option under test: FP32 operands, P and O.
const std::string kExact = "bf16-flash:q=fp32:k=fp32:v=fp32:p=fp32:o=fp32";

fm::Dataset data(const char* kind = "kbias", int s = 300, int h = 4, int hk = 2) {
  return fm::make_synthetic(kind, 2, s, h, hk, 128, 9);
}

double max_err(const fm::Tensor& o, const fm::TensorD& ref) {
  double m = 0;
  for (size_t i = 0; i < o.data.size(); ++i) m = std::max(m, std::fabs(o.data[i] - ref.data[i]));
  return m;
}

}  // namespace

TEST(Schemes, SmoothingAndRotationAreExact) {
  const fm::Dataset d = data();
  for (bool causal : {false, true}) {
    fm::AttnConfig cfg;
    cfg.causal = causal;
    const fm::ExactF64 ref = fm::attention_exact_f64(d.q, d.k, d.v, cfg);
    for (const char* opt : {"", ":smooth_k=1", ":smooth_q=1", ":smooth_v=1", ":hadamard_qk=1",
                            ":hadamard_v=1", ":smooth_q=1:smooth_k=1:smooth_v=1:hadamard_qk=1:hadamard_v=1"}) {
      const fm::Scheme s = fm::scheme_by_name(kExact + opt);
      const fm::SchemeRun r = fm::run_scheme(s, d.q, d.k, d.v, causal);
      // kbias keys (channel bias of std 8) make scores of size ~100: FP32 keeps ~1e-5 of O.
      EXPECT_LT(max_err(r.o, ref.o), 2e-4) << opt;
      double lse_err = 0;
      for (size_t i = 0; i < ref.lse.size(); ++i) lse_err = std::max(lse_err, std::fabs(r.lse[i] - ref.lse[i]));
      EXPECT_LT(lse_err, 1e-3) << opt;  // LSE ~ 100 on kbias data: ~1e-5 relative
    }
  }
}

// V smoothing is exact when l sums the P that multiplies V (P V' / l + mean(V) = P V / l).
TEST(Schemes, VSmoothingExactOnlyWithConsistentL) {
  const fm::Dataset d = data("gaussian");
  auto diff = [&](const std::string& base) {
    const fm::SchemeRun a = fm::run_scheme(fm::scheme_by_name(base), d.q, d.k, d.v, false);
    const fm::SchemeRun b = fm::run_scheme(fm::scheme_by_name(base + ":smooth_v=1"), d.q, d.k, d.v, false);
    double m = 0;
    for (size_t i = 0; i < a.o.data.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a.o.data[i] - b.o.data[i])));
    return m;
  };
  // V with a large mean, so that an inconsistent l matters.
  fm::Dataset shifted = d;
  for (float& x : shifted.v.data) x = fm::round_bf16(x + 20.0f);
  const std::string p8 = "bf16-flash:q=fp32:k=fp32:v=fp32:p=e4m3:p_offset=8:o=fp32";
  auto diff_shifted = [&](const std::string& base) {
    const fm::SchemeRun a = fm::run_scheme(fm::scheme_by_name(base), shifted.q, shifted.k, shifted.v, false);
    const fm::SchemeRun b = fm::run_scheme(fm::scheme_by_name(base + ":smooth_v=1"), shifted.q, shifted.k, shifted.v, false);
    double m = 0;
    for (size_t i = 0; i < a.o.data.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a.o.data[i] - b.o.data[i])));
    return m;
  };
  const double consistent = diff_shifted(p8 + ":l_rounded=1");
  const double inconsistent = diff_shifted(p8 + ":l_rounded=0");
  EXPECT_LT(consistent, 1e-4);
  EXPECT_GT(inconsistent, 100 * consistent);
  EXPECT_LT(diff(p8 + ":l_rounded=1"), 1e-5);
}

TEST(Schemes, Granularities) {
  const fm::Dataset d = data("outlier", 300, 4, 2);
  using G = fm::Granularity;
  for (G g : {G::kTensor, G::kBatchHead, G::kBlock, G::kToken, G::kChannel}) {
    for (const char* fmt : {"e4m3", "int8"}) {
      const std::string spec = std::string(kExact) + ":q=" + fmt + "." + fm::granularity_name(g) +
                               ":k=" + fmt + "." + fm::granularity_name(g) + ":v=" + fmt + "." +
                               fm::granularity_name(g);
      const fm::Scheme s = fm::scheme_by_name(spec);
      const fm::Prepared p = fm::prepare_operands(s, d.q, d.k, d.v, 0.0f);
      const bool int8 = std::string(fmt) == "int8";
      const float fmax = int8 ? 127.0f : 448.0f;
      for (const auto& [x, deq, heads_per_group] :
           {std::tuple{&d.q, &p.q_deq, 2}, std::tuple{&d.k, &p.k_deq, 1}, std::tuple{&d.v, &p.v_deq, 1}}) {
        // Group amax by brute force, then: the group's largest element maps to fmax exactly, and
        // every element is within the format's rounding of its group scale.
        std::map<std::tuple<int, int, int>, float> amax;
        auto key = [&](int b, int s2, int h, int c) {
          switch (g) {
            case G::kTensor: return std::tuple{0, 0, 0};
            case G::kBatchHead: return std::tuple{b, h / heads_per_group, 0};
            case G::kBlock: return std::tuple{b, h, s2 / 128};
            case G::kToken: return std::tuple{b, h, s2};
            case G::kChannel: return std::tuple{b, h, c};
          }
          return std::tuple{0, 0, 0};
        };
        for (int b = 0; b < x->b; ++b)
          for (int s2 = 0; s2 < x->s; ++s2)
            for (int h = 0; h < x->h; ++h)
              for (int c = 0; c < x->d; ++c) {
                float& a = amax[key(b, s2, h, c)];
                a = std::max(a, std::fabs((*x)(b, s2, h, c)));
              }
        for (int b = 0; b < x->b; ++b)
          for (int s2 = 0; s2 < x->s; ++s2)
            for (int h = 0; h < x->h; ++h)
              for (int c = 0; c < x->d; ++c) {
                const float xv = (*x)(b, s2, h, c), dv = (*deq)(b, s2, h, c);
                const float descale = amax[key(b, s2, h, c)] / fmax;
                const float bound = int8 ? 0.5f * descale * 1.0001f
                                         : std::ldexp(std::fabs(xv), -4) + std::ldexp(descale, -10) * 1.0001f;
                ASSERT_LE(std::fabs(xv - dv), bound + 1e-30f) << spec << " " << b << " " << s2 << " " << h << " " << c;
              }
      }
    }
  }
}

TEST(Schemes, HiLoIsSixteenTimesFiner) {
  const fm::Dataset d = data("gaussian");
  auto err = [&](const std::string& spec) {
    const fm::Prepared p = fm::prepare_operands(fm::scheme_by_name(spec), d.q, d.k, d.v, 0.0f);
    double se = 0;
    for (size_t i = 0; i < d.v.data.size(); ++i) se += std::pow(p.v_deq.data[i] - d.v.data[i], 2);
    return std::sqrt(se / d.v.data.size());
  };
  const double one = err(kExact + ":v=e4m3.channel");
  const double two = err(kExact + ":v=e4m3.channel.hilo");
  EXPECT_LT(two, one / 8);
}

TEST(Schemes, NamesAndVariants) {
  const std::vector<std::string> names = fm::scheme_names();
  const std::set<std::string> have(names.begin(), names.end());
  for (const char* n : {"bf16-flash", "fa3-fp8", "fa3-fp8-rot", "fp8attn-kernel"}) EXPECT_TRUE(have.count(n)) << n;
  for (const std::string& n : names) EXPECT_EQ(fm::scheme_by_name(n).name, n);
  const fm::Scheme fa3 = fm::scheme_by_name("fa3-fp8");
  EXPECT_EQ(fa3.q.granularity, fm::Granularity::kBatchHead);
  EXPECT_EQ(fa3.numerics.p_offset_log2, 8.0f);
  EXPECT_EQ(fa3.numerics.rescale_slack_log2, 0.0f);  // FA3: the exact running max
  EXPECT_EQ(fa3.numerics.acc_pv, fm::Accumulator::kFP32);
  // The kernel's softmax spelled out (lab/study/schemes.py's KERNEL_SPELLED) is the kernel's.
  const fm::Scheme ks = fm::scheme_by_name("fa3-fp8:p_offset=5:slack=3");
  EXPECT_EQ(ks.numerics.p_offset_log2, fm::kernel_numerics().p_offset_log2);
  EXPECT_EQ(ks.numerics.rescale_slack_log2, fm::kernel_numerics().rescale_slack_log2);
  EXPECT_TRUE(fm::scheme_by_name("fa3-fp8-rot").hadamard_qk);
  const fm::Scheme v = fm::scheme_by_name("fa3-fp8:q=int8.token:p=e4m3hilo:acc=hopper:acc_bits=14:order=first");
  EXPECT_EQ(v.q.format, fm::Format::INT8);
  EXPECT_EQ(v.q.granularity, fm::Granularity::kToken);
  EXPECT_TRUE(v.numerics.p_hilo);
  EXPECT_EQ(v.numerics.acc_qk, fm::Accumulator::kHopperFP8);
  EXPECT_EQ(v.numerics.acc_mantissa_bits, 14);
  EXPECT_FALSE(v.numerics.last_to_first);
  EXPECT_NE(v.summary().find("q=int8.token"), std::string::npos);
  EXPECT_THROW(fm::scheme_by_name("nope"), std::invalid_argument);
  EXPECT_THROW(fm::scheme_by_name("fa3-fp8:bogus=1"), std::invalid_argument);
  EXPECT_THROW(fm::scheme_by_name("fa3-fp8:q=e9m9"), std::invalid_argument);
  EXPECT_THROW(fm::scheme_by_name("fp8attn-kernel:q=e4m3.token"), std::invalid_argument);
  EXPECT_NO_THROW(fm::scheme_by_name("fp8attn-kernel:smooth_v=0:prepass_q_block=1"));
  // l_mix: both row sums, mixed (off, -1, unless asked); a weight outside [0, 1] is refused.
  EXPECT_LT(fa3.numerics.l_mix, 0.0f);
  const fm::Scheme mix = fm::scheme_by_name("fa3-fp8:l_mix=0.5");
  EXPECT_EQ(mix.numerics.l_mix, 0.5f);
  EXPECT_NE(mix.summary().find("l_mix="), std::string::npos);
  EXPECT_THROW(fm::scheme_by_name("fa3-fp8:l_mix=1.5"), std::invalid_argument);
  EXPECT_THROW(fm::scheme_by_name("fa3-fp8:l_mix=-0.1"), std::invalid_argument);
  EXPECT_THROW(fm::scheme_by_name("fa3-fp8:l_mix=nan"), std::invalid_argument);
}

// l_mix = a: l = a x (the rounded P's sum) + (1 - a) x (the FP32 p's sum). Its ends are the two
// single sums bit for bit (0 x a finite sum is 0), and a middle weight gives an LSE between
// theirs on every row (l is a convex mix of the two positive sums).
TEST(Schemes, LMixEndsAreTheTwoSums) {
  const fm::Dataset d = data("outlier", 300, 2, 1);
  const std::string base = "fa3-fp8:p_offset=8:slack=0:block=192";
  const fm::SchemeRun r = fm::run_scheme(fm::scheme_by_name(base + ":l_rounded=1"), d.q, d.k, d.v, true);
  const fm::SchemeRun f = fm::run_scheme(fm::scheme_by_name(base + ":l_rounded=0"), d.q, d.k, d.v, true);
  const fm::SchemeRun m1 = fm::run_scheme(fm::scheme_by_name(base + ":l_mix=1"), d.q, d.k, d.v, true);
  const fm::SchemeRun m0 = fm::run_scheme(fm::scheme_by_name(base + ":l_mix=0"), d.q, d.k, d.v, true);
  const fm::SchemeRun mh = fm::run_scheme(fm::scheme_by_name(base + ":l_mix=0.5"), d.q, d.k, d.v, true);
  EXPECT_EQ(m1.o_acc.data, r.o_acc.data);
  EXPECT_EQ(m0.o_acc.data, f.o_acc.data);
  EXPECT_EQ(m1.lse, r.lse);
  EXPECT_EQ(m0.lse, f.lse);
  ASSERT_EQ(mh.lse.size(), r.lse.size());
  int differs = 0;
  for (size_t i = 0; i < mh.lse.size(); ++i) {
    const float lo = std::min(r.lse[i], f.lse[i]), hi = std::max(r.lse[i], f.lse[i]);
    EXPECT_TRUE(mh.lse[i] >= lo - 1e-6f && mh.lse[i] <= hi + 1e-6f) << i;
    differs += r.lse[i] != f.lse[i];
  }
  EXPECT_GT(differs, 0);  // the two sums differ somewhere, so the ends above mean something
}

TEST(Evaluate, ThreeReferences) {
  const fm::Dataset d = fm::make_synthetic("outlier", 1, 512, 2, 1, 128, 4);
  std::vector<fm::Scheme> schemes = {fm::scheme_by_name("fa3-fp8"), fm::scheme_by_name("fp8attn-kernel"),
                                     fm::scheme_by_name("sage2-like")};
  const std::vector<fm::EvalRecord> recs = fm::evaluate(d, true, schemes, fm::EvalOptions{});
  ASSERT_EQ(recs.size(), 12u);  // bf16-flash added, three references each
  std::map<std::pair<std::string, std::string>, fm::EvalRecord> by;
  for (const auto& r : recs) by[{r.scheme, r.reference}] = r;
  const auto at = [&](const char* s, const char* r) { return by[std::make_pair(std::string(s), std::string(r))]; };
  EXPECT_DOUBLE_EQ(at("bf16-flash", "end_to_end").rmse_ratio, 1.0);
  EXPECT_EQ(at("bf16-flash", "floor").err.rmse, 0.0);
  for (const char* s : {"fa3-fp8", "fp8attn-kernel", "sage2-like"}) {
    const fm::EvalRecord e2e = at(s, "end_to_end"), ko = at(s, "kernel_only"), fl = at(s, "floor");
    EXPECT_TRUE(e2e.err.finite);
    EXPECT_GT(e2e.rmse_ratio, 1.0) << s;   // FP8 is worse than BF16 end to end
    EXPECT_GT(fl.err.rmse, 0.0) << s;
    // The errors compose: end_to_end is within the sum of kernel_only and floor.
    EXPECT_LE(e2e.err.rmse, (ko.err.rmse + fl.err.rmse) * 1.0001) << s;
    EXPECT_GT(e2e.err.cosine, 0.99) << s;
  }
}
