// Note [OSDP's choice] in scheduler/shard_search.h: the search replicates what saves the most
// predicted time within the rank's budget, and shards everything when nothing more fits.
#include "scheduler/shard_search.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::scheduler {
namespace {

// A block whose collectives take `replicated` / `sharded` seconds beside `compute`.
ShardSearchBlock Block(double compute, double replicated, double sharded, uint64_t bytes) {
  return {.compute_s = compute,
          .replicated_bytes = bytes,
          .sharded_bytes = bytes / 2,
          .replicated_comm_s = replicated,
          .sharded_comm_s = sharded};
}

TEST(ShardSearch, ReplicatesTheBlocksThatSaveMostWithinTheBudget) {
  // Block 1 saves 3 s for 50 extra bytes, block 2 saves 2 s for 50, block 0 1 s for 50.
  const std::vector<ShardSearchBlock> blocks = {Block(1, 1, 2, 100), Block(1, 1, 4, 100),
                                                Block(1, 1, 3, 100)};
  const ShardSearchResult r = SearchShards(blocks, 150 + 100);  // base 150: room for two
  EXPECT_EQ(r.sharded, (std::vector<bool>{true, false, false}));
  EXPECT_DOUBLE_EQ(r.predicted_s, 2 + 1 + 1);
  EXPECT_DOUBLE_EQ(r.all_sharded_s, 2 + 4 + 3);
  EXPECT_DOUBLE_EQ(r.all_replicated_s, 3);
  EXPECT_EQ(r.state_bytes, 50u + 100 + 100);
}

TEST(ShardSearch, TheKnapsackBeatsTheGreedyRatio) {
  // Greedy by saving per byte takes block 0 (1 s for 10 bytes) and then no longer fits block 1
  // (5 s for 100 bytes) within 100 bytes of room; the exact search takes block 1 alone.
  std::vector<ShardSearchBlock> blocks = {Block(0, 0, 1, 20), Block(0, 0, 5, 200)};
  const uint64_t base = 10 + 100;
  const ShardSearchResult r = SearchShards(blocks, base + 100);
  EXPECT_EQ(r.sharded, (std::vector<bool>{true, false}));
}

TEST(ShardSearch, CommunicationHiddenByComputeStillPrefersLessOfIt) {
  // Both choices are hidden behind 10 s of compute: replicating saves communication only.
  const ShardSearchResult r = SearchShards({Block(10, 1, 3, 100)}, 1000);
  EXPECT_EQ(r.sharded, std::vector<bool>{false});
  EXPECT_DOUBLE_EQ(r.predicted_s, r.all_sharded_s);
}

TEST(ShardSearch, WhatDoesNotFitEvenShardedIsShardedEverywhere) {
  const std::vector<ShardSearchBlock> blocks = {Block(1, 1, 2, 100), Block(1, 1, 4, 100)};
  EXPECT_EQ(SearchShards(blocks, 99).sharded, (std::vector<bool>{true, true}));
  EXPECT_EQ(SearchShards(blocks, 100).sharded.size(), 2u);
  EXPECT_EQ(SearchShards(blocks, ~uint64_t{0}).sharded, (std::vector<bool>{false, false}));
}

}  // namespace
}  // namespace strata::scheduler
