#include "core/nn/parallel_linear.h"

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

// f(r0, r1, rows) for each slice [r0, r1) of the weight's rows as the op has them (one [0, out)
// when it is whole), rows its row r0.
template <typename F>
void ForEachSlice(const WeightRows& W, const F& f) {
  const int out = int(W.spec.shape[0]);
  const float* whole = W.w.tensor[size_t(W.tensor)];
  if (whole != nullptr) return f(0, out, whole);
  STRATA_CHECK(W.spec.split) << W.spec.name << " is not split: it is given whole";
  for (int s = 0; s < W.w.slices; ++s) {
    const auto [r0, r1] = LinearSliceRows(out, W.w.slices, s);
    f(r0, r1, W.w.slice(W.tensor, s));
  }
}

}  // namespace

void LinearForward(const KernelTable& k, const TpGroup* tp, const WeightRows& W, const float* x,
                   int64_t rows, float* y, int64_t ldy) {
  const TensorSpec& spec = W.spec;
  STRATA_CHECK_EQ(spec.shape.size(), size_t(2)) << spec.name;
  const int64_t out = spec.shape[0], in = spec.shape[1];
  ForEachSlice(W, [&](int r0, int r1, const float* w) {
    if (spec.split) {
      k.nn_linear_forward_rows(y, int(ldy), x, w, int(rows), int(in), int(out), r0, r1);
    } else {
      k.sgemm(false, true, int(rows), int(out), int(in), 1.0f, x, int(in), w, int(in), 0.0f, y,
              int(ldy));
    }
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
    const TensorSpec& spec = p.weight.spec;
    STRATA_CHECK(spec.tp == first_spec.tp && spec.shape[1] == in)
        << spec.name << ": the parts of one input share its width and their rule";
    const int64_t out = spec.shape[0];
    ForEachSlice(p.weight, [&](int r0, int r1, const float* w) {
      if (spec.split) {
        k.nn_linear_backward_rows(dx, first, p.dw + int64_t(r0) * in, p.dy, int(p.ldy), x, w,
                                  int(rows), int(in), int(out), r0, r1);
      } else {
        k.sgemm(false, false, int(rows), int(in), int(out), 1.0f, p.dy, int(p.ldy), w, int(in),
                first ? 0.0f : 1.0f, dx, int(in));
        k.sgemm(true, false, int(out), int(in), int(rows), 1.0f, p.dy, int(p.ldy), x, int(in), 1.0f,
                p.dw, int(in));
      }
      first = false;
    });
  }
  CompleteColumnParallelInputGrad(tp, first_spec, dx, rows * in);
}

}  // namespace strata
