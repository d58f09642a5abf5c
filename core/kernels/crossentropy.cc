#include "core/kernels/crossentropy.h"

#include <cmath>
#include <vector>

#include "core/kernels/partition.h"
#include "core/kernels/softmax_math.h"

namespace strata::kernels {
namespace {

// Rows per task (Note [Fixed partitions]).
constexpr long kRowsPerChunk = 16;

}  // namespace

float crossentropy_forward(float* probs, const float* logits, const int32_t* targets, int N,
                           int V) {
  std::vector<double> losses(static_cast<size_t>(N > 0 ? N : 0));
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const float* x = logits + r * V;
      float* p = probs + r * V;
      // Subtracting the row maximum keeps every exponent <= 0 (no overflow).
      const float max = detail::max_lanes(x, V);
      for (int v = 0; v < V; ++v) p[v] = detail::SoftmaxExp(x[v], max);
      const float sum = detail::sum_lanes(p, V);
      const float inv = 1.0f / sum;
      for (int v = 0; v < V; ++v) p[v] *= inv;
      losses[r] = detail::CrossEntropyRowLoss(max, sum, x[targets[r]]);
    }
  });
  // The mean, summed sequentially in double: a fixed order, and N is small next to V * N.
  double total = 0.0;
  for (int r = 0; r < N; ++r) total += losses[r];
  return N > 0 ? static_cast<float>(total / N) : 0.0f;
}

void crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets, float dloss,
                           int N, int V) {
  detail::for_each_chunk(N, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const float* p = probs + r * V;
      float* d = dlogits + r * V;
      // The loop stays branch-free (it vectorises); the target's element is then redone from
      // its saved value, which gives CrossEntropyDlogit's bits for every element.
      const int t = targets[r];
      const float d_target = d[t];
      for (int v = 0; v < V; ++v) d[v] = detail::CrossEntropyDlogit(d[v], p[v], false, dloss);
      d[t] = detail::CrossEntropyDlogit(d_target, p[t], true, dloss);
    }
  });
}

}  // namespace strata::kernels
