// The vocab-parallel embedding and LM head over the job's ranks (models/gpt2/tp_head.h, Note
// [Vocab-parallel cross-entropy]), their all-reduces on the real Comm, against the whole model's
// EmbeddingForward/Backward and HeadForward/Backward computed on every rank alone: the embedding's
// output and wte gradient rows bit for bit; the head's loss, input gradient, dwte rows and ln_f
// gradients within 1e-5; two micro-batches (the second contribution not first); the same bits run
// to run. The vocabulary (200) is padded to 256, so the last ranks hold padding rows.
#include "models/gpt2/tp_head.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "core/device/kernel_table.h"
#include "core/nn/tp_layout.h"
#include "models/gpt2/gpt_blocks.h"
#include "mpi_test_util.h"
#include "tp_test_util.h"

namespace strata::parallel::testing_mpi {
namespace {

constexpr int kB = 2, kT = 16, kN = kB * kT, kMicroBatches = 2;

// n_embd 16: GradSliceRows is 68, so the whole wte gradient and a 2-rank slice are made in
// several slices.
GptConfig Config() {
  GptConfig c;
  c.n_layer = 1;
  c.n_head = 4;
  c.n_embd = 16;
  c.vocab_size = 200;
  c.block_size = kT;
  return c;
}

// Ids of both micro-batches (kMicroBatches * kN): every rank's first and last rows, the last real
// id, and random ones.
std::vector<int32_t> Ids(int V, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(size_t(kMicroBatches) * kN);
  for (int32_t& id : ids) id = int32_t(rng() % uint32_t(V));
  const int32_t edges[] = {0, 31, 32, 63, 64, 127, 128, 191, 192, V - 1};
  for (size_t i = 0; i < std::size(edges); ++i) ids[i * 5 % ids.size()] = edges[i];
  ids[kN + 1] = V - 1;  // the second micro-batch too
  return ids;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TpAllReduce WorldSum() {
  Comm& world = World();
  return [&world](float* data, int64_t n) {
    ASSERT_TRUE(world.all_reduce_sum(data, data, size_t(n)).wait().ok());
  };
}

// Whether every rank holds the same values of `v` (each rank's copy gathered by a sum).
bool SameOnEveryRank(const std::vector<float>& v) {
  Comm& world = World();
  std::vector<float> all(v.size() * size_t(world.size()), 0.0f);
  std::copy(v.begin(), v.end(), all.begin() + v.size() * size_t(world.rank()));
  WorldSum()(all.data(), int64_t(all.size()));
  for (int r = 0; r < world.size(); ++r) {
    if (!std::equal(v.begin(), v.end(), all.begin() + v.size() * size_t(r))) return false;
  }
  return true;
}

// The model's state and inputs, the same on every rank; `tp` and `mine` this rank's slice.
struct Fixture {
  GptConfig c = Config();
  GptLayout full = MakeGptLayout(c);
  GptLayout tp;
  int rank = World().rank();
  std::vector<float> emb, head, mine;  // whole embedding and head blocks; this rank's embedding
  std::vector<int32_t> tokens = Ids(c.vocab_size, 1), targets = Ids(c.vocab_size, 2);
  std::vector<float> x = Random(size_t(kMicroBatches) * kN * c.n_embd, 3);
  std::vector<float> dres = Random(size_t(kMicroBatches) * kN * c.n_embd, 4);

  explicit Fixture(int ranks) : tp(MakeTpLayout(c, ranks)) {
    emb = Random(size_t(full.embedding().numel), 5, 0.5f);  // logits of a few units
    head.resize(size_t(full.head().numel));
    InitBlockParams(full.head(), 6, head.data());
    const std::vector<float> noise = Random(head.size(), 7, 0.1f);
    for (size_t i = 0; i < head.size(); ++i) head[i] += noise[i];
    mine.resize(size_t(tp.embedding().numel));
    SliceBlockParams(full.embedding(), tp.embedding(), rank, emb.data(), mine.data());
  }
  std::vector<float> SliceEmbedding(const std::vector<float>& whole) const {
    std::vector<float> out(size_t(tp.embedding().numel));
    SliceBlockParams(full.embedding(), tp.embedding(), rank, whole.data(), out.data());
    return out;
  }
  int64_t WteOffset() const { return tp.embedding().tensors[kWte].offset; }
  int LocalRows() const { return int(tp.embedding().tensors[kWte].shape[0]); }
};

std::vector<float> EmbeddingGrads(const Fixture& f, bool sliced) {
  const GptLayout& layout = sliced ? f.tp : f.full;
  const int tp = sliced ? World().size() : 1;  // exactly a slice's scratch
  std::vector<float> scratch_buf(size_t(BackwardScratchFloats(f.c, kB, kT, tp)));
  const BackwardScratch s = CarveBackwardScratch(f.c, kB, kT, scratch_buf.data(), tp);
  std::vector<float> grads(size_t(layout.embedding().numel), 0.0f);
  for (int m = 0; m < kMicroBatches; ++m) {
    const float* dres = f.dres.data() + size_t(m) * kN * f.c.n_embd;
    const int32_t* tok = f.tokens.data() + size_t(m) * kN;
    if (sliced) {
      TpEmbeddingBackward(CpuKernelTable(), f.tp, f.rank, grads.data(), dres, tok, kB, kT, s,
                          m == 0, m == 0);
    } else {
      EmbeddingBackward(CpuKernelTable(), f.full, grads.data(), dres, tok, kB, kT, s, m == 0,
                        m == 0);
    }
  }
  return grads;
}

struct HeadRun {
  std::vector<float> losses, dres, head_grads, emb_grads;
};

// Both micro-batches through the head, forward then backward, the second not first: the whole
// model, or (sliced) this rank's vocabulary.
HeadRun RunHead(const Fixture& f, bool sliced) {
  const KernelTable& k = CpuKernelTable();
  const GptLayout& layout = sliced ? f.tp : f.full;
  const int tp = sliced ? World().size() : 1;  // exactly a slice's activations and scratch
  std::vector<float> acts_buf(size_t(HeadActsFloats(f.c, kB, kT, tp)));
  std::vector<float> scratch_buf(size_t(BackwardScratchFloats(f.c, kB, kT, tp)));
  std::vector<float> stats(size_t(TpHeadStatsFloats(kB, kT, World().size())));
  const HeadActs a = CarveHeadActs(f.c, kB, kT, acts_buf.data(), tp);
  const BackwardScratch s = CarveBackwardScratch(f.c, kB, kT, scratch_buf.data(), tp);
  const std::vector<float>& emb = sliced ? f.mine : f.emb;
  const float* wte = emb.data() + layout.embedding().tensors[kWte].offset;
  HeadRun r;
  r.head_grads.assign(f.head.size(), 0.0f);
  r.emb_grads.assign(emb.size(), 0.0f);
  float* dwte = r.emb_grads.data() + layout.embedding().tensors[kWte].offset;
  const int C = f.c.n_embd;
  const float dloss = 1.0f / float(kN * kMicroBatches);
  std::vector<float> dres(size_t(kN) * C);
  for (int m = 0; m < kMicroBatches; ++m) {
    const float* x = f.x.data() + size_t(m) * kN * C;
    const int32_t* tgt = f.targets.data() + size_t(m) * kN;
    const bool first = m == 0;
    if (sliced) {
      r.losses.push_back(TpHeadForward(k, f.tp, f.rank, f.head.data(), wte, x, tgt, kB, kT, a,
                                       stats.data(), WorldSum()));
      TpHeadBackward(k, f.tp, f.rank, f.head.data(), r.head_grads.data(), wte, dwte, x, tgt, kB, kT,
                     a, s, dloss, dres.data(), first, WorldSum());
    } else {
      r.losses.push_back(HeadForward(k, f.full, f.head.data(), wte, x, tgt, kB, kT, a));
      HeadBackward(k, f.full, f.head.data(), r.head_grads.data(), wte, dwte, x, tgt, kB, kT, a, s,
                   dloss, dres.data(), first);
    }
    r.dres.insert(r.dres.end(), dres.begin(), dres.end());
  }
  return r;
}

TEST(TpHead, EmbeddingForwardGivesTheWholeModelsBits) {
  const Fixture f(World().size());
  const size_t n = size_t(kN) * f.c.n_embd;
  for (int m = 0; m < kMicroBatches; ++m) {
    const int32_t* tok = f.tokens.data() + size_t(m) * kN;
    std::vector<float> want(n), got(n, 1.0f);
    EmbeddingForward(CpuKernelTable(), f.full, f.emb.data(), tok, kB, kT, want.data());
    TpEmbeddingForward(CpuKernelTable(), f.tp, f.rank, f.mine.data(), tok, kB, kT, got.data(),
                       WorldSum());
    EXPECT_TRUE(SameBits(got, want)) << "micro-batch " << m << " on rank " << f.rank;
  }
}

TEST(TpHead, EmbeddingBackwardGivesTheWholeModelsRows) {
  const Fixture f(World().size());
  const std::vector<float> want = f.SliceEmbedding(EmbeddingGrads(f, /*sliced=*/false));
  const std::vector<float> got = EmbeddingGrads(f, /*sliced=*/true);
  for (const TensorSpec& t : f.tp.embedding().tensors) {
    EXPECT_EQ(std::memcmp(got.data() + t.offset, want.data() + t.offset, t.numel * sizeof(float)),
              0)
        << t.name << " on rank " << f.rank;
  }
  EXPECT_TRUE(SameBits(EmbeddingGrads(f, /*sliced=*/true), got)) << "a second run, other bits";
}

TEST(TpHead, HeadMatchesTheWholeModelUpToRounding) {
  const Fixture f(World().size());
  const HeadRun whole = RunHead(f, /*sliced=*/false);
  const HeadRun tp = RunHead(f, /*sliced=*/true);
  const int C = f.c.n_embd;
  for (int m = 0; m < kMicroBatches; ++m) {
    EXPECT_NEAR(tp.losses[m], whole.losses[m], 1e-5 * std::abs(whole.losses[m])) << m;
    EXPECT_LT(RelativeError(tp.dres.data() + m * kN * C, whole.dres.data() + m * kN * C, kN * C),
              1e-5)
        << "micro-batch " << m << " on rank " << f.rank;
  }
  EXPECT_TRUE(SameOnEveryRank(tp.losses)) << "every rank returns the same loss";
  EXPECT_TRUE(SameOnEveryRank(tp.dres)) << "and the same input gradient";
  EXPECT_TRUE(SameOnEveryRank(tp.head_grads)) << "and the same ln_f gradients";
  for (const TensorSpec& t : f.tp.head().tensors) {
    EXPECT_LT(
        RelativeError(tp.head_grads.data() + t.offset, whole.head_grads.data() + t.offset, t.numel),
        1e-5)
        << t.name;
  }
  const std::vector<float> want = f.SliceEmbedding(whole.emb_grads);
  const int64_t wte = f.WteOffset(), rows = f.LocalRows();
  EXPECT_LT(RelativeError(tp.emb_grads.data() + wte, want.data() + wte, rows * C), 1e-5)
      << "dwte on rank " << f.rank;
  const int64_t valid = std::clamp<int64_t>(f.c.vocab_size - f.rank * rows, 0, rows);
  for (int64_t i = valid * C; i < rows * C; ++i) {
    ASSERT_EQ(tp.emb_grads[size_t(wte + i)], 0.0f) << "padding row " << i / C;
  }
  const HeadRun again = RunHead(f, /*sliced=*/true);
  EXPECT_TRUE(SameBits(again.losses, tp.losses)) << "a second run gives the same bits";
  EXPECT_TRUE(SameBits(again.dres, tp.dres));
  EXPECT_TRUE(SameBits(again.head_grads, tp.head_grads));
  EXPECT_TRUE(SameBits(again.emb_grads, tp.emb_grads));
}

}  // namespace
}  // namespace strata::parallel::testing_mpi
