// The PagedTrainer's NVMe tier (fresh, or reopened with --resume) and its checkpoints
// (scheduler/checkpoint.h, Note [Checkpoint retirement]).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "memory/nvme_store.h"
#include "scheduler/checkpoint_store.h"
#include "scheduler/data_parallel.h"
#include "scheduler/paged_trainer_impl.h"

namespace strata::internal {

// Params and moments: what a checkpoint must hold (gradients are rebuilt every step).
std::vector<memory::PageId> PagedTrainer::durable_pages() const {
  std::vector<memory::PageId> out;
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    for (Role r : {Role::kParam, Role::kAdamM, Role::kAdamV, Role::kMaster}) {
      if (r == Role::kMaster && !o_.delayed_update) continue;
      for (memory::PageId p : pages_->pages(b, r)) out.push_back(p);
    }
  }
  return out;
}

// This run's record before its first checkpoint.
scheduler::CheckpointRecord PagedTrainer::fresh_record() const {
  scheduler::CheckpointRecord r;
  r.run = fingerprint_.summary();
  r.fingerprint = fingerprint_.to_map();
  for (const std::string& d : o_.nvme_dirs) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(d, ec);
    r.nvme_dirs.push_back(ec ? d : abs.lexically_normal().string());
  }
  return r;
}

// What can be refused before the store is opened: flags that contradict the --ckpt-dir's record.
// --resume never creates a store: it needs a checkpoint to continue (CheckResumable). A new run
// may not replace checkpoints; a store that holds none is started over (open_nvme).
Status PagedTrainer::check_checkpoint_flags(
    const std::optional<scheduler::CheckpointRecord>& found) {
  const std::string& dir = o_.nvme_dirs[0];
  if (o_.keep_checkpoints < 1) {
    return Status::InvalidArgument(Mention(Option::kKeepCheckpoints) + " " +
                                   std::to_string(o_.keep_checkpoints) + " must be at least 1");
  }
  if (!o_.resume) {
    if (found && !found->checkpoints.empty()) {
      return Status::InvalidArgument(
          Mention(Option::kCkptDir) + " " + o_.ckpt_dir + " already holds checkpoints (steps " +
          found->steps_text() + ") of a run whose store is in " +
          (found->nvme_dirs.empty() ? std::string("its " + Mention(Option::kNvmeDir))
                                    : found->nvme_dirs[0]) +
          "; add " + Mention(Option::kResume) + " to continue it, or give an empty " +
          Mention(Option::kCkptDir));
    }
    return Status::Ok();
  }
  // No record beside an existing store: PlanResume names the store's checkpoints (a mistyped
  // --ckpt-dir), or refuses for want of one.
  if (!found && memory::NvmeStoreExists(dir)) return Status::Ok();
  STRATA_RETURN_IF_ERROR(scheduler::CheckResumable(found, o_.ckpt_dir));
  STRATA_RETURN_IF_ERROR(scheduler::CheckRecordIsOfRun(*found, fingerprint_, o_.ckpt_dir));
  if (!memory::NvmeStoreExists(dir)) {
    return Status::NotFound(Mention(Option::kResume) + ": " + o_.ckpt_dir + " names checkpoint " +
                            found->manifest + " but " + Mention(Option::kNvmeDir) + " " + dir +
                            " holds no page store; give the " + Mention(Option::kNvmeDir) +
                            " of the checkpointed run");
  }
  return Status::Ok();
}

// A new run over an existing store: only one that holds no checkpoint (a run stopped before its
// first, or one without --ckpt-dir) is started over; its pages are rewritten from the start. A
// manifest that this store's own record (`found`) does not list was saved by a run killed before
// it recorded it (Note [Checkpoint retirement]): no checkpoint, collected as a resume would.
Status PagedTrainer::check_restartable(memory::NvmeStore& store,
                                       const std::optional<scheduler::CheckpointRecord>& found) const {
  STRATA_ASSIGN_OR_RETURN(const std::vector<std::string> held,
                          scheduler::CheckpointManifests(store));
  STRATA_ASSIGN_OR_RETURN(const std::string id, store.id());
  const bool unrecorded = found && found->checkpoints.empty() && found->store_id == id;
  if (held.empty() || unrecorded) {
    Logger("train")->info(
        "{} {} holds the store of an earlier run with no checkpoint: starting "
        "it over",
        Mention(Option::kNvmeDir), o_.nvme_dirs[0]);
    return Status::Ok();
  }
  return Status::InvalidArgument(
      Mention(Option::kNvmeDir) + " " + o_.nvme_dirs[0] + " already holds a Strata page store (" +
      memory::NvmeStorePath(o_.nvme_dirs[0]) + ") with the checkpoints of an earlier run (" +
      std::to_string(held.size()) + " manifest(s), the newest " + held.back() + "); add " +
      Mention(Option::kResume) + " with that run's " + Mention(Option::kCkptDir) +
      " to continue it, or give an empty directory");
}

// The fingerprint of this run and rank (Note [Shards], Note [Tensor-parallel slices]: a rank's
// pages are its shards of its tensor-parallel slice, so resuming needs the same cuts).
Status PagedTrainer::make_fingerprint() {
  std::string shard = shards_.any_sharded()
                          ? "dp " + std::to_string(ranks()) + ", blocks " + shards_.describe()
                          : "none";
  if (piped()) {
    shard = "pp " + std::to_string(o_.pp) + " stage " + std::to_string(pipe_.stage) + " blocks " +
            std::to_string(pipe_.blocks.first_block) + "-" +
            std::to_string(pipe_.blocks.last_block) + (shard == "none" ? "" : "; " + shard);
  }
  if (o_.tp > 1) shard = "tp " + std::to_string(o_.tp) + (shard == "none" ? "" : "; " + shard);
  const scheduler::RunLayout layout{.shard = shard,
                                    .dp = ranks(),
                                    .tp = o_.tp,
                                    .pp = o_.pp,
                                    .rank = world_rank(),
                                    .micro_rows = micro_rows()};
  STRATA_ASSIGN_OR_RETURN(fingerprint_, scheduler::MakeRunFingerprint(o_, layout_.config, seq_,
                                                                      pages_->page_bytes(), layout));
  return Status::Ok();
}

// Copy-on-write keeps up to two versions of a page (committed + staged), and each kept
// checkpoint's manifest pins one more version of every parameter and moment page.
uint64_t PagedTrainer::nvme_need_bytes(uint64_t state_bytes) const {
  const uint64_t kept = o_.ckpt_every > 0 ? uint64_t(o_.keep_checkpoints) : 0;
  return 2 * state_bytes + kept * durable_pages().size() * pages_->page_bytes();
}

Status PagedTrainer::check_nvme_room(uint64_t have, uint64_t state_bytes, const char* whose) const {
  const uint64_t need = nvme_need_bytes(state_bytes);
  if (have >= need) return Status::Ok();
  return Status::ResourceExhausted(
      std::string(whose) + " " + FormatBytes(have) + " is below the " + FormatBytes(need) +
      " that the NVMe tier needs (two versions of every page of state" +
      (o_.ckpt_every > 0 ? " plus the parameters and moments of " +
                               std::to_string(o_.keep_checkpoints) + " kept checkpoint(s)"
                         : std::string()) +
      "); raise " + Mention(Option::kNvmeMem) + " or leave it out (a new store), or lower " +
      Mention(Option::kKeepCheckpoints));
}

Status PagedTrainer::open_nvme(uint64_t state_bytes) {
  std::optional<scheduler::CheckpointRecord> found;
  if (!o_.ckpt_dir.empty()) {  // only checkpoints need the fingerprint (it reads --data, --init)
    STRATA_RETURN_IF_ERROR(make_fingerprint());
    STRATA_ASSIGN_OR_RETURN(found, scheduler::ReadCheckpointRecord(o_.ckpt_dir));
  }
  STRATA_RETURN_IF_ERROR(check_checkpoint_flags(found));
  if (o_.nvme_mem > 0) {
    STRATA_RETURN_IF_ERROR(
        check_nvme_room(o_.nvme_mem, state_bytes, Mention(Option::kNvmeMem).c_str()));
  }
  const bool existed = memory::NvmeStoreExists(o_.nvme_dirs[0]);
  memory::NvmeStoreOptions so;
  so.dirs = o_.nvme_dirs;
  so.page_bytes = pages_->page_bytes();
  so.capacity_bytes =
      o_.nvme_mem > 0 ? o_.nvme_mem : std::max(3 * state_bytes, nvme_need_bytes(state_bytes));
  so.faults = o_.nvme_faults;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<memory::NvmeStore> store, memory::NvmeStore::Open(so));
  STRATA_RETURN_IF_ERROR(
      check_nvme_room(store->capacity_bytes(), state_bytes, "the NVMe store's capacity"));
  if (!o_.resume && existed) STRATA_RETURN_IF_ERROR(check_restartable(*store, found));
  if (o_.resume || (existed && !o_.ckpt_dir.empty())) {
    STRATA_RETURN_IF_ERROR(plan_resume(*store, found));
  } else if (!o_.ckpt_dir.empty()) {
    // Before any manifest: a kill before the first checkpoint leaves a record of this store.
    record_ = fresh_record();
    STRATA_ASSIGN_OR_RETURN(record_.store_id, store->id());
    STRATA_RETURN_IF_ERROR(scheduler::WriteCheckpointRecord(o_.ckpt_dir, record_));
  }
  nvme_ = memory::NvmeStore::IntoTier(std::move(store));
  return Status::Ok();
}

// --resume (or a new run over a store with no checkpoint): the checkpoint to continue from, the
// record in force (scheduler::PlanResume).
Status PagedTrainer::plan_resume(memory::NvmeStore& store,
                                 const std::optional<scheduler::CheckpointRecord>& found) {
  scheduler::ResumeRequest req{o_.ckpt_dir, o_.nvme_dirs[0], o_.resume_from, o_.discard_newer,
                               o_.resume};
  if (o_.resume && world_size() > 1) {  // Note [Checkpoints across ranks] in data_parallel.h
    // Without --resume-from the ranks agree on their newest common checkpoint: a rank's newer
    // one (killed while the others saved) was never the job's, and goes.
    req.discard_newer = req.discard_newer || o_.resume_from < 0;
    std::vector<long> steps;
    if (found) {
      for (const scheduler::CheckpointEntry& e : found->checkpoints) steps.push_back(e.step);
    }
    STRATA_ASSIGN_OR_RETURN(req.resume_from,
                            scheduler::AgreeOnResumeStep(*world_, steps, o_.resume_from));
  }
  STRATA_ASSIGN_OR_RETURN(scheduler::ResumePlan plan,
                          scheduler::PlanResume(store, found, fresh_record(), req));
  record_ = std::move(plan.record);
  resume_from_ = plan.from;
  if (resume_from_) start_step_ = resume_from_->step;
  return Status::Ok();
}

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
  (void)next.push_newest({steps_done, name}, uint64_t(o_.keep_checkpoints));
  STRATA_RETURN_IF_ERROR(scheduler::WriteCheckpointRecord(o_.ckpt_dir, next));
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
  Logger("train")->debug("checkpoint {} in {} (kept: steps {})", name, o_.ckpt_dir,
                         record_.steps_text());
  return Status::Ok();
}

}  // namespace strata::internal
