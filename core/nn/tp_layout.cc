#include "core/nn/tp_layout.h"

#include <string>
#include <vector>

#include "core/util/check.h"

namespace strata {
namespace {

int64_t Product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= shape[i];
  return n;
}

// The cut dimension's full extent as the slices see it: a vocabulary padded.
int64_t CutExtent(const TensorSpec& t) {
  const int64_t d = t.shape[size_t(t.tp_dim)];
  return t.tp == TpRule::kVocab ? TpPaddedRows(d) : d;
}

// For each element of rank `rank`'s slice (`local`, SliceLayoutForTp's) of every tensor: its
// index in the block `local` and in the whole block `full` (-1 for a padding row of a padded
// vocabulary). The slice keeps, of each part of the cut dimension, the rank's T-th.
template <typename Copy>
void ForEachElement(const BlockSpec& full, const BlockSpec& local, int rank, const Copy& copy) {
  STRATA_CHECK_EQ(full.tensors.size(), local.tensors.size());
  for (size_t t = 0; t < full.tensors.size(); ++t) {
    const TensorSpec& f = full.tensors[t];
    const TensorSpec& l = local.tensors[t];
    if (f.tp == TpRule::kReplicated) {
      for (int64_t e = 0; e < f.numel; ++e) copy(l.offset + e, f.offset + e);
      continue;
    }
    const size_t dim = size_t(f.tp_dim);
    const int64_t outer = Product(l.shape, 0, dim),
                  inner = Product(l.shape, dim + 1, l.shape.size());
    const int64_t d_local = l.shape[dim], d_full = f.shape[dim];
    const int64_t part_local = d_local / f.tp_parts, part_full = CutExtent(f) / f.tp_parts;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < d_local; ++i) {
        const int64_t p = i / part_local;
        const int64_t fi = p * part_full + rank * part_local + (i - p * part_local);
        for (int64_t n = 0; n < inner; ++n) {
          const int64_t at = (o * d_local + i) * inner + n;
          copy(l.offset + at, fi >= d_full ? -1 : f.offset + (o * d_full + fi) * inner + n);
        }
      }
    }
  }
}

}  // namespace

bool TpReplicated(const BlockSpec& b, int tensor) {
  return b.tensors[size_t(tensor)].tp == TpRule::kReplicated;
}

int64_t TpPaddedRows(int64_t rows) {
  return (rows + kTpVocabPadding - 1) / kTpVocabPadding * kTpVocabPadding;
}

int64_t TpCutUnits(const TensorSpec& t) { return CutExtent(t) / (t.tp_parts * t.tp_unit); }

const TensorSpec* TpIndivisible(const ModelLayout& layout, int tp) {
  for (const bool vocab : {false, true}) {  // heads and features say more than a vocabulary
    for (const BlockSpec& b : layout.blocks) {
      for (const TensorSpec& t : b.tensors) {
        if (t.tp == TpRule::kReplicated || (t.tp == TpRule::kVocab) != vocab) continue;
        if (TpCutUnits(t) % tp != 0) return &t;
      }
    }
  }
  return nullptr;
}

void SliceLayoutForTp(ModelLayout& layout, int tp) {
  STRATA_CHECK(tp >= 1);
  const TensorSpec* bad = TpIndivisible(layout, tp);
  STRATA_CHECK(bad == nullptr) << "tp " << tp << " does not divide the cut of " << bad->name;
  layout.total_numel = 0;
  layout.block_offset.clear();
  for (BlockSpec& b : layout.blocks) {
    for (TensorSpec& t : b.tensors) {
      if (t.tp != TpRule::kReplicated) t.shape[size_t(t.tp_dim)] = CutExtent(t) / tp;
    }
    RelayBlock(b);
    layout.block_offset.push_back(layout.total_numel);
    layout.total_numel += b.numel;
  }
}

void SliceBlockParams(const BlockSpec& full, const BlockSpec& local, int rank,
                      const float* full_params, float* local_params) {
  ForEachElement(full, local, rank, [&](int64_t l, int64_t f) {
    local_params[l] = f < 0 ? 0.0f : full_params[f];
  });
}

void UnsliceBlockParams(const BlockSpec& full, const BlockSpec& local, int rank,
                        const float* local_params, float* full_params) {
  ForEachElement(full, local, rank, [&](int64_t l, int64_t f) {
    if (f >= 0) full_params[f] = local_params[l];
  });
}

}  // namespace strata
