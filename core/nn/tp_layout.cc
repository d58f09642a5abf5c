#include "core/nn/tp_layout.h"

#include "core/util/check.h"

namespace strata {
namespace {

enum class SliceKind { kReplicated, kColumns, kQkvColumns, kRows };

SliceKind KindOf(const BlockSpec& b, int tensor) {
  switch (b.kind) {
    case BlockKind::kEmbedding:
      return tensor == kWte ? SliceKind::kRows : SliceKind::kReplicated;
    case BlockKind::kHead:
      return SliceKind::kReplicated;
    case BlockKind::kTransformer:
      break;
  }
  switch (tensor) {
    case kQkvW:
    case kQkvB:
      return SliceKind::kQkvColumns;
    case kFcW:
    case kFcB:
      return SliceKind::kColumns;
    case kAttProjW:
    case kFcProjW:
      return SliceKind::kRows;
    default:
      return SliceKind::kReplicated;
  }
}

// A tensor as rows x columns (a vector is one row).
int64_t Rows(const TensorSpec& t) { return t.shape.size() == 2 ? t.shape[0] : 1; }
int64_t Cols(const TensorSpec& t) { return t.shape.back(); }

// The full tensor's flat index of the local tensor's element (i, j) on rank `rank`, or -1 for a
// padding row (the padded vocabulary's rows past the real one).
int64_t FullIndex(SliceKind kind, const TensorSpec& full, const TensorSpec& local, int rank,
                  int64_t i, int64_t j) {
  int64_t row = i, col = j;
  switch (kind) {
    case SliceKind::kReplicated:
      break;
    case SliceKind::kColumns:
      col = rank * Cols(local) + j;
      break;
    case SliceKind::kQkvColumns: {
      const int64_t part = Cols(local) / 3, p = j / part;
      col = p * (Cols(full) / 3) + rank * part + (j - p * part);
      break;
    }
    case SliceKind::kRows:
      row = rank * Rows(local) + i;
      if (row >= Rows(full)) return -1;
      break;
  }
  return row * Cols(full) + col;
}

template <typename Copy>
void ForEachElement(const BlockSpec& full, const BlockSpec& local, int rank, const Copy& copy) {
  STRATA_CHECK_EQ(full.tensors.size(), local.tensors.size());
  for (size_t t = 0; t < full.tensors.size(); ++t) {
    const TensorSpec& f = full.tensors[t];
    const TensorSpec& l = local.tensors[t];
    const SliceKind kind = KindOf(full, int(t));
    for (int64_t i = 0; i < Rows(l); ++i) {
      for (int64_t j = 0; j < Cols(l); ++j) {
        const int64_t at = FullIndex(kind, f, l, rank, i, j);
        copy(l.offset + i * Cols(l) + j, at < 0 ? -1 : f.offset + at);
      }
    }
  }
}

}  // namespace

bool TpReplicated(const BlockSpec& b, int tensor) {
  return KindOf(b, tensor) == SliceKind::kReplicated;
}

int64_t TpPaddedVocab(const GptConfig& c) {
  return (c.vocab_size + kTpVocabPadding - 1) / kTpVocabPadding * kTpVocabPadding;
}

GptLayout MakeTpLayout(const GptConfig& c, int tp) {
  STRATA_CHECK(tp >= 1 && c.n_head % tp == 0 && TpPaddedVocab(c) % tp == 0);
  GptLayout layout = MakeGptLayout(c);
  layout.total_numel = 0;
  layout.block_offset.clear();
  for (BlockSpec& b : layout.blocks) {
    for (size_t t = 0; t < b.tensors.size(); ++t) {
      TensorSpec& ts = b.tensors[t];
      switch (KindOf(b, int(t))) {
        case SliceKind::kReplicated:
          break;
        case SliceKind::kColumns:
        case SliceKind::kQkvColumns:
          ts.shape.back() /= tp;
          break;
        case SliceKind::kRows:
          ts.shape[0] = (b.kind == BlockKind::kEmbedding ? TpPaddedVocab(c) : ts.shape[0]) / tp;
          break;
      }
    }
    RelayBlock(b);
    layout.block_offset.push_back(layout.total_numel);
    layout.total_numel += b.numel;
  }
  return layout;
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
