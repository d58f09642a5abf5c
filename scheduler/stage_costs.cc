#include "scheduler/stage_costs.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/device/kernel_table.h"

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

StageCosts MeasureStageCosts(const Model& model, int micro_rows, int seq, int threads) {
  const ModelLayout& layout = model.layout();
  const int L = model.shape().n_layer;
  const KernelTable& k = CpuKernelTable();
  const int B = micro_rows, T = seq;
  const int64_t BTC = int64_t(B) * T * model.shape().n_embd;
  int64_t largest = 0;
  for (const BlockSpec& b : layout.blocks) largest = std::max(largest, b.numel);
  // Finite parameters of a small scale: the costs do not depend on the values.
  std::vector<float> params(size_t(largest), 0.01f), grads(size_t(largest), 0.0f);
  std::vector<float> embedding(size_t(layout.embedding().numel), 0.01f);
  std::vector<float> embedding_grads(size_t(layout.embedding().numel), 0.0f);
  std::vector<float> acts(size_t(model.layer_acts_floats(B, T)));
  std::vector<float> head(size_t(model.head_acts_floats(B, T)));
  std::vector<float> scratch(size_t(model.scratch_floats(B, T)));
  std::vector<float> x(size_t(BTC), 0.1f), dres(size_t(BTC), 0.0f);
  std::vector<int32_t> tokens(size_t(B) * T, 0);
  const std::vector<float> constants = model.constants(T);
  const OpShape s{.B = B, .T = T, .constants = constants.empty() ? nullptr : constants.data()};
  tbb::task_arena arena(threads);
  StageCosts costs;
  if (L > 0) {
    const double block = Fastest(arena, [&] {
      model.layer_forward(k, s, 0, params.data(), x.data(), acts.data());
      model.layer_backward(k, s, 0, params.data(), grads.data(), x.data(), acts.data(),
                           scratch.data(), dres.data(), /*first=*/true);
    });
    costs.blocks.assign(size_t(L), block);
  }
  costs.embedding = Fastest(arena, [&] {
    model.embedding_forward(k, s, params.data(), tokens.data(), x.data());
    model.embedding_backward(k, s, grads.data(), dres.data(), tokens.data(), scratch.data(),
                             /*first=*/true, /*first_tied=*/true);
  });
  costs.head = Fastest(arena, [&] {
    model.head_forward(k, s, params.data(), embedding.data(), x.data(), tokens.data(), head.data());
    model.head_backward(k, s, params.data(), grads.data(), embedding.data(), embedding_grads.data(),
                        x.data(), tokens.data(), head.data(), scratch.data(), 1.0f / float(B * T),
                        dres.data(), /*first=*/true);
  });
  return costs;
}

}  // namespace strata::scheduler
