// The PagedTrainer's NVMe tier (fresh, or reopened with --resume) and its checkpoints
// (scheduler/checkpoint.h).
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/sizes.h"
#include "memory/nvme_store.h"
#include "scheduler/paged_trainer_impl.h"

namespace strata::internal {

std::string PagedTrainer::RunFingerprint() const {
  return layout_.config.ToString() + " batch " + std::to_string(o_.batch) + " micro " +
         std::to_string(o_.micro_batch) + " seq " + std::to_string(seq_) + " page " +
         std::to_string(pages_->page_bytes()) + " seed " + std::to_string(o_.seed) +
         (o_.delayed_update ? " delayed-update" : "");
}

// Params and moments: what a checkpoint must hold (gradients are rebuilt every step).
std::vector<memory::PageId> PagedTrainer::DurablePages() const {
  std::vector<memory::PageId> out;
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    for (Role r : {Role::kParam, Role::kAdamM, Role::kAdamV, Role::kMaster}) {
      if (r == Role::kMaster && !o_.delayed_update) continue;
      for (memory::PageId p : pages_->pages(b, r)) out.push_back(p);
    }
  }
  return out;
}

Status PagedTrainer::OpenNvme(uint64_t state_bytes) {
  const std::string& dir = o_.nvme_dirs[0];
  if (o_.resume) {
    STRATA_ASSIGN_OR_RETURN(resume_from_, scheduler::ReadCheckpointRecord(o_.ckpt_dir));
    if (resume_from_ && !memory::NvmeStoreExists(dir)) {
      return Status::NotFound("--resume: " + o_.ckpt_dir + " names checkpoint " +
                              resume_from_->manifest + " but --nvme-dir " + dir +
                              " holds no page store; give the --nvme-dir of the checkpointed run");
    }
    if (resume_from_ && resume_from_->run != RunFingerprint()) {
      return Status::InvalidArgument("--resume: the checkpoint in " + o_.ckpt_dir +
                                     " is of another run (" + resume_from_->run + "), not " +
                                     RunFingerprint() +
                                     "; use the same flags or another --ckpt-dir");
    }
  } else if (memory::NvmeStoreExists(dir)) {
    return Status::InvalidArgument("--nvme-dir " + dir + " already holds a Strata page store (" +
                                   memory::NvmeStorePath(dir) +
                                   ") from an earlier run; add --resume to continue it, or give "
                                   "an empty directory");
  }
  // Copy-on-write keeps up to two versions of a page (committed + staged), and a checkpoint's
  // manifest pins one more version of every parameter and moment page.
  const uint64_t need =
      2 * state_bytes + (o_.ckpt_every > 0 ? DurablePages().size() * pages_->page_bytes() : 0);
  if (o_.nvme_mem > 0 && o_.nvme_mem < need) {
    return Status::ResourceExhausted(
        "--nvme-mem " + FormatBytes(o_.nvme_mem) + " is below the " + FormatBytes(need) +
        " that the NVMe tier needs (two versions of every page of state" +
        (o_.ckpt_every > 0 ? std::string(" plus a checkpoint's parameters and moments") : "") +
        "); raise --nvme-mem or leave it out (default 3x the state)");
  }
  memory::NvmeStoreOptions so;
  so.dirs = o_.nvme_dirs;
  so.page_bytes = pages_->page_bytes();
  so.capacity_bytes = o_.nvme_mem > 0 ? o_.nvme_mem : 3 * state_bytes;
  so.faults = o_.nvme_faults;
  if (resume_from_) so.restore_snapshot = resume_from_->manifest;
  Result<std::unique_ptr<memory::NvmeTier>> nvme = memory::OpenNvmeStore(so);
  if (!nvme.ok()) {
    return resume_from_ ? nvme.status().WithContext("--resume from " + o_.ckpt_dir) : nvme.status();
  }
  nvme_ = std::move(*nvme);
  if (resume_from_) start_step_ = resume_from_->step;
  return Status::Ok();
}

Status PagedTrainer::Checkpoint(long steps_done) {
  if (pending_checkpoint_.valid()) STRATA_RETURN_IF_ERROR(pending_checkpoint_.get());
  pending_checkpoint_ = engine_->EnqueueAfterUpdates([this, steps_done] {
    return WriteCheckpoint(steps_done)
        .WithContext("checkpoint after step " + std::to_string(steps_done));
  });
  return Status::Ok();
}

Status PagedTrainer::WriteCheckpoint(long steps_done) {
  // A snapshot of this name can only be an orphan: a killed run saved it but never recorded it
  // (the record names an earlier step, the one this run resumed from). save_snapshot replaces
  // it.
  const std::string name = scheduler::ManifestNameForStep(steps_done);
  STRATA_RETURN_IF_ERROR(mm_->save_snapshot(name, DurablePages()));
  STRATA_RETURN_IF_ERROR(
      scheduler::WriteCheckpointRecord(o_.ckpt_dir, {steps_done, name, RunFingerprint()}));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, mm_->snapshot_names());
  for (const std::string& n : names) {
    if (n != name && n.rfind("step-", 0) == 0) STRATA_RETURN_IF_ERROR(mm_->delete_snapshot(n));
  }
  Logger("train")->debug("checkpoint {} in {}", name, o_.ckpt_dir);
  return Status::Ok();
}

}  // namespace strata::internal
