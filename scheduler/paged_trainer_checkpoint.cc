// The PagedTrainer's checkpoints (scheduler/checkpoint.h, Note [Checkpoint retirement]): the
// fingerprint they carry, the NVMe tier they live in (opened by scheduler/nvme_setup.h, fresh or
// reopened with --resume), and writing them after a step.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "scheduler/checkpoint_store.h"
#include "scheduler/data_parallel.h"
#include "scheduler/nvme_setup.h"
#include "scheduler/paged_trainer_impl.h"

namespace strata::internal {

// Params and moments: what a checkpoint must hold (gradients are rebuilt every step).
std::vector<memory::PageId> PagedTrainer::durable_pages() const {
  std::vector<memory::PageId> out;
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    for (Role r : {Role::kParam, Role::kAdamM, Role::kAdamV, Role::kMaster}) {
      if (r == Role::kMaster && !o_.optimizer.delayed_update) continue;
      for (memory::PageId p : pages_->pages(b, r)) out.push_back(p);
    }
  }
  return out;
}

// The fingerprint of this run and rank (Note [Shards], Note [Tensor-parallel slices]: a rank's
// pages are its shards of its tensor-parallel slice, so resuming needs the same cuts).
Status PagedTrainer::make_fingerprint() {
  std::string shard = shards_.any_sharded()
                          ? "dp " + std::to_string(ranks()) + ", blocks " + shards_.describe()
                          : "none";
  if (piped()) {
    shard = "pp " + std::to_string(o_.grid.pp) + " stage " + std::to_string(pipe_.stage) +
            " blocks " + std::to_string(pipe_.blocks.first_block) + "-" +
            std::to_string(pipe_.blocks.last_block) + (shard == "none" ? "" : "; " + shard);
  }
  if (o_.grid.tp > 1)
    shard = "tp " + std::to_string(o_.grid.tp) + (shard == "none" ? "" : "; " + shard);
  const scheduler::RunLayout layout{.shard = shard,
                                    .dp = ranks(),
                                    .tp = o_.grid.tp,
                                    .pp = o_.grid.pp,
                                    .rank = world_rank(),
                                    .micro_rows = micro_rows()};
  STRATA_ASSIGN_OR_RETURN(fingerprint_, scheduler::MakeRunFingerprint(o_, layout_.config, seq_,
                                                                      pages_->page_bytes(), layout));
  return Status::Ok();
}

// The NVMe tier and the checkpoint record in force (scheduler/nvme_setup.h).
Status PagedTrainer::open_nvme() {
  // Only checkpoints need the fingerprint (it reads --data, --init).
  if (!o_.checkpoints.dir.empty()) STRATA_RETURN_IF_ERROR(make_fingerprint());
  STRATA_ASSIGN_OR_RETURN(scheduler::OpenedNvme opened,
                          scheduler::SetUpNvmeTier({.budgets = &o_.budgets,
                                                   .checkpoints = &o_.checkpoints,
                                                   .faults = o_.nvme_faults,
                                                   .page_bytes = pages_->page_bytes(),
                                                   .state_pages = pages_->num_pages(),
                                                   .durable_pages = durable_pages().size(),
                                                   .host_bytes = plan_.host_bytes,
                                                   .fingerprint = &fingerprint_,
                                                   .world = world_}));
  nvme_ = std::move(opened.tier);
  record_ = std::move(opened.record);
  resume_from_ = opened.resume_from;
  if (resume_from_) start_step_ = resume_from_->step;
  o_.checkpoints.keep = opened.keep_checkpoints;
  return Status::Ok();
}

// Queued behind the step's updates on the optimizer queue (Engine::enqueue_after_updates): the
// driver goes on with the next step while the pages are flushed and the manifest saved. The next
// step's updates queue behind it, so the manifest holds exactly the state after `steps_done`.
Status PagedTrainer::checkpoint(long steps_done) {
  if (pending_checkpoint_.valid()) STRATA_RETURN_IF_ERROR(pending_checkpoint_.get());
  // Every rank's previous checkpoint is durable before any rank starts its next (Note
  // [Checkpoints across ranks] in data_parallel.h).
  if (world_size() > 1) {
    STRATA_RETURN_IF_ERROR(world_->barrier().with_context("checkpoint barrier"));
  }
  pending_checkpoint_ = engine_->enqueue_after_updates([this, steps_done] {
    return write_checkpoint(steps_done)
        .with_context("checkpoint after step " + std::to_string(steps_done));
  });
  return Status::Ok();
}

// Note [Checkpoint retirement]: the manifest, then the record that lists it (and drops the
// oldest beyond --keep-checkpoints), then the deletion of every manifest the record no longer
// lists.
Status PagedTrainer::write_checkpoint(long steps_done) {
  // A snapshot of this name can only be an orphan (a killed run saved it but never recorded
  // it, and a resume collects those): save_snapshot replaces it.
  const std::string name = scheduler::ManifestNameForStep(steps_done);
  STRATA_RETURN_IF_ERROR(mm_->save_snapshot(name, durable_pages()));
  scheduler::CheckpointRecord next = record_;
  // The retired ones' manifests go with every other unlisted step-* manifest below.
  (void)next.push_newest({steps_done, name}, uint64_t(o_.checkpoints.keep));
  STRATA_RETURN_IF_ERROR(scheduler::WriteCheckpointRecord(o_.checkpoints.dir, next));
  record_ = std::move(next);
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, mm_->snapshot_names());
  for (const std::string& n : names) {
    const bool listed =
        std::any_of(record_.checkpoints.begin(), record_.checkpoints.end(),
                    [&](const scheduler::CheckpointEntry& e) { return e.manifest == n; });
    if (!listed && scheduler::IsCheckpointManifest(n)) {
      STRATA_RETURN_IF_ERROR(mm_->delete_snapshot(n));
    }
  }
  Logger("train")->debug("checkpoint {} in {} (kept: steps {})", name, o_.checkpoints.dir,
                         record_.steps_text());
  return Status::Ok();
}

}  // namespace strata::internal
