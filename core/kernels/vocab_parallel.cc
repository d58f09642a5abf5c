#include "core/kernels/vocab_parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/kernels/partition.h"
#include "core/kernels/softmax_math.h"

namespace strata::kernels {
namespace {

// Rows per task (Note [Fixed partitions]), as crossentropy.cc and embedding.cc.
constexpr long kRowsPerChunk = 16;
constexpr long kEmbeddingRowsPerChunk = 32;

}  // namespace

void vocab_parallel_embedding_forward(float* out, const int32_t* tokens, const float* wte_rows,
                                      int B, int T, int C, int vocab_begin, int vocab_end) {
  detail::for_each_chunk(static_cast<long>(B) * T, kEmbeddingRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const int32_t token = tokens[r];
      float* y = out + r * C;
      if (token < vocab_begin || token >= vocab_end) {
        std::fill(y, y + C, -0.0f);
        continue;
      }
      const float* e = wte_rows + static_cast<long>(token - vocab_begin) * C;
      std::copy(e, e + C, y);
    }
  });
}

void vocab_parallel_logit_max(float* row_max, const float* logits, int N, int V, int valid) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      row_max[r] = valid > 0 ? detail::max_lanes(logits + r * V, valid)
                             : -std::numeric_limits<float>::infinity();
    }
  });
}

void vocab_parallel_softmax_partial(float* probs, float* row_max, float* sums,
                                    const float* rank_max, int tp, const float* logits,
                                    const int32_t* targets, int N, int V, int valid,
                                    int vocab_begin) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      float max = rank_max[r];
      for (int s = 1; s < tp; ++s) max = std::max(max, rank_max[static_cast<long>(s) * N + r]);
      row_max[r] = max;
      const float* x = logits + r * V;
      float* p = probs + r * V;
      for (int v = 0; v < valid; ++v) p[v] = detail::SoftmaxExp(x[v], max);
      std::fill(p + valid, p + V, 0.0f);
      sums[r] = detail::sum_lanes(p, valid);
      const int t = targets[r] - vocab_begin;
      sums[N + r] = (t >= 0 && t < valid) ? x[t] : -0.0f;
    }
  });
}

float vocab_parallel_crossentropy_forward(float* probs, const float* row_max, const float* sums,
                                          int N, int V) {
  std::vector<double> losses(static_cast<size_t>(N > 0 ? N : 0));
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      float* p = probs + r * V;
      const float inv = 1.0f / sums[r];
      for (int v = 0; v < V; ++v) p[v] *= inv;
      losses[r] = detail::CrossEntropyRowLoss(row_max[r], sums[r], sums[N + r]);
    }
  });
  double total = 0.0;
  for (int r = 0; r < N; ++r) total += losses[r];
  return N > 0 ? static_cast<float>(total / N) : 0.0f;
}

void vocab_parallel_crossentropy_backward(float* dlogits, const float* probs,
                                          const int32_t* targets, float dloss, int N, int V,
                                          int vocab_begin) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const float* p = probs + r * V;
      float* d = dlogits + r * V;
      const int t = targets[r] - vocab_begin;
      const bool owns = t >= 0 && t < V;
      // As crossentropy_backward: a branch-free loop, then the target's element redone from its
      // saved value so that it gets (p - 1) * dloss with one rounding.
      const float d_target = owns ? d[t] : 0.0f;
      for (int v = 0; v < V; ++v) d[v] = detail::CrossEntropyDlogit(d[v], p[v], false, dloss);
      if (owns) d[t] = detail::CrossEntropyDlogit(d_target, p[t], true, dloss);
    }
  });
}

}  // namespace strata::kernels
