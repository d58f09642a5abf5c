// The PagedTrainer's checkpoints (scheduler/checkpoint.h, Note [Checkpoint retirement]): the
// fingerprint they carry, the NVMe tier they live in (opened by scheduler/nvme_setup.h, fresh or
// reopened with --resume), and the writer of those after a step (scheduler/checkpoint_writer.h).
#include <string>
#include <vector>

#include "scheduler/checkpoint_writer.h"
#include "scheduler/data_parallel.h"
#include "scheduler/nvme_setup.h"
#include "scheduler/paged_trainer_impl.h"

namespace strata::internal {

// The fingerprint of this run and rank (Note [Shards], Note [Tensor-parallel slices]: a rank's
// pages are its shards of its tensor-parallel slice, so resuming needs the same cuts).
Status PagedTrainer::make_fingerprint() {
  std::string shard = shards_.any_sharded()
                          ? "dp " + std::to_string(ranks()) + ", blocks " + shards_.describe()
                          : "none";
  if (piped()) {
    const scheduler::PipeStage& pipe = groups_.pipe();
    shard = "pp " + std::to_string(o_.grid.pp) + " stage " + std::to_string(pipe.stage) +
            " blocks " + std::to_string(pipe.blocks.first_block) + "-" +
            std::to_string(pipe.blocks.last_block) + (shard == "none" ? "" : "; " + shard);
  }
  if (o_.grid.tp > 1)
    shard = "tp " + std::to_string(o_.grid.tp) + (shard == "none" ? "" : "; " + shard);
  const scheduler::RunLayout layout{.shard = shard,
                                    .dp = ranks(),
                                    .tp = o_.grid.tp,
                                    .pp = o_.grid.pp,
                                    .rank = world_rank(),
                                    .micro_rows = micro_rows()};
  STRATA_ASSIGN_OR_RETURN(fingerprint_,
                          scheduler::MakeRunFingerprint(o_, model_->shape().description, seq_,
                                                        pages_->page_bytes(), layout));
  return Status::Ok();
}

// The NVMe tier and the checkpoint record in force (scheduler/nvme_setup.h).
Result<scheduler::CheckpointRecord> PagedTrainer::open_nvme() {
  // Only checkpoints need the fingerprint (it reads --data, --init).
  if (!o_.checkpoints.dir.empty()) STRATA_RETURN_IF_ERROR(make_fingerprint());
  const uint64_t durable_pages =
      scheduler::DurablePages(*pages_, layout_.num_blocks(), o_.optimizer.delayed_update).size();
  STRATA_ASSIGN_OR_RETURN(scheduler::OpenedNvme opened,
                          scheduler::SetUpNvmeTier({.budgets = &o_.budgets,
                                                   .checkpoints = &o_.checkpoints,
                                                   .faults = o_.nvme_faults,
                                                   .page_bytes = pages_->page_bytes(),
                                                   .state_pages = pages_->num_pages(),
                                                   .durable_pages = durable_pages,
                                                   .host_bytes = plan_.host_bytes,
                                                   .fingerprint = &fingerprint_,
                                                   .world = groups_.world()}));
  nvme_ = std::move(opened.tier);
  resume_from_ = opened.resume_from;
  if (resume_from_) start_step_ = resume_from_->step;
  o_.checkpoints.keep = opened.keep_checkpoints;
  return std::move(opened.record);
}

// The writer of the checkpoints after a step (scheduler/checkpoint_writer.h), over the Engine's
// optimizer queue and the memory manager's NVMe snapshots.
void PagedTrainer::create_checkpoint_writer(scheduler::CheckpointRecord record) {
  scheduler::CheckpointWriterOptions w;
  w.dir = o_.checkpoints.dir;
  w.keep = o_.checkpoints.keep;
  w.pages = scheduler::DurablePages(*pages_, layout_.num_blocks(), o_.optimizer.delayed_update);
  w.memory = mm_.get();
  w.engine = engine_.get();
  w.world = groups_.world();
  checkpoints_ = std::make_unique<scheduler::CheckpointWriter>(std::move(w), std::move(record));
}

}  // namespace strata::internal
