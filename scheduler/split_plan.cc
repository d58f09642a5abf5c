#include "scheduler/split_plan.h"

#include <algorithm>
#include <limits>

#include "core/kernels/linear.h"
#include "core/nn/split_weights.h"
#include "core/util/check.h"

namespace strata::scheduler {
namespace {

int64_t AlignFloats(int64_t floats) {
  return (floats + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
}

bool IsSplitTensor(const BlockSpec& spec, int tensor) { return spec.tensors[tensor].split; }

// Floats [begin, end) of the block's layout that rank r owns (Note [Shards]).
std::pair<int64_t, int64_t> Owned(const ShardPlan& shards, const BlockSpec& spec, int block,
                                  int r) {
  const int64_t s = shards.shard_floats(block);
  return {std::min(spec.numel, r * s), std::min(spec.numel, (r + 1) * s)};
}

// The floats of `owned` in the split weights, each piece aligned: a rank's own area.
int64_t OwnSplitFloats(const BlockSpec& spec, std::pair<int64_t, int64_t> owned) {
  int64_t floats = 0;
  for (int t : SplitTensors(spec)) {
    const TensorSpec& ts = spec.tensors[t];
    const int64_t lo = std::max(owned.first, ts.offset);
    const int64_t hi = std::min(owned.second, ts.offset + ts.numel);
    floats = AlignFloats(floats + std::max<int64_t>(0, hi - lo));
  }
  return floats;
}

}  // namespace

std::vector<int> SplitTensors(const BlockSpec& spec) {
  std::vector<int> split;
  for (size_t t = 0; t < spec.tensors.size(); ++t) {
    if (spec.tensors[t].split) split.push_back(int(t));
  }
  return split;
}

Result<SplitPlan> SplitPlan::Make(const ModelLayout& layout, const ShardPlan& shards,
                                  std::vector<int> factors) {
  STRATA_CHECK_EQ(int(factors.size()), layout.num_blocks());
  SplitPlan p;
  p.layout_ = &layout;
  p.shards_ = shards;
  p.blocks_.resize(factors.size());
  for (int b = 0; b < layout.num_blocks(); ++b) {
    const int k = factors[b];
    const BlockSpec& spec = layout.blocks[b];
    if (k < 1 || kernels::kLinearChunks % k != 0) {
      return Status::InvalidArgument("split factor " + std::to_string(k) + " of block " +
                                     std::to_string(b) + " does not divide the " +
                                     std::to_string(kernels::kLinearChunks) +
                                     " row chunks of a linear's forward; use 1, 2 or 4");
    }
    if (k == 1) continue;
    if (SplitTensors(spec).empty() || !shards.sharded(b)) {
      return Status::InvalidArgument(
          "block " + std::to_string(b) + " (" + spec.name +
          ") cannot be split: only sharded blocks with split tensors are");
    }
    p.blocks_[b] = LayOut(spec, shards, b);
    for (int t : SplitTensors(spec)) {
      const TensorSpec& ts = spec.tensors[t];
      for (int s = 0; s < k; ++s) {
        const auto [r0, r1] = LinearSliceRows(int(ts.shape[0]), k, s);
        p.slice_floats_ = std::max(p.slice_floats_, int64_t(r1 - r0) * ts.shape[1]);
      }
    }
  }
  p.factors_ = std::move(factors);
  return p;
}

SplitPlan::Block SplitPlan::LayOut(const BlockSpec& spec, const ShardPlan& shards, int b) {
  Block out;
  out.slot_offset.assign(spec.tensors.size(), 0);
  out.from.assign(spec.tensors.size(), 0);
  int64_t at = 0;  // the rest, packed in layout order
  for (size_t t = 0; t < spec.tensors.size(); ++t) {
    if (IsSplitTensor(spec, int(t))) continue;
    out.from[t] = spec.tensors[t].offset;
    out.slot_offset[t] = AlignFloats(at);
    at = out.slot_offset[t] + spec.tensors[t].numel;
  }
  const int64_t rest_floats = AlignFloats(at);
  at = rest_floats;
  const auto [own_begin, own_end] = Owned(shards, spec, b, shards.rank());
  for (int t : SplitTensors(spec)) {  // then this rank's pieces of the split weights
    const TensorSpec& ts = spec.tensors[t];
    const int64_t lo = std::max(own_begin, ts.offset);
    const int64_t hi = std::min(own_end, ts.offset + ts.numel);
    out.from[t] = lo;
    out.slot_offset[t] = at;
    at = AlignFloats(at + std::max<int64_t>(0, hi - lo));
  }
  // Every rank's slot has the same size, the largest rank's: the ranks' slot lists, and so which
  // loads (and gathers) each op needs, must be the same on every rank.
  for (int r = 0; r < shards.ranks(); ++r) {
    out.slot_floats = std::max(out.slot_floats,
                               rest_floats + OwnSplitFloats(spec, Owned(shards, spec, b, r)));
  }
  for (int r = 0; r < shards.ranks(); ++r) {  // the rest's pieces, in slot floats
    const auto [ra, rb] = Owned(shards, spec, b, r);
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (size_t t = 0; t < spec.tensors.size(); ++t) {
      const TensorSpec& ts = spec.tensors[t];
      const int64_t x0 = std::max(ra, ts.offset), x1 = std::min(rb, ts.offset + ts.numel);
      if (IsSplitTensor(spec, int(t)) || x0 >= x1) continue;
      lo = std::min(lo, out.slot_offset[t] + x0 - ts.offset);
      hi = std::max(hi, out.slot_offset[t] + x1 - ts.offset);
    }
    out.rest.push_back(lo < hi ? std::make_pair(lo, hi) : std::make_pair(int64_t(0), int64_t(0)));
  }
  return out;
}

bool SplitPlan::any_split() const {
  return std::any_of(factors_.begin(), factors_.end(), [](int k) { return k > 1; });
}

int64_t SplitPlan::param_slot_floats(int block) const {
  return split(block) ? blocks_[block].slot_floats : shards_.gathered_floats(block);
}

int64_t SplitPlan::param_slot_offset(int block, int tensor, int64_t offset) const {
  if (!split(block)) return offset;
  const Block& b = blocks_[block];
  return b.slot_offset[tensor] + (offset - b.from[tensor]);
}

std::pair<int64_t, int64_t> SplitPlan::rest_range(int block, int rank) const {
  STRATA_CHECK(split(block));
  return blocks_[block].rest[rank];
}

std::pair<int, int> SplitPlan::slice_rows(int block, int tensor, int k) const {
  STRATA_CHECK(split(block) && IsSplitTensor(layout_->blocks[block], tensor) && k >= 0 &&
               k < factor(block));
  return LinearSliceRows(int(layout_->blocks[block].tensors[tensor].shape[0]), factor(block), k);
}

std::vector<SlicePiece> SplitPlan::slice_pieces(int block, int tensor, int k) const {
  const BlockSpec& spec = layout_->blocks[block];
  const TensorSpec& ts = spec.tensors[tensor];
  const auto [r0, r1] = slice_rows(block, tensor, k);
  const int64_t begin = ts.offset + int64_t(r0) * ts.shape[1];
  const int64_t end = ts.offset + int64_t(r1) * ts.shape[1];
  std::vector<SlicePiece> pieces;
  for (int r = 0; r < shards_.ranks(); ++r) {
    const auto [ra, rb] = Owned(shards_, spec, block, r);
    const int64_t x0 = std::max(begin, ra), x1 = std::min(end, rb);
    if (x0 >= x1) continue;
    pieces.push_back({.root = r,
                      .dest = x0 - begin,
                      .floats = x1 - x0,
                      .src = r == shards_.rank() ? param_slot_offset(block, tensor, x0) : -1});
  }
  return pieces;
}

std::string SplitPlan::describe() const {
  std::string out;
  for (size_t b = 0; b < factors_.size();) {
    size_t e = b;
    while (e + 1 < factors_.size() && factors_[e + 1] == factors_[b]) ++e;
    if (factors_[b] > 1) {
      out += (out.empty() ? "" : ", ") + std::to_string(factors_[b]) + " for blocks " +
             (e == b ? std::to_string(b) : std::to_string(b) + "-" + std::to_string(e));
    }
    b = e + 1;
  }
  return out.empty() ? "1" : out;
}

ModelLayout ParamSlotLayout(const ModelLayout& gathered, const SplitPlan& split) {
  ModelLayout p = gathered;
  int64_t offset = 0;
  for (int b = 0; b < p.num_blocks(); ++b) {
    if (split.split(b)) p.blocks[b].numel = split.param_slot_floats(b);
    p.block_offset[b] = offset;
    offset += p.blocks[b].numel;
  }
  p.total_numel = offset;
  return p;
}

std::vector<int> SplitFactors(int k, const ShardPlan& shards, const ModelLayout& layout) {
  std::vector<int> factors(layout.num_blocks(), 1);
  for (int b = 0; b < layout.num_blocks(); ++b) {
    if (!SplitTensors(layout.blocks[b]).empty() && shards.sharded(b)) factors[b] = k;
  }
  return factors;
}

}  // namespace strata::scheduler
