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

void LinearForward(const KernelTable& k, const TpGroup* tp, const TensorSpec& spec, const float* w,
                   const float* x, int64_t rows, float* y, int64_t ldy) {
  STRATA_CHECK_EQ(spec.shape.size(), size_t(2)) << spec.name;
  const int64_t out = spec.shape[0], in = spec.shape[1];
  k.sgemm(false, true, int(rows), int(out), int(in), 1.0f, x, int(in), w, int(in), 0.0f, y,
          int(ldy));
  if (Sliced(tp) && spec.tp == TpRule::kRow) {
    STRATA_CHECK_EQ(ldy, out) << spec.name << ": a row-parallel output is summed whole";
  }
  CompleteRowParallelOutput(tp, spec, y, rows * out);
}

void LinearsBackward(const KernelTable& k, const TpGroup* tp, const float* x, int64_t rows,
                     std::initializer_list<LinearGrad> parts, float* dx) {
  STRATA_CHECK(parts.size() > 0);
  const TpRule rule = parts.begin()->spec.tp;
  const int64_t in = parts.begin()->spec.shape[1];
  bool first = true;
  for (const LinearGrad& p : parts) {
    STRATA_CHECK(p.spec.tp == rule && p.spec.shape[1] == in)
        << p.spec.name << ": the parts of one input share its width and their rule";
    const int64_t out = p.spec.shape[0];
    k.sgemm(false, false, int(rows), int(in), int(out), 1.0f, p.dy, int(p.ldy), p.w, int(in),
            first ? 0.0f : 1.0f, dx, int(in));
    k.sgemm(true, false, int(out), int(in), int(rows), 1.0f, p.dy, int(p.ldy), x, int(in), 1.0f,
            p.dw, int(in));
    first = false;
  }
  CompleteColumnParallelInputGrad(tp, parts.begin()->spec, dx, rows * in);
}

}  // namespace strata
