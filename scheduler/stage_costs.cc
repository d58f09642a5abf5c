#include "scheduler/stage_costs.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/device/kernel_table.h"
#include "core/nn/gpt_blocks.h"

namespace strata::scheduler {
namespace {

constexpr int kRuns = 3;

// The fastest of kRuns runs of `work`, in seconds.
template <typename Work>
double Fastest(tbb::task_arena& arena, const Work& work) {
  double best = 1e30;
  for (int r = 0; r < kRuns; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    arena.execute(work);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                              .count());
  }
  return best;
}

}  // namespace

StageCosts MeasureStageCosts(const GptLayout& layout, int micro_rows, int seq, int threads) {
  const GptConfig& c = layout.config;
  const KernelTable& k = CpuKernelTable();
  const int B = micro_rows, T = seq;
  const int64_t BTC = int64_t(B) * T * c.n_embd;
  int64_t largest = 0;
  for (const BlockSpec& b : layout.blocks) largest = std::max(largest, b.numel);
  std::vector<float> params(size_t(largest), 0.01f), grads(size_t(largest), 0.0f);
  std::vector<float> wte_grads(size_t(layout.embedding().numel), 0.0f);
  std::vector<float> acts_buf(size_t(TransformerActsFloats(c, B, T)));
  std::vector<float> head_buf(size_t(HeadActsFloats(c, B, T)));
  std::vector<float> scratch_buf(size_t(BackwardScratchFloats(c, B, T)));
  std::vector<float> x(size_t(BTC), 0.1f), dres(size_t(BTC), 0.0f);
  std::vector<int32_t> tokens(size_t(B) * T, 0);
  const TransformerActs acts = CarveTransformerActs(c, B, T, acts_buf.data());
  const HeadActs head = CarveHeadActs(c, B, T, head_buf.data());
  const BackwardScratch scratch = CarveBackwardScratch(c, B, T, scratch_buf.data());
  const float* wte = params.data() + layout.embedding().tensors[kWte].offset;
  float* dwte = wte_grads.data() + layout.embedding().tensors[kWte].offset;
  tbb::task_arena arena(threads);
  StageCosts costs;
  if (c.n_layer > 0) {
    const double block = Fastest(arena, [&] {
      TransformerForward(k, layout, 0, params.data(), x.data(), B, T, acts);
      TransformerBackward(k, layout, 0, params.data(), grads.data(), x.data(), B, T, acts,
                          scratch, dres.data(), /*first=*/true);
    });
    costs.blocks.assign(size_t(c.n_layer), block);
  }
  costs.embedding = Fastest(arena, [&] {
    EmbeddingForward(k, layout, params.data(), tokens.data(), B, T, x.data());
    EmbeddingBackward(k, layout, grads.data(), dres.data(), tokens.data(), B, T, scratch,
                      /*first_wpe=*/true, /*first_wte=*/true);
  });
  costs.head = Fastest(arena, [&] {
    HeadForward(k, layout, params.data(), wte, x.data(), tokens.data(), B, T, head);
    HeadBackward(k, layout, params.data(), grads.data(), wte, dwte, x.data(), tokens.data(), B, T,
                 head, scratch, 1.0f / float(B * T), dres.data(), /*first=*/true);
  });
  return costs;
}

}  // namespace strata::scheduler
