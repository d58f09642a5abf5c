#include "scheduler/data_parallel.h"

#include <algorithm>

#include "core/util/check.h"
#include "core/util/option.h"
#include "scheduler/grad_norm.h"

namespace strata::scheduler {

int RankOf(const GridOptions& g) { return g.ranks != nullptr ? g.ranks->rank() : 0; }
int RanksOf(const GridOptions& g) { return g.ranks != nullptr ? g.ranks->size() : 1; }
int CudaOrdinalOf(const GridOptions& g) {
  return g.ranks != nullptr && g.ranks->device() >= 0 ? g.ranks->device() : 0;
}

RankMicroBatches RanksMicroBatches(int micro_batches, int rank, int ranks) {
  STRATA_CHECK(ranks > 0 && micro_batches % ranks == 0 && rank >= 0 && rank < ranks)
      << micro_batches << " micro-batches over " << ranks << " ranks";
  const int each = micro_batches / ranks;
  return {rank * each, each};
}

namespace {

// The embedding's fold up to its last reduction: the tied tensor's heads summed over the ranks
// (unless they are), then rank 0's own embedding contribution added to that sum (the add one rank
// would do next). The other ranks' parts are sent as they are; wpe's fold starts with rank 0's
// part.
Status StartEmbeddingFold(parallel::Comm& comm, const KernelTable& k, const ModelLayout& layout,
                          float* emb_grads, float* embedding_part, bool heads_summed) {
  STRATA_CHECK(comm.size() > 1) << "one rank keeps its embedding contributions in place";
  // The tensor a tied head reads is the embedding block's first (core/nn/model.h); without a tie
  // the heads' part of it is zero and the fold is the same.
  const TensorSpec& tied = layout.embedding().tensors[kTiedTensor];
  if (!heads_summed) {
    k.finish();  // the comm reads what the backwards wrote
    STRATA_RETURN_IF_ERROR(
        comm.all_reduce_sum(emb_grads + tied.offset, emb_grads + tied.offset, size_t(tied.numel))
            .wait());
  }
  if (comm.rank() == 0) {
    k.residual_forward(embedding_part + tied.offset, emb_grads + tied.offset,
                       embedding_part + tied.offset, tied.numel);
  }
  k.finish();  // the next collective reads embedding_part
  return Status::Ok();
}

}  // namespace

Status ReduceEmbeddingGradient(parallel::Comm& comm, const KernelTable& k,
                               const ModelLayout& layout, float* emb_grads, float* embedding_part,
                               bool heads_summed) {
  STRATA_RETURN_IF_ERROR(
      StartEmbeddingFold(comm, k, layout, emb_grads, embedding_part, heads_summed));
  const BlockSpec& emb = layout.embedding();
  STRATA_RETURN_IF_ERROR(
      comm.all_reduce_sum(embedding_part, embedding_part, size_t(emb.numel)).wait());
  k.copy(emb_grads, embedding_part, emb.numel);  // device memory: through the table
  return Status::Ok();
}

Status ReduceShardedEmbeddingGradient(parallel::Comm& comm, const KernelTable& k,
                                      const ModelLayout& layout, float* emb_grads,
                                      float* embedding_part, float* shard, int64_t shard_floats) {
  STRATA_RETURN_IF_ERROR(StartEmbeddingFold(comm, k, layout, emb_grads, embedding_part,
                                            /*heads_summed=*/false));
  return comm.reduce_scatter_sum(embedding_part, shard, size_t(shard_floats)).wait();
}

Result<double> ShardedGradSumOfSquares(parallel::Comm& comm, const KernelTable& k,
                                       const float* shard, int64_t owned, int64_t shard_floats) {
  STRATA_CHECK(shard_floats % kNormChunkFloats == 0 && owned >= 0 && owned <= shard_floats);
  const size_t chunks = size_t(shard_floats / kNormChunkFloats);
  std::vector<double> mine(chunks, 0.0), all(chunks * comm.size());
  ChunkSumsOfSquares(k, shard, owned, mine.data());
  STRATA_RETURN_IF_ERROR(
      comm.all_gather(mine.data(), all.data(), chunks * sizeof(double)).wait());
  return SumInChunkOrder(all);
}

Status ReduceReplicatedGradients(parallel::Comm& comm, const KernelTable& k,
                                 const ModelLayout& layout, float* grads, float* embedding_part) {
  // Every block, and the tied tensor's head contributions: one fold over the ranks.
  k.finish();
  STRATA_RETURN_IF_ERROR(comm.all_reduce_sum(grads, grads, size_t(layout.total_numel)).wait());
  return ReduceEmbeddingGradient(comm, k, layout, grads + layout.block_offset[0], embedding_part,
                                 /*heads_summed=*/true);
}

std::string GridLine(const std::string& grid, parallel::CommBackend backend,
                     const ShardPlan& shards, const std::string& choice, const std::string& split,
                     const std::string& per_tier, const std::string& order,
                     const std::string& stages) {
  return "grid: " + grid + " over " + parallel::CommBackendName(backend) +
         (stages.empty() ? "" : " | " + stages) + " | blocks " + shards.describe() + " (" +
         choice + "), split-ops " + split + " | per rank: " + per_tier + " | " + order;
}

namespace {

// "rank 0: 6, 4; rank 1: 4, 2" from the gathered, -1-padded lists.
std::string StepsOfRanks(const std::vector<int64_t>& all, size_t width) {
  std::string text;
  for (size_t r = 0; r < all.size() / width; ++r) {
    text += (r > 0 ? "; rank " : "rank ") + std::to_string(r) + ":";
    bool any = false;
    for (size_t i = 0; i < width; ++i) {
      if (all[r * width + i] < 0) continue;
      text += (any ? ", " : " ") + std::to_string(all[r * width + i]);
      any = true;
    }
    if (!any) text += " none";
  }
  return text;
}

}  // namespace

Result<long> AgreeOnResumeStep(parallel::Comm& comm, const std::vector<long>& mine,
                               long requested) {
  // Every rank's list, padded to the longest with -1, gathered everywhere.
  int64_t width = int64_t(mine.size());
  std::vector<int64_t> widths(comm.size());
  STRATA_RETURN_IF_ERROR(comm.all_gather(&width, widths.data(), sizeof(int64_t)).wait());
  const size_t w = size_t(std::max<int64_t>(1, *std::max_element(widths.begin(), widths.end())));
  std::vector<int64_t> padded(w, -1), all(w * comm.size());
  std::copy(mine.begin(), mine.end(), padded.begin());
  STRATA_RETURN_IF_ERROR(comm.all_gather(padded.data(), all.data(), w * sizeof(int64_t)).wait());
  auto listed_by_all = [&](int64_t step) {
    for (int r = 0; r < comm.size(); ++r) {
      const auto begin = all.begin() + r * w;
      if (std::find(begin, begin + w, step) == begin + w) return false;
    }
    return true;
  };
  if (requested >= 0) {
    if (listed_by_all(requested)) return requested;
    return AtFault(Option::kResumeFrom,
                   Status::FailedPrecondition(
                       Mention(Option::kResumeFrom) + " " + std::to_string(requested) +
                       ": not every rank has that checkpoint (" + StepsOfRanks(all, w) + ")"),
                   {{"got", requested}, {"ranks", comm.size()}});
  }
  int64_t best = -1;
  for (int64_t step : all) {
    if (step > best && listed_by_all(step)) best = step;
  }
  const bool any = std::any_of(all.begin(), all.end(), [](int64_t s) { return s >= 0; });
  if (best < 0 && any) {
    return AtFault(
        Option::kResume,
        Status::FailedPrecondition(
            Mention(Option::kResume) + ": no checkpoint step is listed by every rank (" +
            StepsOfRanks(all, w) + "); a step counts only once every rank has committed it"),
        {{"ranks", comm.size()}});
  }
  return long(best);
}

Result<std::vector<float>> GatherMicroBatchLosses(parallel::Comm& comm,
                                                  const std::vector<float>& mine) {
  std::vector<float> all(mine.size() * comm.size());
  STRATA_RETURN_IF_ERROR(
      comm.all_gather(mine.data(), all.data(), mine.size() * sizeof(float)).wait());
  return all;
}

}  // namespace strata::scheduler
