// GradSums: the sums of squares of the paired gradients, chunk by chunk, measured when a writer
// releases a gradient, so that a clipping step need not read every gradient page again.
//
// Note [Norms at release]
// The clipping norm is the sum, in chunk order, of each chunk's kernels::sum_of_squares (Note
// [Update units] in layout.h). A writer's release of a gradient computes its chunks' sums from
// the pages it still holds; a write acquire marks them stale until then; a discard makes them 0
// (the gradient reads as zeros). A step takes the sums that are fresh and reads only the pages
// of stale ones (after a resume, say): the same function of the same bits, so the norm is the
// same whichever way each chunk got its sum. With discard_grads a step leaves every gradient
// zero, and so every sum 0.
// Threads: not thread-safe; the Runtime calls it under its lock.
#pragma once
#include <cstdint>
#include <vector>
#include "embed/layout.h"

namespace strata::embed {

// kernels::sum_of_squares of one chunk: what the release and the optimizer both compute.
double ChunkSumOfSquares(const float* x, uint64_t n);

class GradSums {
 public:
  explicit GradSums(const Layout* layout)
      : layout_(layout),
        sums_(layout->chunks().size(), 0.0),
        fresh_(layout->pairs().size(), 0) {}

  void stale(size_t pair) { fresh_[pair] = 0; }
  // `page_data(page)` is the pinned host copy of a page of the pair's gradient.
  template <typename PageData>
  void measure(size_t pair, PageData page_data);
  void zero(size_t pair);
  void zero_all();
  // Per chunk id: its sum, valid where fresh(chunk's pair).
  const std::vector<double>& sums() const { return sums_; }
  const std::vector<char>& fresh() const { return fresh_; }

 private:
  const Layout* layout_;
  std::vector<double> sums_;  // per chunk
  std::vector<char> fresh_;   // per pair
};

template <typename PageData>
void GradSums::measure(size_t pair, PageData page_data) {
  const size_t grad = layout_->pairs()[pair].grad;
  const auto [first, last] = layout_->chunks_of(pair);
  for (size_t c = first; c < last; ++c) {
    const Chunk& chunk = layout_->chunks()[c];
    const auto [page, offset] = layout_->locate(grad, chunk.begin * sizeof(float));
    const float* x = reinterpret_cast<const float*>(static_cast<const char*>(page_data(page)) +
                                                    offset);
    sums_[c] = ChunkSumOfSquares(x, chunk.end - chunk.begin);
  }
  fresh_[pair] = 1;
}

}  // namespace strata::embed
