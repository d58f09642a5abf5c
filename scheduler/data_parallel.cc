#include "scheduler/data_parallel.h"

#include <cstring>

#include "core/util/check.h"

namespace strata::scheduler {

RankMicroBatches RanksMicroBatches(int micro_batches, int rank, int ranks) {
  STRATA_CHECK(ranks > 0 && micro_batches % ranks == 0 && rank >= 0 && rank < ranks)
      << micro_batches << " micro-batches over " << ranks << " ranks";
  const int each = micro_batches / ranks;
  return {rank * each, each};
}

Status ReduceEmbeddingGradient(parallel::Comm& comm, const KernelTable& k, const GptLayout& layout,
                               float* emb_grads, float* embedding_part, bool heads_summed) {
  STRATA_CHECK(comm.size() > 1) << "one rank keeps its embedding contributions in place";
  const BlockSpec& emb = layout.embedding();
  const TensorSpec& wte = emb.tensors[kWte];
  if (!heads_summed) {
    STRATA_RETURN_IF_ERROR(
        comm.all_reduce_sum(emb_grads + wte.offset, emb_grads + wte.offset, size_t(wte.numel))
            .wait());
  }
  // wte continues the heads' fold with the embedding contributions, rank by rank: rank 0 adds
  // its own to the heads' sum (the add one rank would do next), the others send theirs as they
  // are. wpe's fold starts with rank 0's contribution itself.
  if (comm.rank() == 0) {
    k.residual_forward(embedding_part + wte.offset, emb_grads + wte.offset,
                       embedding_part + wte.offset, wte.numel);
  }
  STRATA_RETURN_IF_ERROR(
      comm.all_reduce_sum(embedding_part, embedding_part, size_t(emb.numel)).wait());
  std::memcpy(emb_grads, embedding_part, sizeof(float) * emb.numel);
  return Status::Ok();
}

Status ReduceReplicatedGradients(parallel::Comm& comm, const KernelTable& k,
                                 const GptLayout& layout, float* grads, float* embedding_part) {
  // Every block, and wte's head contributions: one fold over the ranks.
  STRATA_RETURN_IF_ERROR(comm.all_reduce_sum(grads, grads, size_t(layout.total_numel)).wait());
  return ReduceEmbeddingGradient(comm, k, layout, grads + layout.block_offset[0], embedding_part,
                                 /*heads_summed=*/true);
}

std::string GridLine(const parallel::Comm& comm, int num_blocks, const std::string& per_tier,
                     const std::string& order) {
  return "grid: dp " + std::to_string(comm.size()) + " x tp 1 x pp 1 over " +
         parallel::CommBackendName(comm.backend()) + " | blocks 0-" +
         std::to_string(num_blocks - 1) + ": replicated (--shard none), split-ops 1 | per rank: " +
         per_tier + " | " + order;
}

Result<std::vector<float>> GatherMicroBatchLosses(parallel::Comm& comm,
                                                  const std::vector<float>& mine) {
  std::vector<float> all(mine.size() * comm.size());
  STRATA_RETURN_IF_ERROR(
      comm.all_gather(mine.data(), all.data(), mine.size() * sizeof(float)).wait());
  return all;
}

}  // namespace strata::scheduler
