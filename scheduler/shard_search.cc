#include "scheduler/shard_search.h"

#include <algorithm>
#include <cstdio>

namespace strata::scheduler {

namespace {

double BlockTime(const ShardSearchBlock& b, bool sharded) {
  return std::max(b.compute_s, sharded ? b.sharded_comm_s : b.replicated_comm_s);
}

double StepTime(const std::vector<ShardSearchBlock>& blocks, const std::vector<bool>& sharded) {
  double t = 0;
  for (size_t i = 0; i < blocks.size(); ++i) t += BlockTime(blocks[i], sharded[i]);
  return t;
}

// What replicating block b saves: predicted time first, communication to break ties.
double Saving(const ShardSearchBlock& b) {
  const double time = BlockTime(b, true) - BlockTime(b, false);
  const double comm = b.sharded_comm_s - b.replicated_comm_s;
  return time + 1e-3 * comm;
}

// The most the DP table may have columns: the weights are scaled down (rounded up) to fit.
constexpr uint64_t kMaxUnits = 1 << 12;

// 0/1 knapsack: which blocks to replicate, each costing extra[b] bytes, within `room`.
std::vector<bool> Replicate(const std::vector<ShardSearchBlock>& blocks, uint64_t room) {
  const size_t n = blocks.size();
  std::vector<uint64_t> extra(n);
  uint64_t total = 0;
  for (size_t b = 0; b < n; ++b) {
    extra[b] = blocks[b].replicated_bytes - std::min(blocks[b].replicated_bytes,
                                                     blocks[b].sharded_bytes);
    total += extra[b];
  }
  const uint64_t unit = std::max<uint64_t>(1, (std::min(total, room) + kMaxUnits - 1) / kMaxUnits);
  const size_t cap = size_t(std::min(total, room) / unit);
  // best[i][w]: the most saving with blocks < i in w units; keep[i][w]: block i-1 replicated.
  std::vector<std::vector<double>> best(n + 1, std::vector<double>(cap + 1, 0.0));
  std::vector<std::vector<bool>> keep(n + 1, std::vector<bool>(cap + 1, false));
  for (size_t i = 1; i <= n; ++i) {
    const size_t w_i = size_t((extra[i - 1] + unit - 1) / unit);
    const double v = Saving(blocks[i - 1]);
    for (size_t w = 0; w <= cap; ++w) {
      best[i][w] = best[i - 1][w];
      if (v > 0 && w_i <= w && best[i - 1][w - w_i] + v > best[i][w]) {
        best[i][w] = best[i - 1][w - w_i] + v;
        keep[i][w] = true;
      }
    }
  }
  std::vector<bool> replicate(n, false);
  for (size_t i = n, w = cap; i > 0; --i) {
    if (!keep[i][w]) continue;
    replicate[i - 1] = true;
    w -= size_t((extra[i - 1] + unit - 1) / unit);
  }
  return replicate;
}

}  // namespace

ShardSearchResult SearchShards(const std::vector<ShardSearchBlock>& blocks,
                               uint64_t capacity_bytes) {
  ShardSearchResult r;
  const size_t n = blocks.size();
  r.sharded.assign(n, true);
  uint64_t base = 0;
  for (const ShardSearchBlock& b : blocks) base += b.sharded_bytes;
  if (base <= capacity_bytes) {
    const std::vector<bool> replicate = Replicate(blocks, capacity_bytes - base);
    for (size_t b = 0; b < n; ++b) r.sharded[b] = !replicate[b];
  }
  r.predicted_s = StepTime(blocks, r.sharded);
  r.all_sharded_s = StepTime(blocks, std::vector<bool>(n, true));
  r.all_replicated_s = StepTime(blocks, std::vector<bool>(n, false));
  for (size_t b = 0; b < n; ++b) {
    r.state_bytes += r.sharded[b] ? blocks[b].sharded_bytes : blocks[b].replicated_bytes;
  }
  return r;
}

std::string ShardSearchResult::to_string() const {
  char text[160];
  std::snprintf(text, sizeof text,
                "predicted step %.4g ms (every block sharded %.4g ms, every block replicated %.4g ms)",
                predicted_s * 1e3, all_sharded_s * 1e3, all_replicated_s * 1e3);
  return text;
}

}  // namespace strata::scheduler
