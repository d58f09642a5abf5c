#include "parallel/rank_fold.h"

#include "core/util/check.h"

namespace strata::parallel {
namespace {

// One pass per rank over the output keeps the memory access sequential; the order in which each
// element's terms are added is still rank 0, 1, 2, ... The build is ISO C++ without
// -ffast-math, so the compiler may vectorize across i but never reassociates the adds.
template <typename T>
void Fold(const T* chunks, size_t count, int ranks, T* out) {
  STRATA_CHECK(ranks >= 1) << "fold over " << ranks << " ranks";
  if (out != chunks) {
    for (size_t i = 0; i < count; ++i) out[i] = chunks[i];
  }
  for (int r = 1; r < ranks; ++r) {
    const T* chunk = chunks + static_cast<size_t>(r) * count;
    for (size_t i = 0; i < count; ++i) out[i] = out[i] + chunk[i];
  }
}

}  // namespace

void FoldInRankOrder(const float* chunks, size_t count, int ranks, float* out) {
  Fold(chunks, count, ranks, out);
}

void FoldInRankOrder(const double* chunks, size_t count, int ranks, double* out) {
  Fold(chunks, count, ranks, out);
}

size_t PaddedChunkCount(size_t count, int ranks) {
  STRATA_CHECK(ranks >= 1) << "chunks for " << ranks << " ranks";
  const auto n = static_cast<size_t>(ranks);
  return count / n + (count % n != 0 ? 1 : 0);
}

}  // namespace strata::parallel
