// Note [Tensor-parallel slices] in core/nn/tp_layout.h: the ranks' slices put back together are
// the whole parameters, and computing a block from them the Megatron way (column-parallel by
// heads, row-parallel partial sums added over the ranks) gives the whole block's output up to
// float rounding.
#include "core/nn/tp_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/device/kernel_table.h"
#include "models/gpt2/gpt_blocks.h"

namespace strata {
namespace {

GptConfig Config() {
  GptConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.vocab_size = 300;  // padded to 384: the last rank's wte rows are partly padding
  c.block_size = 32;
  return c;
}

std::vector<float> Params(const BlockSpec& b) {
  std::vector<float> p(static_cast<size_t>(b.numel));
  InitBlockParams(b, 11, p.data());
  // Non-zero biases, so that a bias added twice or not at all shows.
  for (const TensorSpec& t : b.tensors) {
    if (t.shape.size() == 1) {
      for (int64_t i = 0; i < t.numel; ++i) p[size_t(t.offset + i)] += 0.01f * float(i % 7);
    }
  }
  return p;
}

TEST(TpLayout, TheRanksSlicesPutBackTogetherAreTheWholeParameters) {
  const GptConfig c = Config();
  const GptLayout full = MakeGptLayout(c);
  for (int tp : {1, 2, 4}) {
    const GptLayout local = MakeTpLayout(c, tp);
    ASSERT_EQ(local.num_blocks(), full.num_blocks());
    EXPECT_EQ(local.embedding().tensors[kWte].shape[0], TpPaddedVocab(c) / tp);
    EXPECT_EQ(local.transformer(0).tensors[kQkvW].shape[1], 3 * c.n_embd / tp);
    EXPECT_EQ(local.transformer(0).tensors[kFcProjW].shape[0], 4 * c.n_embd / tp);
    for (int b = 0; b < full.num_blocks(); ++b) {
      const std::vector<float> whole = Params(full.blocks[b]);
      std::vector<float> back(whole.size(), 0.0f);
      for (int r = 0; r < tp; ++r) {
        std::vector<float> mine(static_cast<size_t>(local.blocks[b].numel), -1.0f);
        SliceBlockParams(full.blocks[b], local.blocks[b], r, whole.data(), mine.data());
        UnsliceBlockParams(full.blocks[b], local.blocks[b], r, mine.data(), back.data());
      }
      EXPECT_EQ(0, std::memcmp(whole.data(), back.data(), whole.size() * sizeof(float)))
          << "tp " << tp << ", block " << b;
    }
  }
}

// The block's forward the tensor-parallel way, the row-parallel partial sums added over the ranks
// in rank order (what the tp group's all-reduce will do), against the whole block's.
TEST(TpLayout, ABlockComputedFromTheSlicesIsTheWholeBlockUpToRounding) {
  const GptConfig c = Config();
  const int B = 2, T = 16, N = B * T, C = c.n_embd;
  const KernelTable& k = CpuKernelTable();
  const GptLayout full = MakeGptLayout(c);
  const BlockSpec& fb = full.transformer(0);
  const std::vector<float> params = Params(fb);
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(size_t(N) * C);
  for (float& v : x) v = d(rng);
  std::vector<float> acts_buf(size_t(TransformerActsFloats(c, B, T)));
  const TransformerActs acts = CarveTransformerActs(c, B, T, acts_buf.data());
  TransformerForward(k, full, 0, params.data(), x.data(), B, T, acts);
  const std::vector<float> want(acts.out, acts.out + size_t(N) * C);

  for (int tp : {2, 4}) {
    const GptLayout tp_layout = MakeTpLayout(c, tp);
    const BlockSpec& lb = tp_layout.transformer(0);
    auto p = [&](const std::vector<float>& v, const BlockSpec& b, int t) {
      return v.data() + b.tensors[t].offset;
    };
    const int Cl = C / tp;
    std::vector<float> ln(size_t(N) * C), mean(N), rstd(N), res2(size_t(N) * C, 0.0f),
        out(size_t(N) * C, 0.0f), qkv(size_t(N) * 3 * Cl), atty(size_t(N) * Cl),
        att(size_t(B) * (c.n_head / tp) * T * T), fch(size_t(N) * 4 * Cl), gel(size_t(N) * 4 * Cl),
        part(size_t(N) * C);
    std::vector<std::vector<float>> local;
    for (int r = 0; r < tp; ++r) {
      local.emplace_back(size_t(lb.numel));
      SliceBlockParams(fb, lb, r, params.data(), local.back().data());
    }
    auto add = [](std::vector<float>& into, const float* from) {
      for (size_t i = 0; i < into.size(); ++i) into[i] = into[i] + from[i];
    };
    k.layernorm_forward(ln.data(), mean.data(), rstd.data(), x.data(), p(params, fb, kLn1W),
                        p(params, fb, kLn1B), N, C);
    for (int r = 0; r < tp; ++r) {  // attention on H/T heads, c_proj's partial sum
      k.linear_forward(qkv.data(), ln.data(), p(local[r], lb, kQkvW), p(local[r], lb, kQkvB), N, C,
                       3 * Cl);
      k.attention_forward(atty.data(), att.data(), qkv.data(), B, T, Cl, c.n_head / tp);
      k.linear_forward(part.data(), atty.data(), p(local[r], lb, kAttProjW), nullptr, N, Cl, C);
      add(res2, part.data());
    }
    for (int i = 0; i < N; ++i) {  // the replicated bias once, then the residual
      for (int j = 0; j < C; ++j) {
        float& v = res2[size_t(i) * C + j];
        v = v + p(params, fb, kAttProjB)[j] + x[size_t(i) * C + j];
      }
    }
    k.layernorm_forward(ln.data(), mean.data(), rstd.data(), res2.data(), p(params, fb, kLn2W),
                        p(params, fb, kLn2B), N, C);
    for (int r = 0; r < tp; ++r) {  // the MLP: GELU on the rank's columns, c_proj's partial sum
      k.linear_forward(fch.data(), ln.data(), p(local[r], lb, kFcW), p(local[r], lb, kFcB), N, C,
                       4 * Cl);
      k.gelu_forward(gel.data(), fch.data(), long(gel.size()));
      k.linear_forward(part.data(), gel.data(), p(local[r], lb, kFcProjW), nullptr, N, 4 * Cl, C);
      add(out, part.data());
    }
    double err = 0, norm = 0;
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < C; ++j) {
        const size_t at = size_t(i) * C + j;
        const float got = out[at] + p(params, fb, kFcProjB)[j] + res2[at];
        err += double(got - want[at]) * (got - want[at]);
        norm += double(want[at]) * want[at];
      }
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-5) << "tp " << tp;
  }
}

}  // namespace
}  // namespace strata
