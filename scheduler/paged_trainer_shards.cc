// PagedTrainer's sharded state (Note [Shards] in shard_plan.h): which blocks this rank holds a
// shard of (--shard all, or --shard auto's search: Note [OSDP's choice] in shard_search.h), and
// gathering a block's shards (--export).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/device/create_device.h"
#include "core/util/machine_memory.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "scheduler/paged_trainer_impl.h"
#include "scheduler/shard_measure.h"
#include "scheduler/shard_search.h"

namespace strata::internal {

// Which blocks this rank holds a shard of (Note [Shards] in shard_plan.h), and what sharding
// rules out.
Status PagedTrainer::make_shards() {
  std::vector<bool> sharded(layout_.num_blocks(), ranks() > 1 && o_.grid.shard == "all");
  if (ranks() > 1 && o_.grid.shard == "auto") {
    STRATA_ASSIGN_OR_RETURN(sharded, choose_shards());
  }
  shards_ = scheduler::ShardPlan::Make(layout_, rank(), ranks(), std::move(sharded), held_blocks());
  gathered_layout_ = scheduler::GatheredLayout(layout_, shards_);
  if (!shards_.any_sharded()) return Status::Ok();
  const int per_rank = rank_rows() / micro_rows();
  const bool layer_major =
      o_.budgets.micro_batch_order == "layer-major" ||
      (o_.budgets.micro_batch_order == "auto" && o_.budgets.recompute != "none");
  if (per_rank > 1 && piped()) {
    return AtFault(
        Option::kShard,
        Status::InvalidArgument(
            Mention(Option::kShard) + " " + o_.grid.shard + " with " + Mention(Option::kPp) + " " +
            std::to_string(o_.grid.pp) + " and " + std::to_string(per_rank) +
            " micro-batches per data-parallel rank: only this rank's "
            "shard of a gradient has pages, and a pipeline stage sends its gradients down after "
            "each "
            "micro-batch; give one micro-batch per rank (" +
            Mention(Option::kMicroBatch) + " 0) or " + Mention(Option::kShard) + " none"),
        {{"micro_batches", per_rank}, {"pp", o_.grid.pp}});
  }
  if (per_rank > 1 && !layer_major) {
    return AtFault(
        Option::kShard,
        Status::InvalidArgument(
            Mention(Option::kShard) + " " + o_.grid.shard + " with " + std::to_string(per_rank) +
            " micro-batches per rank: only this rank's shard of a gradient has pages, so a "
            "gradient "
            "goes down once per step, after every micro-batch ran through its block; give " +
            Mention(Option::kMicroBatchOrder) + " layer-major " + Mention(Option::kRecompute) +
            " all, or one micro-batch per rank "
            "(" +
            Mention(Option::kMicroBatch) + " 0)"),
        {{"micro_batches", per_rank}});
  }
  if (!o_.outputs.export_grads_path.empty()) {
    return AtFault(
        Option::kExportGrads,
        Status::NotSupported(Mention(Option::kExportGrads) + " with " + Mention(Option::kShard) +
                             " " + o_.grid.shard + " is not built yet; use " +
                             Mention(Option::kShard) + " none"));
  }
  return Status::Ok();
}

// --shard auto (Note [OSDP's choice] in shard_search.h): a resumed run keeps its checkpoint's
// choice (its pages are cut that way); otherwise every rank searches and rank 0's choice is
// broadcast (the measurements differ by noise).
Result<std::vector<bool>> PagedTrainer::choose_shards() {
  STRATA_ASSIGN_OR_RETURN(std::vector<bool> sharded, checkpointed_shards());
  if (sharded.empty()) {
    STRATA_ASSIGN_OR_RETURN(sharded, search_shards());
  }
  std::vector<uint8_t> flags(sharded.begin(), sharded.end());
  STRATA_RETURN_IF_ERROR(o_.grid.ranks->broadcast(flags.data(), flags.size(), 0).wait());
  return std::vector<bool>(flags.begin(), flags.end());
}

// The decisions the checkpoint's fingerprint records ("dp 2, blocks 0-3: sharded"), or none.
Result<std::vector<bool>> PagedTrainer::checkpointed_shards() {
  if (!o_.checkpoints.resume || o_.checkpoints.dir.empty()) return std::vector<bool>{};
  STRATA_ASSIGN_OR_RETURN(const auto found, scheduler::ReadCheckpointRecord(o_.checkpoints.dir));
  if (!found) return std::vector<bool>{};
  const auto it = found->fingerprint.find(scheduler::RecordKey(Option::kShard));
  constexpr std::string_view kBlocks = ", blocks ";
  if (it == found->fingerprint.end() || it->second.find(kBlocks) == std::string::npos) {
    return std::vector<bool>{};
  }
  shard_choice_ = Mention(Option::kShard) + " auto: the checkpoint's choice";
  return scheduler::ParseShardDecisions(
      it->second.substr(it->second.find(kBlocks) + kBlocks.size()), layout_.num_blocks());
}

// The search's inputs measured here, every block's state bytes from the page plans themselves
// (a sharded block's the largest over the ranks: the choice must fit every rank).
Result<std::vector<bool>> PagedTrainer::search_shards() {
  const int n = layout_.num_blocks();
  const uint64_t page =
      o_.budgets.page_bytes > 0 ? o_.budgets.page_bytes : memory::kDefaultPageBytes;
  const scheduler::ShardPlan all =
      scheduler::ShardPlan::Make(layout_, rank(), ranks(), std::vector<bool>(n, true));
  const scheduler::ShardPlan none = scheduler::ShardPlan::Replicated(layout_, rank(), ranks());
  STRATA_ASSIGN_OR_RETURN(const StatePages sharded_pages, StatePages::Make(layout_, page, false, &all));
  STRATA_ASSIGN_OR_RETURN(const StatePages whole_pages, StatePages::Make(layout_, page, false, &none));
  scheduler::ShardSearchSetting setting;
  setting.layout = &layout_;
  setting.all_sharded = &all;
  setting.micro_batches = rank_rows() / micro_rows();
  uint64_t largest = 0;
  for (int b = 0; b < n; ++b) {
    largest = std::max<uint64_t>(largest, all.gathered_floats(b) * 4);
    setting.replicated_bytes.push_back(whole_pages.block_state_bytes(b));
    setting.sharded_bytes.push_back(sharded_pages.block_state_bytes(b));
  }
  std::vector<uint64_t> every(size_t(n) * ranks());
  STRATA_RETURN_IF_ERROR(
      o_.grid.ranks
          ->all_gather(setting.sharded_bytes.data(), every.data(), size_t(n) * sizeof(uint64_t))
          .wait());
  for (size_t i = 0; i < every.size(); ++i) {
    setting.sharded_bytes[i % n] = std::max(setting.sharded_bytes[i % n], every[i]);
  }
  // Measured on a scratch device of the run's kind and GPU, sized for the measurements (the
  // run's own device is sized by the plan they decide).
  const uint64_t comm_bytes = std::min<uint64_t>(largest, 16 * kMiB);
  const int rows = micro_rows() * seq_;
  SimDeviceOptions scratch;
  scratch.capacity_bytes = std::max(scheduler::CollectiveRatesBytes(*o_.grid.ranks, comm_bytes),
                                    scheduler::BlockForwardBytes(layout_.config, rows)) +
                           kMiB;  // alignment
  const int ordinal = scheduler::CudaOrdinalOf(o_.grid);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                          CreateDevice({.kind = o_.device, .cuda_ordinal = ordinal}, scratch));
  STRATA_ASSIGN_OR_RETURN(setting.rates,
                          scheduler::MeasureCollectiveRates(*o_.grid.ranks, *device, comm_bytes));
  STRATA_ASSIGN_OR_RETURN(setting.forward,
                          scheduler::MeasureBlockForwards(*device, ComputeDtype(o_.dtype),
                                                          layout_.config, rows, threads_));
  // The rank's budget for its state: --host-mem (less the pool's working pages when pages may
  // pass through it from NVMe); without it, an even share of what this machine has available.
  const uint64_t working = o_.budgets.nvme_dirs.empty() ? 0 : scheduler::kHostWorkingPages * page;
  const uint64_t capacity = o_.budgets.host_mem > 0
                                ? o_.budgets.host_mem - std::min(o_.budgets.host_mem, working)
                                : ReadMachineMemory().available_bytes / ranks();
  const scheduler::ShardSearchResult r =
      scheduler::SearchShards(scheduler::ShardSearchInputs(setting), capacity);
  shard_choice_ = Mention(Option::kShard) + " auto: " + r.to_string() + ", state " +
                  FormatBytes(r.state_bytes) + " per rank of a budget of " + FormatBytes(capacity);
  return r.sharded;
}

// --split-ops (Note [Split operators] in split_plan.h): K splits every sharded transformer block;
// auto keeps blocks whole when the memory plan fits --gpu-mem so, else takes the smallest K with
// which it fits (splitting costs only the slices' gathers, but it costs them every op). A rank's
// split slot holds its own pieces of the MLP weights, so the ranks' plans differ: auto takes the
// K that fits on every rank (their collectives must match).
Result<MemoryPlan> PagedTrainer::plan_split(scheduler::MemoryPlanInput in) {
  bool splittable = false;
  for (int b = 1; b + 1 < layout_.num_blocks(); ++b) splittable |= shards_.sharded(b);
  const bool automatic = o_.grid.split_ops == "auto" && splittable;
  std::vector<int> factors = {1};
  if (automatic) factors = {1, 2, 4};
  if (o_.grid.split_ops != "auto") factors = {std::stoi(o_.grid.split_ops)};  // checked: 1, 2 or 4
  for (int k : factors) {
    STRATA_ASSIGN_OR_RETURN(split_, scheduler::SplitPlan::Make(
                                        layout_, shards_, scheduler::SplitFactors(k, shards_, layout_)));
    param_layout_ = scheduler::ParamSlotLayout(gathered_layout_, split_);
    in.param_layout = &param_layout_;
    in.slice_bytes = uint64_t(2) * split_.slice_buffer_floats() * 4;
    Result<MemoryPlan> plan = scheduler::MakeMemoryPlan(in);
    const bool last = k == factors.back();
    if (!plan.ok() && plan.status().code() != StatusCode::kResourceExhausted) return plan;
    if (automatic) {
      uint8_t fits = plan.ok() ? 1 : 0;
      std::vector<uint8_t> all(static_cast<size_t>(ranks()));
      STRATA_RETURN_IF_ERROR(o_.grid.ranks->all_gather(&fits, all.data(), 1).wait());
      const bool everywhere = std::find(all.begin(), all.end(), 0) == all.end();
      if (!everywhere && !last) continue;
      if (!everywhere && plan.ok()) {
        return AtFault(
            Option::kGpuMem,
            Status::ResourceExhausted(
                Mention(Option::kSplitOps) + " auto: " + Mention(Option::kGpuMem) + " " +
                FormatBytes(o_.budgets.gpu_mem) + " is too small for another rank even with " +
                std::to_string(k) + " slices; raise " + Mention(Option::kGpuMem)),
            {{"got", FaultNumber(o_.budgets.gpu_mem)}, {"slices", k}});
      }
    } else if (!plan.ok() && !last) {
      continue;
    }
    split_choice_ = split_.describe();
    if (automatic) {
      split_choice_ +=
          k == 1 ? " (auto: whole blocks fit " + Mention(Option::kGpuMem) + ")"
                 : " (auto: the fewest slices with which " + Mention(Option::kGpuMem) + " fits)";
    }
    return plan;
  }
  return Status::Internal("no " + Mention(Option::kSplitOps) +
                          " factor was tried");  // the last one returns
}

// A block's values of `role` into `values` (its layout's numel floats): read from this rank's
// pages, then, when sharded, the other ranks' shards gathered (collective: every rank calls it).
Status PagedTrainer::gather_block(int block, Role role, float* values) {
  if (!shards_.sharded(block)) return scheduler::ReadBlockPages(*mm_, *pages_, block, role, values);
  const int64_t shard = shards_.shard_floats(block);
  std::vector<float> gathered(size_t(shards_.gathered_floats(block)), 0.0f);
  STRATA_RETURN_IF_ERROR(scheduler::ReadBlockPages(*mm_, *pages_, block, role, gathered.data()));
  STRATA_RETURN_IF_ERROR(o_.grid.ranks
                             ->all_gather(gathered.data() + rank() * shard, gathered.data(),
                                          size_t(shard) * sizeof(float))
                             .wait()
                             .with_context("gathering block " + std::to_string(block)));
  std::copy_n(gathered.begin(), layout_.blocks[block].numel, values);
  return Status::Ok();
}

}  // namespace strata::internal
