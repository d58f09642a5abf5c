// Data parallelism with replicated state (--shard none): every rank holds the whole model, runs
// its share of the step's micro-batches and sums the gradients with the other ranks.
//
// Note [Data-parallel gradients]
// A dp=N run with batch B gives the bits of one rank with batch B and --micro-batch B/N:
// - rank r runs micro-batches [r*M/N, (r+1)*M/N) of the step's M (RanksMicroBatches), the rows
//   one rank would give those micro-batches;
// - each gradient is the left fold, in rank order, of the ranks' contributions (Note
//   [Deterministic reductions] in docs/parallel.md), which is how one rank adds its
//   micro-batches (the gradient-contribution rule of core/nn/model.h);
// - the tied tensor (the embedding block's first, core/nn/model.h) takes every head
//   contribution, then every embedding contribution. So a rank makes its embedding
//   contributions apart, from zero; once the heads' fold is reduced, rank 0 adds its own
//   embedding contribution to it and a second reduction continues the fold over the other
//   ranks' (ReduceReplicatedGradients);
// - the loss is the mean of every micro-batch's loss, summed in micro-batch order as one rank
//   does (GatherMicroBatchLosses);
// - the norm, clipping and AdamW then run on identical gradients on every rank.
// Bit-identity needs one micro-batch per rank: with k > 1, a rank's micro-batches fold before
// the ranks do, and the result equals one rank's to rounding only.
#pragma once

#include <string>
#include <vector>

#include "core/device/kernel_table.h"
#include "core/nn/model.h"
#include "core/nn/model_layout.h"
#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/shard_plan.h"
#include "scheduler/train_options.h"

namespace strata::scheduler {

// This process's rank in the job of `grid.ranks`, and the job's size: 0 of 1 without a Comm.
int RankOf(const GridOptions& grid);
int RanksOf(const GridOptions& grid);
// The GPU of this rank for --device cuda: the one its Comm moves device memory on (NCCL picks
// local rank % GPUs), else 0.
int CudaOrdinalOf(const GridOptions& grid);

// The micro-batches of one rank: [first, first + count).
struct RankMicroBatches {
  int first = 0;
  int count = 0;
};
// Rank `rank` of `ranks` when a step has `micro_batches` (a multiple of ranks).
RankMicroBatches RanksMicroBatches(int micro_batches, int rank, int ranks);

// Sums the ranks' gradients in place (Note [Data-parallel gradients]). `grads` holds every block's
// gradient (P floats in the layout's order) with only the head's contributions in the tied tensor;
// `embedding_part` the embedding block's gradient made by this rank's embedding backwards, from
// zero. More than one rank. On return `grads` holds the step's gradient, the same bits on every
// rank; `embedding_part` is clobbered. Buffers are device memory of the device whose table `k` is
// (the Comm must be able to read them: MPI on the sim device, NCCL on a GPU), and the call runs
// inside a launch of that device's stream (k.finish orders the kernels before each collective).
// Errors: the Comm's.
Status ReduceReplicatedGradients(parallel::Comm& comm, const KernelTable& k,
                                 const ModelLayout& layout, float* grads, float* embedding_part);

// The embedding block's part of ReduceReplicatedGradients, for an engine that sums block by
// block: `emb_grads` is block 0's gradient, its tied tensor holding the heads' contributions
// (this rank's, or already summed over the ranks when `heads_summed`); `embedding_part` as
// above. On return `emb_grads` holds the embedding's gradient, the same bits on every rank.
Status ReduceEmbeddingGradient(parallel::Comm& comm, const KernelTable& k,
                               const ModelLayout& layout, float* emb_grads, float* embedding_part,
                               bool heads_summed);

// Sharded state (Note [Shards] in shard_plan.h): as ReduceEmbeddingGradient, but the last fold is
// a reduce-scatter into `shard` (this rank's shard_floats floats of the gathered slot):
// `embedding_part` holds ranks * shard_floats floats, zero beyond the block. Only `shard` holds the
// result on return.
Status ReduceShardedEmbeddingGradient(parallel::Comm& comm, const KernelTable& k,
                                      const ModelLayout& layout, float* emb_grads,
                                      float* embedding_part, float* shard, int64_t shard_floats);

// A sharded block's gradient sum of squares, the same bits on every rank and as one rank's
// BlockGradSumOfSquares (Note [Shards]): this rank's `owned` floats of its shard (of
// shard_floats, a multiple of the norm chunk) as chunk partials, gathered in rank order.
// Collective.
Result<double> ShardedGradSumOfSquares(parallel::Comm& comm, const KernelTable& k,
                                       const float* shard, int64_t owned, int64_t shard_floats);

// The first line of a job of several ranks (docs/parallel.md): the grid, each block's decision
// and what a rank holds per tier (`per_tier`, the engine's words), then the micro-batch order
// line (`order`), which one rank prints first on its own.
// `choice` says how the decisions were made ("--shard all", or --shard auto's prediction),
// `split` the split factors (SplitPlan::describe: "1", "2 for blocks 1-4").
// `grid` is Grid::describe's ("dp 2 x tp 2 x pp 1"), `backend` the Comm's, `stages` a pipeline's
// stages and their predicted times (none without one).
std::string GridLine(const std::string& grid, parallel::CommBackend backend,
                     const ShardPlan& shards, const std::string& choice,
                     const std::string& split, const std::string& per_tier,
                     const std::string& order, const std::string& stages = "");

// Note [Checkpoints across ranks]
// Each rank checkpoints its own state into its own --nvme-dir and --ckpt-dir (D/rank-<r>), on
// its own optimizer queue. A step counts as checkpointed only once every rank has committed it:
// --resume takes the newest step that every rank's record lists. The ranks stay within one
// checkpoint of each other: before a rank starts checkpoint k it waits until its checkpoint k-1
// is durable, and then for every other rank to have done the same (a barrier). So when any rank
// has made k durable (and dropped k-2, with --keep-checkpoints 2), every rank has k-1, and with
// --keep-checkpoints >= 2 a common step exists whenever any rank has more than one. (Without the
// barrier the steps' collectives alone let a rank with a slow disk fall two checkpoints behind:
// seen as "rank 0: 5, 4; rank 1: 3, 2".)
//
// The step to resume from, the same on every rank: `requested` (--resume-from; -1: the newest)
// among the steps every rank lists (`mine`: this rank's). -1 when no rank lists any (a fresh
// start); FailedPrecondition naming the ranks' steps when some do but none is common (at fault of
// {resume}, with "ranks"), or when `requested` is not listed by every rank (at fault of
// {resume_from}, with "got" and "ranks"). Collective.
Result<long> AgreeOnResumeStep(parallel::Comm& comm, const std::vector<long>& mine,
                               long requested);

// Every micro-batch's loss, in micro-batch order, from each rank's own (in its order).
Result<std::vector<float>> GatherMicroBatchLosses(parallel::Comm& comm,
                                                  const std::vector<float>& mine);

}  // namespace strata::scheduler
