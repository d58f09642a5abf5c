// PagedTrainer (internal to scheduler/): the Trainer over the Engine, for CreatePagedTrainer
// (paged_trainer.h). paged_trainer.cc sets it up, one step after another, and runs it. Each setup
// step is a part with one job, built from explicit inputs: scheduler/rank_groups.h (the grid's
// Comms, this rank's rows, its pipeline stage), scheduler/shard_choice.h (which blocks this rank
// holds a shard of), scheduler/split_choice.h (--split-ops and the memory plan it gives),
// scheduler/nvme_setup.h (the NVMe tier and the checkpoint record in force) and
// scheduler/checkpoint_writer.h (the checkpoints after a step). The trainer's files call them:
// paged_trainer_grid.cc (the grid, the first line, tensor-parallel slices),
// paged_trainer_shards.cc (the shards and the split, gathering a block's shards),
// paged_trainer_checkpoint.cc (the fingerprint, the NVMe tier, the checkpoint writer),
// paged_trainer_state.cc (the model's values in and out).
// Threads: Setup and Run from one thread; checkpoints run on the Engine's optimizer queue
// (checkpoint_writer.h).
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
#include "core/nn/tp_layout.h"
#include "memory/memory_manager.h"
#include "memory/nvme_tier.h"
#include "parallel/comm.h"
#include "scheduler/checkpoint.h"
#include "scheduler/checkpoint_writer.h"
#include "scheduler/data_parallel.h"
#include "scheduler/engine.h"
#include "scheduler/memory_plan.h"
#include "scheduler/rank_groups.h"
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
  PagedTrainer(TrainOptions o, std::unique_ptr<Model> model, int seq, TokenDataset data)
      : o_(std::move(o)),
        model_(std::move(model)),
        tp_model_(o_.grid.tp > 1 ? model_->tensor_parallel_rank(o_.grid.tp) : nullptr),
        layout_(rank_model().layout()),
        full_layout_(model_->layout()),
        seq_(seq),
        data_(std::move(data)) {}

  ~PagedTrainer() override {
    if (engine_) engine_->drain().ignore_error();  // also runs a queued checkpoint
    engine_.reset();
    mm_.reset();
    nvme_.reset();
  }

  Status setup();
  const ModelShape& shape() const override { return model_->shape(); }
  int seq() const override { return seq_; }
  std::string data_name() const override { return data_.name(); }
  long start_step() const override { return start_step_; }
  Status run(const std::function<void(const StepStats&)>& on_step) override;

 private:
  // Data parallelism (Note [Data-parallel gradients]): this rank and the size of its
  // data-parallel group (o_.grid.ranks once make_grid ran); each rank runs rank_rows() of the
  // step's --batch, one micro-batch unless --micro-batch says otherwise (both once make_grid ran).
  int rank() const { return scheduler::RankOf(o_.grid); }
  int ranks() const { return scheduler::RanksOf(o_.grid); }
  // The job's ranks (the whole grid): rank 0 writes the outputs, all agree on checkpoints.
  int world_rank() const { return groups_.world_rank(); }
  int world_size() const { return groups_.world_size(); }
  int tp_rank() const { return groups_.tp() != nullptr ? groups_.tp()->rank() : 0; }
  int rank_rows() const { return groups_.rank_rows(); }
  int micro_rows() const { return groups_.micro_rows(); }
  // --host-eviction auto: Belady over the learned plan, except in layer-major order, where the
  // plan misjudged the moments and LRU moved fewer bytes and ran faster (docs/scheduler.md,
  // Limits: 80-layer scale run, 2026-11-25).
  bool belady() const {
    return o_.budgets.host_eviction == "belady" ||
           (o_.budgets.host_eviction == "auto" &&
            plan_.order != scheduler::MicroBatchOrder::kLayerMajor);
  }
  bool checkpoints_on() const { return o_.checkpoints.every > 0 && !o_.checkpoints.dir.empty(); }
  // The grid's groups and this rank's pipeline stage (scheduler/rank_groups.h): o_.grid.ranks
  // becomes this rank's data-parallel group.
  Status make_grid();
  bool piped() const { return o_.grid.pp > 1; }
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
  // The NVMe tier; returns the checkpoint record in force (paged_trainer_checkpoint.cc).
  Result<scheduler::CheckpointRecord> open_nvme();
  void create_checkpoint_writer(scheduler::CheckpointRecord record);
  Status make_fingerprint();
  // The step's figures from the counters at the end of its compute and the previous step's.
  StepStats stats_of(long step, const scheduler::EngineStepResult& r, const DeviceStats& d0,
                    const memory::MemoryStats& m0) const;
  Status drain();
  Status finish();
  Status write_initial_params();
  Status reset_moments();
  Status export_role(Role role, const std::string& path);
  Status gather_block(int block, Role role, float* values);
  // Which blocks this rank shards (scheduler/shard_choice.h), and --split-ops with the memory
  // plan it gives (scheduler/split_choice.h): paged_trainer_shards.cc.
  Status make_shards();
  Result<MemoryPlan> plan_split(scheduler::MemoryPlanInput in);

  // The model this rank runs: the whole model's, or under --tp its tensor-parallel rank's.
  const Model& rank_model() const { return tp_model_ ? *tp_model_ : *model_; }

  TrainOptions o_;
  std::unique_ptr<Model> model_;     // the whole model (what --init, --export and the data see)
  std::unique_ptr<Model> tp_model_;  // --tp: one rank's (Model::tensor_parallel_rank); else null
  ModelLayout layout_;  // this rank's blocks: its tensor-parallel slice (SliceLayoutForTp)
  const ModelLayout& full_layout_;  // the whole model's (what --init, --export and the data see)
  int seq_;
  TokenDataset data_;
  int threads_ = 1;
  // The job's ranks (o_.grid.ranks as given), its groups' Comms, the pipeline stage.
  scheduler::RankGroups groups_;
  scheduler::ShardPlan shards_;  // what this rank owns (Note [Shards] in shard_plan.h)
  ModelLayout gathered_layout_;  // the layout as the device slots see it
  std::string shard_choice_;      // --shard auto: how the choice was made (the first line)
  scheduler::SplitPlan split_;    // --split-ops (Note [Split operators] in split_plan.h)
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
  std::optional<scheduler::CheckpointEntry> resume_from_;
  long start_step_ = 0;
  // --ckpt-every: the record in force and the pending checkpoint (checkpoint_writer.h).
  std::unique_ptr<scheduler::CheckpointWriter> checkpoints_;
};

}  // namespace strata::internal
