#include "core/nn/parallel_linear.h"

#include "core/kernels/linear.h"
#include "core/util/check.h"

namespace strata {
namespace {

bool Sliced(const TpGroup* tp) { return tp != nullptr && tp->size > 1; }

}  // namespace

void CompleteRowParallelOutput(const TpGroup* tp, const TensorSpec& w, float* y, int64_t count) {
  if (Sliced(tp) && w.tp == TpRule::kRow) tp->all_reduce(y, count);
}

void CompleteColumnParallelInputGrad(const TpGroup* tp, const TensorSpec& w, float* dx,
                                     int64_t count) {
  if (Sliced(tp) && w.tp == TpRule::kColumn) tp->all_reduce(dx, count);
}

const float* RowParallelBias(const TpGroup* tp, const TensorSpec& w, const float* bias) {
  return Sliced(tp) && w.tp == TpRule::kRow && tp->rank != 0 ? nullptr : bias;
}

namespace {

// f(a, b, rows_a) for each non-empty row chunk [a, b) of the weight in order (Note [Linears in
// row chunks]; one chunk [0, out) for a weight that is not split), rows_a its row a.
template <typename F>
void ForEachRowChunk(const WeightRows& W, const F& f) {
  const int out = int(W.spec.shape[0]);
  const int64_t in = W.spec.shape[1];
  const float* whole = W.w.tensor[size_t(W.tensor)];
  if (!W.spec.split) {
    STRATA_CHECK(whole != nullptr) << W.spec.name << " is not split: it is given whole";
    return f(0, out, whole);
  }
  const int slices = whole != nullptr ? 1 : W.w.slices;
  for (int s = 0; s < slices; ++s) {
    const auto [r0, r1] = LinearSliceRows(out, slices, s);
    const float* base = whole != nullptr ? whole : W.w.slice(W.tensor, s);  // row r0
    for (int c = 0; c < kernels::kLinearChunks; ++c) {
      const int a = kernels::LinearChunkBegin(out, c), b = kernels::LinearChunkBegin(out, c + 1);
      if (a == b || a < r0 || b > r1) continue;
      f(a, b, base + (a - r0) * in);
    }
  }
}

}  // namespace

void LinearForward(const KernelTable& k, const TpGroup* tp, const WeightRows& W, const float* x,
                   int64_t rows, float* y, int64_t ldy) {
  const TensorSpec& spec = W.spec;
  STRATA_CHECK_EQ(spec.shape.size(), size_t(2)) << spec.name;
  const int64_t out = spec.shape[0], in = spec.shape[1];
  ForEachRowChunk(W, [&](int a, int b, const float* w) {
    k.sgemm(false, true, int(rows), b - a, int(in), 1.0f, x, int(in), w, int(in), 0.0f, y + a,
            int(ldy));
  });
  if (Sliced(tp) && spec.tp == TpRule::kRow) {
    STRATA_CHECK_EQ(ldy, out) << spec.name << ": a row-parallel output is summed whole";
  }
  CompleteRowParallelOutput(tp, spec, y, rows * out);
}

void LinearsBackward(const KernelTable& k, const TpGroup* tp, const float* x, int64_t rows,
                     std::initializer_list<LinearGrad> parts, float* dx) {
  STRATA_CHECK(parts.size() > 0);
  const TensorSpec& first_spec = parts.begin()->weight.spec;
  const int64_t in = first_spec.shape[1];
  bool first = true;
  for (const LinearGrad& p : parts) {
    STRATA_CHECK(p.weight.spec.tp == first_spec.tp && p.weight.spec.shape[1] == in)
        << p.weight.spec.name << ": the parts of one input share its width and their rule";
    ForEachRowChunk(p.weight, [&](int a, int b, const float* w) {
      k.sgemm(false, false, int(rows), int(in), b - a, 1.0f, p.dy + a, int(p.ldy), w, int(in),
              first ? 0.0f : 1.0f, dx, int(in));
      k.sgemm(true, false, b - a, int(in), int(rows), 1.0f, p.dy + a, int(p.ldy), x, int(in), 1.0f,
              p.dw + int64_t(a) * in, int(in));
      first = false;
    });
  }
  CompleteColumnParallelInputGrad(tp, first_spec, dx, rows * in);
}

}  // namespace strata
