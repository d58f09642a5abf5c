#include "core/nn/block_spec.h"

#include <cstring>

#include "core/util/check.h"
#include "core/util/rng.h"

namespace strata {

void SetTensorParallel(BlockSpec& block, TpRule rule, int dim, int parts, int64_t unit) {
  STRATA_CHECK(!block.tensors.empty() && parts >= 1 && unit >= 1);
  TensorSpec& t = block.tensors.back();
  STRATA_CHECK(dim >= 0 && dim < int(t.shape.size()) && t.shape[dim] % (parts * unit) == 0)
      << t.name << ": dimension " << dim << " of " << ShapeString(t.shape) << " in " << parts
      << " parts of units of " << unit;
  t.tp = rule;
  t.tp_dim = dim;
  t.tp_parts = parts;
  t.tp_unit = unit;
}

void AppendTensor(BlockSpec& b, std::string name, std::vector<int64_t> shape, InitKind init,
                  float init_std) {
  TensorSpec t;
  t.name = std::move(name);
  t.numel = 1;
  for (int64_t d : shape) t.numel *= d;
  t.shape = std::move(shape);
  t.decay = t.shape.size() >= 2;
  t.init = init;
  t.init_std = init_std;
  t.offset = b.numel;
  b.numel = AlignedFloats(b.numel + t.numel);
  b.tensors.push_back(std::move(t));
}

void RelayBlock(BlockSpec& b) {
  b.numel = 0;
  for (TensorSpec& t : b.tensors) {
    t.numel = 1;
    for (int64_t d : t.shape) t.numel *= d;
    t.offset = b.numel;
    b.numel = AlignedFloats(b.numel + t.numel);
  }
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

void InitBlockParams(const BlockSpec& block, uint64_t seed, float* params) {
  std::memset(params, 0, sizeof(float) * block.numel);
  for (const auto& t : block.tensors) {
    float* p = params + t.offset;
    switch (t.init) {
      case InitKind::kZeros:
        break;
      case InitKind::kOnes:
        for (int64_t i = 0; i < t.numel; ++i) p[i] = 1.0f;
        break;
      case InitKind::kNormal: {
        NormalRng rng(HashSeed(seed, t.name));
        for (int64_t i = 0; i < t.numel; ++i) p[i] = t.init_std * rng.next();
        break;
      }
    }
  }
}

}  // namespace strata
