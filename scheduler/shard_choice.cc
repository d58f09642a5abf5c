#include "scheduler/shard_choice.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/device/create_device.h"
#include "core/util/machine_memory.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "memory/page_plan.h"
#include "parallel/comm.h"
#include "scheduler/checkpoint.h"
#include "scheduler/data_parallel.h"
#include "scheduler/memory_plan.h"
#include "scheduler/run_fingerprint.h"
#include "scheduler/shard_measure.h"
#include "scheduler/shard_search.h"
#include "scheduler/state_pages.h"

namespace strata::scheduler {
namespace {

// The decisions the checkpoint's fingerprint records ("dp 2, blocks 0-3: sharded"), or none.
Result<std::vector<bool>> CheckpointedShards(const ShardChoiceInput& in, std::string* how) {
  if (!in.checkpoints->resume || in.checkpoints->dir.empty()) return std::vector<bool>{};
  STRATA_ASSIGN_OR_RETURN(const auto found, ReadCheckpointRecord(in.checkpoints->dir));
  if (!found) return std::vector<bool>{};
  const auto it = found->fingerprint.find(RecordKey(Option::kShard));
  constexpr std::string_view kBlocks = ", blocks ";
  if (it == found->fingerprint.end() || it->second.find(kBlocks) == std::string::npos) {
    return std::vector<bool>{};
  }
  *how = Mention(Option::kShard) + " auto: the checkpoint's choice";
  return ParseShardDecisions(it->second.substr(it->second.find(kBlocks) + kBlocks.size()),
                             in.layout->num_blocks());
}

// Every block's state bytes from the page plans themselves (a sharded block's the largest over
// the ranks: the choice must fit every rank); `largest`: the largest block gathered.
Status MeasureStateBytes(const ShardChoiceInput& in, uint64_t page, ShardSearchSetting* setting,
                         uint64_t* largest) {
  const ModelLayout& layout = *in.layout;
  const int n = layout.num_blocks(), rank = RankOf(*in.grid), ranks = RanksOf(*in.grid);
  const ShardPlan& all = *setting->all_sharded;
  const ShardPlan none = ShardPlan::Replicated(layout, rank, ranks);
  STRATA_ASSIGN_OR_RETURN(const StatePages sharded_pages,
                          StatePages::Make(layout, page, false, &all));
  STRATA_ASSIGN_OR_RETURN(const StatePages whole_pages,
                          StatePages::Make(layout, page, false, &none));
  for (int b = 0; b < n; ++b) {
    *largest = std::max<uint64_t>(*largest, all.gathered_floats(b) * 4);
    setting->replicated_bytes.push_back(whole_pages.block_state_bytes(b));
    setting->sharded_bytes.push_back(sharded_pages.block_state_bytes(b));
  }
  std::vector<uint64_t> every(size_t(n) * ranks);
  STRATA_RETURN_IF_ERROR(
      in.grid->ranks
          ->all_gather(setting->sharded_bytes.data(), every.data(), size_t(n) * sizeof(uint64_t))
          .wait());
  for (size_t i = 0; i < every.size(); ++i) {
    setting->sharded_bytes[i % n] = std::max(setting->sharded_bytes[i % n], every[i]);
  }
  return Status::Ok();
}

// The search's inputs measured here (Note [OSDP's choice]), then the search under the rank's
// budget.
Result<std::vector<bool>> SearchShardsMeasured(const ShardChoiceInput& in, std::string* how) {
  const ModelLayout& layout = *in.layout;
  const int n = layout.num_blocks(), ranks = RanksOf(*in.grid);
  const BudgetOptions& budgets = *in.budgets;
  const uint64_t page = budgets.page_bytes > 0 ? budgets.page_bytes : memory::kDefaultPageBytes;
  const ShardPlan all =
      ShardPlan::Make(layout, RankOf(*in.grid), ranks, std::vector<bool>(n, true));
  ShardSearchSetting setting;
  setting.layout = &layout;
  setting.head_ties_embedding = in.model->head_ties_embedding();
  setting.all_sharded = &all;
  setting.micro_batches = in.micro_batches;
  uint64_t largest = 0;
  STRATA_RETURN_IF_ERROR(MeasureStateBytes(in, page, &setting, &largest));
  // Measured on a scratch device of the run's kind and GPU, sized for the measurements (the
  // run's own device is sized by the plan they decide).
  parallel::Comm& comm = *in.grid->ranks;
  const uint64_t comm_bytes = std::min<uint64_t>(largest, 16 * kMiB);
  const int rows = in.micro_rows * in.seq;
  SimDeviceOptions scratch;
  scratch.capacity_bytes =
      std::max(CollectiveRatesBytes(comm, comm_bytes), BlockForwardBytes(*in.model, rows)) +
      kMiB;  // alignment
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<Device> device,
      CreateDevice({.kind = in.device, .cuda_ordinal = CudaOrdinalOf(*in.grid)}, scratch));
  STRATA_ASSIGN_OR_RETURN(setting.rates, MeasureCollectiveRates(comm, *device, comm_bytes));
  STRATA_ASSIGN_OR_RETURN(setting.forward, MeasureBlockForwards(*device, ComputeDtype(in.dtype),
                                                                *in.model, rows, in.threads));
  // The rank's budget for its state: --host-mem (less the pool's working pages when pages may
  // pass through it from NVMe); without it, an even share of what this machine has available.
  const uint64_t working = budgets.nvme_dirs.empty() ? 0 : kHostWorkingPages * page;
  const uint64_t capacity = budgets.host_mem > 0
                                ? budgets.host_mem - std::min(budgets.host_mem, working)
                                : ReadMachineMemory().available_bytes / ranks;
  const ShardSearchResult r = SearchShards(ShardSearchInputs(setting), capacity);
  *how = Mention(Option::kShard) + " auto: " + r.to_string() + ", state " +
         FormatBytes(r.state_bytes) + " per rank of a budget of " + FormatBytes(capacity);
  return r.sharded;
}

// --shard auto: the checkpoint's choice or the search's, rank 0's broadcast.
Result<std::vector<bool>> AutoShards(const ShardChoiceInput& in, std::string* how) {
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> sharded, CheckpointedShards(in, how));
  if (sharded.empty()) {
    STRATA_ASSIGN_OR_RETURN(sharded, SearchShardsMeasured(in, how));
  }
  std::vector<uint8_t> flags(sharded.begin(), sharded.end());
  STRATA_RETURN_IF_ERROR(in.grid->ranks->broadcast(flags.data(), flags.size(), 0).wait());
  return std::vector<bool>(flags.begin(), flags.end());
}

// What sharding rules out: only a rank's shard of a gradient has pages.
Status CheckShardedRun(const ShardChoiceInput& in) {
  const GridOptions& grid = *in.grid;
  const BudgetOptions& budgets = *in.budgets;
  const int per_rank = in.micro_batches;
  const bool layer_major = budgets.micro_batch_order == "layer-major" ||
                           (budgets.micro_batch_order == "auto" && budgets.recompute != "none");
  if (per_rank > 1 && grid.pp > 1) {
    return AtFault(
        Option::kShard,
        Status::InvalidArgument(
            Mention(Option::kShard) + " " + grid.shard + " with " + Mention(Option::kPp) + " " +
            std::to_string(grid.pp) + " and " + std::to_string(per_rank) +
            " micro-batches per data-parallel rank: only this rank's "
            "shard of a gradient has pages, and a pipeline stage sends its gradients down after "
            "each "
            "micro-batch; give one micro-batch per rank (" +
            Mention(Option::kMicroBatch) + " 0) or " + Mention(Option::kShard) + " none"),
        {{"micro_batches", per_rank}, {"pp", grid.pp}});
  }
  if (per_rank > 1 && !layer_major) {
    return AtFault(
        Option::kShard,
        Status::InvalidArgument(
            Mention(Option::kShard) + " " + grid.shard + " with " + std::to_string(per_rank) +
            " micro-batches per rank: only this rank's shard of a gradient has pages, so a "
            "gradient "
            "goes down once per step, after every micro-batch ran through its block; give " +
            Mention(Option::kMicroBatchOrder) + " layer-major " + Mention(Option::kRecompute) +
            " all, or one micro-batch per rank "
            "(" +
            Mention(Option::kMicroBatch) + " 0)"),
        {{"micro_batches", per_rank}});
  }
  if (in.export_grads) {
    return AtFault(Option::kExportGrads,
                   Status::NotSupported(
                       Mention(Option::kExportGrads) + " with " + Mention(Option::kShard) + " " +
                       grid.shard + " is not built yet; use " + Mention(Option::kShard) + " none"));
  }
  return Status::Ok();
}

}  // namespace

Result<ShardChoice> ChooseShards(const ShardChoiceInput& in) {
  const int rank = RankOf(*in.grid), ranks = RanksOf(*in.grid);
  ShardChoice choice;
  std::vector<bool> sharded(in.layout->num_blocks(), ranks > 1 && in.grid->shard == "all");
  if (ranks > 1 && in.grid->shard == "auto") {
    STRATA_ASSIGN_OR_RETURN(sharded, AutoShards(in, &choice.how));
  }
  choice.plan = ShardPlan::Make(*in.layout, rank, ranks, std::move(sharded), in.held);
  if (choice.plan.any_sharded()) STRATA_RETURN_IF_ERROR(CheckShardedRun(in));
  return choice;
}

}  // namespace strata::scheduler
