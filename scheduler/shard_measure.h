// The inputs of --shard auto's search (shard_search.h, Note [OSDP's choice]), measured at start-up
// on this machine: the collectives' rates over the job's Comm, and each block's compute from the
// kernels of its shapes, both on the device the run trains on (a scratch device of the same kind
// and GPU: the run's own is sized by the plan these measurements decide).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/nn/model.h"
#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/shard_plan.h"
#include "scheduler/shard_search.h"

namespace strata::scheduler {

// Bytes per second of each collective, as the whole buffer on a rank over the time the slowest
// rank took: the all-gather's output, the reduce-scatter's input. The Comm's all-reduce is a
// reduce-scatter then an all-gather (Note [Deterministic reductions] in docs/parallel.md), so its
// time is theirs added, not measured apart (a third measurement would only add its noise, and
// noise once made replication look dearer than sharding).
struct CollectiveRates {
  double all_gather = 0, reduce_scatter = 0;
  double all_reduce_s(double bytes) const { return bytes / reduce_scatter + bytes / all_gather; }
};

// Times each collective on a buffer of `bytes` (rounded to whole floats per rank) of `device`'s
// memory (what the run's collectives move: NCCL on a GPU's, MPI on the sim device's): one warm-up
// and the median of three, the slowest rank's. Collective: every rank calls it; the same result
// on every rank. Errors: the Comm's, or the device's when the buffer does not fit it.
Result<CollectiveRates> MeasureCollectiveRates(parallel::Comm& comm, Device& device,
                                               uint64_t bytes);
// The device bytes MeasureCollectiveRates(..., bytes) allocates.
uint64_t CollectiveRatesBytes(const parallel::Comm& comm, uint64_t bytes);

// Seconds of one forward of a layer and of the head's logits on `rows` rows of the model's width
// (a micro-batch's tokens), timed on `device`'s kernels at `dtype` (launched on a stream of its
// own, within a TBB arena of `threads` on the sim device): their linears (a layer's: one per 2-D
// tensor of the model's first layer), which are nearly all of the work. One run after a warm-up, of
// at most 512 rows and 8192 logits, scaled linearly to the whole. Errors: the device's (the
// buffers, a failed kernel).
struct BlockForwardTimes {
  double transformer = 0, logits = 0;
};
Result<BlockForwardTimes> MeasureBlockForwards(Device& device, kernels::Dtype dtype,
                                               const Model& model, int rows, int threads);
// The device bytes MeasureBlockForwards allocates.
uint64_t BlockForwardBytes(const Model& model, int rows);

struct ShardSearchSetting {
  const ModelLayout* layout = nullptr;
  bool head_ties_embedding = true;         // the logits' compute counts with block 0, else the head
  const ShardPlan* all_sharded = nullptr;  // every block sharded: the shard sizes
  // Per block, the rank's state bytes (its pages, every role) replicated and sharded.
  std::vector<uint64_t> replicated_bytes, sharded_bytes;
  int micro_batches = 1;      // per rank per step
  BlockForwardTimes forward;  // per micro-batch
  CollectiveRates rates;
};

// One ShardSearchBlock per block (Note [OSDP's choice]): compute = forward + backward (twice the
// forward) per micro-batch, the head's logits counted with the block whose tensor they use; a
// sharded block's parameters are gathered twice per micro-batch (forward, backward), a bound:
// layer-major and cached slots gather less.
std::vector<ShardSearchBlock> ShardSearchInputs(const ShardSearchSetting& s);

}  // namespace strata::scheduler
