// ShardSearch: --shard auto, OSDP's per-block choice (Jiang et al., "OSDP: Optimal Sharded Data
// Parallel", 2023): each block is sharded or replicated, chosen to minimise the predicted step time
// under the rank's memory budget. Pure function of measured inputs (shard_measure.h).
//
// Note [OSDP's choice]
// Per block b, with its compute time c_b per step on this rank (measured kernels of its shapes)
// and its collectives' time over the measured rates:
//   replicated: the gradient's all-reduce (the embedding's takes two, Note [Data-parallel
//     gradients]); its state (parameters, gradient, two moments) whole on every rank;
//   sharded: `gathers` all-gathers of its parameters per step and one reduce-scatter of its
//     gradient (the embedding's also all-reduces the heads' wte part); its state / ranks.
// Collectives run on their own stream beside compute, so a block's predicted time is
// max(c_b, its collectives); the step's is the sum over blocks. Replicating never costs more
// communication than sharding (the all-reduce is a reduce-scatter and an all-gather), so the
// search starts from every block sharded and replicates the set of blocks that saves the
// most predicted time while the rank's state still fits `capacity_bytes` (an exact 0/1 knapsack
// over the blocks' extra bytes; ties go to the set that saves more communication, which
// shares the machine's links and cores with everything else). When even every block sharded
// does not fit, every block is sharded (the rest of the state goes where the memory plan puts it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::scheduler {

struct ShardSearchBlock {
  double compute_s = 0;           // per step on this rank
  uint64_t replicated_bytes = 0;  // the rank's state bytes when replicated
  uint64_t sharded_bytes = 0;     // and when sharded
  double replicated_comm_s = 0;   // collectives per step when replicated
  double sharded_comm_s = 0;      // and when sharded
};

struct ShardSearchResult {
  std::vector<bool> sharded;  // per block
  double predicted_s = 0;     // the step with this choice
  double all_sharded_s = 0;   // with every block sharded (ZeRO-3)
  double all_replicated_s = 0;
  uint64_t state_bytes = 0;  // the rank's state with this choice
  std::string to_string() const;  // "predicted step 0.41 s (every block sharded 0.45 s, ...)"
};

// Blocks in model order; capacity_bytes: the rank's budget for its state.
ShardSearchResult SearchShards(const std::vector<ShardSearchBlock>& blocks,
                               uint64_t capacity_bytes);

}  // namespace strata::scheduler
