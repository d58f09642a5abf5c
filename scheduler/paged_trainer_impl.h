// PagedTrainer (internal to scheduler/): the Trainer over the Engine, for CreatePagedTrainer
// (paged_trainer.h). paged_trainer.cc sets it up, one step after another, and runs it; the
// steps' parts live in files named for them: paged_trainer_grid.cc (the grid's Comms, the
// pipeline stage, tensor-parallel slices), paged_trainer_shards.cc (which blocks this rank holds
// a shard of), paged_trainer_checkpoint.cc (the NVMe tier, opened by scheduler/nvme_setup.h,
// and the checkpoints written into it), paged_trainer_state.cc (the model's values in and out).
// Threads: Setup and Run from one thread; checkpoints run on the Engine's optimizer queue.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/data/token_dataset.h"
#include "core/device/device.h"
#include "core/nn/gpt_layout.h"
#include "core/nn/tp_layout.h"
#include "memory/memory_manager.h"
#include "memory/nvme_tier.h"
#include "parallel/comm.h"
#include "parallel/grid.h"
#include "scheduler/checkpoint.h"
#include "scheduler/data_parallel.h"
#include "scheduler/engine.h"
#include "scheduler/memory_plan.h"
#include "scheduler/pipe_stage.h"
#include "scheduler/run_fingerprint.h"
#include "scheduler/split_plan.h"
#include "scheduler/state_pages.h"
#include "scheduler/trace.h"
#include "scheduler/train_options.h"
#include "scheduler/trainer.h"

namespace strata::internal {

using memory::Role;
using scheduler::Engine;
using scheduler::MemoryPlan;
using scheduler::StatePages;

// Dirty host pages staged per NVMe commit by an eviction (MemoryManagerOptions).
constexpr uint64_t kWriteBackGroupPages = 8;
// The most pages of state one run may have (PagedTrainer::check_page_count): at 16 MiB pages,
// 64 TiB of state.
constexpr uint64_t kMaxStatePages = uint64_t{1} << 22;

class PagedTrainer final : public Trainer {
 public:
  PagedTrainer(TrainOptions o, GptConfig c, int seq, TokenDataset data)
      : o_(std::move(o)),
        layout_(o_.grid.tp > 1 ? MakeTpLayout(c, o_.grid.tp) : MakeGptLayout(c)),
        full_layout_(MakeGptLayout(c)),
        seq_(seq),
        data_(std::move(data)) {}

  ~PagedTrainer() override {
    if (engine_) engine_->drain().ignore_error();  // also runs a queued checkpoint
    engine_.reset();
    mm_.reset();
    nvme_.reset();
  }

  Status setup();
  const GptConfig& config() const override { return full_layout_.config; }
  int seq() const override { return seq_; }
  std::string data_name() const override { return data_.name(); }
  long start_step() const override { return start_step_; }
  Status run(const std::function<void(const StepStats&)>& on_step) override;

 private:
  // Data parallelism (Note [Data-parallel gradients]): this rank and the size of its
  // data-parallel group (o_.ranks once make_grid ran); each rank runs rank_rows() of the step's
  // --batch, one micro-batch unless --micro-batch says otherwise.
  int rank() const { return scheduler::RankOf(o_.grid); }
  int ranks() const { return scheduler::RanksOf(o_.grid); }
  // The job's ranks (the whole grid): rank 0 writes the outputs, all agree on checkpoints.
  int world_rank() const { return world_ != nullptr ? world_->rank() : 0; }
  int world_size() const { return world_ != nullptr ? world_->size() : 1; }
  int tp_rank() const { return tp_comm_ != nullptr ? tp_comm_->rank() : 0; }
  int rank_rows() const { return o_.data.batch / ranks(); }
  int micro_rows() const { return o_.data.micro_batch > 0 ? o_.data.micro_batch : rank_rows(); }
  // --host-eviction auto: Belady over the learned plan, except in layer-major order, where the
  // plan misjudged the moments and LRU moved fewer bytes and ran faster (docs/scheduler.md,
  // Limits: 80-layer scale run, 2026-11-25).
  bool belady() const {
    return o_.budgets.host_eviction == "belady" ||
           (o_.budgets.host_eviction == "auto" &&
            plan_.order != scheduler::MicroBatchOrder::kLayerMajor);
  }
  bool checkpoints_on() const { return o_.checkpoints.every > 0 && !o_.checkpoints.dir.empty(); }
  // The grid's groups (paged_trainer_grid.cc): o_.ranks becomes this rank's data-parallel group.
  Status make_grid();
  // Pipeline parallelism (paged_trainer_grid.cc): this rank's stage, the blocks it holds, the
  // stage of a block, the costs the partition balances.
  Status make_stage(int stage);
  Result<scheduler::StageCosts> measure_stage_costs();
  bool piped() const { return o_.grid.pp > 1; }
  std::vector<bool> held_blocks() const;
  int stage_of(int block) const;
  std::string stages_text() const;
  std::string tiers_text(const std::vector<uint64_t>& figures) const;
  Status log_first_line();
  // Tensor parallelism: this rank's slice of a whole block (`full`), and the whole block from
  // every tp rank's slice of it (`local`; collective over the tp group).
  void slice_block(int block, const float* full, float* local) const;
  Status unslice_block(int block, const float* local, float* full);
  Result<uint64_t> checked_page_bytes() const;
  Status check_page_count(uint64_t page_bytes) const;
  Status check_fits_machine() const;
  Status make_plan();
  Status create_device();
  Status create_memory();
  Status load_state();
  Status create_engine();
  Status open_nvme();
  Status make_fingerprint();
  // The step's figures from the counters at the end of its compute and the previous step's.
  StepStats stats_of(long step, const scheduler::EngineStepResult& r, const DeviceStats& d0,
                    const memory::MemoryStats& m0) const;
  Status drain();
  Status finish();
  Status write_initial_params();
  Status reset_moments();
  Status checkpoint(long steps_done);
  Status write_checkpoint(long steps_done);
  std::vector<memory::PageId> durable_pages() const;
  Status export_role(Role role, const std::string& path);
  Status gather_block(int block, Role role, float* values);
  Status make_shards();
  Result<std::vector<bool>> choose_shards();
  Result<std::vector<bool>> checkpointed_shards();
  Result<std::vector<bool>> search_shards();
  Result<MemoryPlan> plan_split(scheduler::MemoryPlanInput in);

  TrainOptions o_;
  GptLayout layout_;       // this rank's blocks: its tensor-parallel slice (MakeTpLayout)
  GptLayout full_layout_;  // the whole model's (what --init, --export and the data see)
  int seq_;
  TokenDataset data_;
  int threads_ = 1;
  parallel::Comm* world_ = nullptr;  // the job's ranks (o_.ranks as given); nullptr: one rank
  parallel::Grid grid_;
  std::unique_ptr<parallel::Comm> dp_comm_, tp_comm_;  // --tp / --pp: the grid's groups
  std::unique_ptr<parallel::Comm> pp_fwd_[2], pp_bwd_[2], pp_tied_;  // the pipeline's (pipe_stage.h)
  scheduler::StageCosts stage_costs_;
  std::vector<int> stage_blocks_;  // transformer blocks per stage
  scheduler::PipeStage pipe_;
  scheduler::ShardPlan shards_;  // what this rank owns (Note [Shards] in shard_plan.h)
  GptLayout gathered_layout_;     // the layout as the device slots see it
  std::string shard_choice_;      // --shard auto: how the choice was made (the first line)
  scheduler::SplitPlan split_;    // --split-ops (Note [Split operators] in split_plan.h)
  GptLayout param_layout_;        // the layout as parameter slots see it
  std::string split_choice_ = "1";  // the split factors and, for auto, why (the first line)
  std::unique_ptr<parallel::Comm> slice_comm_;  // split blocks' slice gathers; outlives engine_
  std::unique_ptr<StatePages> pages_;
  MemoryPlan plan_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<memory::NvmeTier> nvme_;
  std::unique_ptr<memory::MemoryManager> mm_;
  scheduler::Timeline timeline_;
  std::unique_ptr<Engine> engine_;
  scheduler::RunFingerprint fingerprint_;
  scheduler::CheckpointRecord record_;  // in force; after Setup only the optimizer queue's
  std::optional<scheduler::CheckpointEntry> resume_from_;
  long start_step_ = 0;
  std::shared_future<Status> pending_checkpoint_;
};

}  // namespace strata::internal
