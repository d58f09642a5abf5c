#include "scheduler/shard_plan.h"

#include <algorithm>
#include <exception>
#include <string>

#include "core/util/check.h"
#include "scheduler/grad_norm.h"

namespace strata::scheduler {

ShardPlan ShardPlan::Make(const ModelLayout& layout, int rank, int ranks,
                          std::vector<bool> sharded, const std::vector<bool>& held) {
  STRATA_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  STRATA_CHECK_EQ(int(sharded.size()), layout.num_blocks());
  STRATA_CHECK(held.empty() || int(held.size()) == layout.num_blocks());
  ShardPlan p;
  p.rank_ = rank;
  p.ranks_ = ranks;
  p.sharded_ = std::move(sharded);
  p.held_ = held;
  for (int b = 0; b < layout.num_blocks(); ++b) {
    const int64_t n = p.held(b) ? layout.blocks[b].numel : 0;
    if (ranks == 1) p.sharded_[b] = false;
    const int64_t each = (n + ranks - 1) / ranks;
    p.numel_.push_back(n);
    p.shard_.push_back(p.sharded_[b] ? (each + kNormChunkFloats - 1) / kNormChunkFloats *
                                           kNormChunkFloats
                                     : n);
  }
  return p;
}

ShardPlan ShardPlan::Replicated(const ModelLayout& layout, int rank, int ranks) {
  return Make(layout, rank, ranks, std::vector<bool>(layout.num_blocks(), false));
}

bool ShardPlan::any_sharded() const {
  return std::find(sharded_.begin(), sharded_.end(), true) != sharded_.end();
}

int64_t ShardPlan::gathered_floats(int block) const {
  return sharded_[block] ? shard_[block] * ranks_ : numel_[block];
}

int64_t ShardPlan::owned_begin(int block) const {
  return sharded_[block] ? std::min(numel_[block], rank_ * shard_[block]) : 0;
}

int64_t ShardPlan::owned_end(int block) const {
  return sharded_[block] ? std::min(numel_[block], (rank_ + 1) * shard_[block]) : numel_[block];
}

std::string ShardPlan::describe() const {
  std::string out;
  for (size_t b = 0; b < sharded_.size();) {
    size_t e = b;
    auto what = [&](size_t i) {
      return !held(int(i)) ? "elsewhere" : sharded_[i] ? "sharded" : "replicated";
    };
    while (e + 1 < sharded_.size() && std::string(what(e + 1)) == what(b)) ++e;
    if (!out.empty()) out += ", ";
    out += (e == b ? std::to_string(b) : std::to_string(b) + "-" + std::to_string(e)) + ": " +
           what(b);
    b = e + 1;
  }
  return out;
}

Result<std::vector<bool>> ParseShardDecisions(const std::string& text, int num_blocks) {
  std::vector<int> decided(size_t(num_blocks), -1);
  auto bad = [&] {
    return Status::InvalidArgument("cannot read the blocks' sharding from '" + text + "'");
  };
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(", ", at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 2;
    const size_t colon = item.find(": ");
    if (colon == std::string::npos) return bad();
    const std::string range = item.substr(0, colon), what = item.substr(colon + 2);
    if (what != "sharded" && what != "replicated") return bad();
    int first = 0, last = 0;
    const size_t dash = range.find('-');
    try {
      first = std::stoi(range.substr(0, dash));
      last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
    } catch (const std::exception&) {
      return bad();
    }
    if (first < 0 || last < first || last >= num_blocks) return bad();
    for (int b = first; b <= last; ++b) {
      if (decided[b] >= 0) return bad();
      decided[b] = what == "sharded" ? 1 : 0;
    }
  }
  std::vector<bool> out;
  for (int d : decided) {
    if (d < 0) return bad();
    out.push_back(d == 1);
  }
  return out;
}

ModelLayout GatheredLayout(const ModelLayout& layout, const ShardPlan& shards) {
  ModelLayout g = layout;
  int64_t offset = 0;
  for (int b = 0; b < g.num_blocks(); ++b) {
    g.blocks[b].numel = shards.gathered_floats(b);
    g.block_offset[b] = offset;
    offset += g.blocks[b].numel;
  }
  g.total_numel = offset;
  return g;
}

}  // namespace strata::scheduler
