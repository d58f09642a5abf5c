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
      if (r == Role::kMaster && !o_.optimizer.delayed_update) continue;
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
  for (const std::string& d : o_.budgets.nvme_dirs) {
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
  const std::string& dir = o_.budgets.nvme_dirs[0];
  if (o_.checkpoints.keep < 1) {
    return Status::InvalidArgument(Mention(Option::kKeepCheckpoints) + " " +
                                   std::to_string(o_.checkpoints.keep) + " must be at least 1");
  }
  if (!o_.checkpoints.resume) {
    if (found && !found->checkpoints.empty()) {
      return Status::InvalidArgument(
          Mention(Option::kCkptDir) + " " + o_.checkpoints.dir +
          " already holds checkpoints (steps " + found->steps_text() +
          ") of a run whose store is in " +
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
  STRATA_RETURN_IF_ERROR(scheduler::CheckResumable(found, o_.checkpoints.dir));
  STRATA_RETURN_IF_ERROR(scheduler::CheckRecordIsOfRun(*found, fingerprint_, o_.checkpoints.dir));
  if (!memory::NvmeStoreExists(dir)) {
    return Status::NotFound(
        Mention(Option::kResume) + ": " + o_.checkpoints.dir + " names checkpoint " +
        found->manifest + " but " + Mention(Option::kNvmeDir) + " " + dir +
        " holds no page store; give the " + Mention(Option::kNvmeDir) + " of the checkpointed run");
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
        Mention(Option::kNvmeDir), o_.budgets.nvme_dirs[0]);
    return Status::Ok();
  }
  return Status::InvalidArgument(
      Mention(Option::kNvmeDir) + " " + o_.budgets.nvme_dirs[0] +
      " already holds a Strata page store (" + memory::NvmeStorePath(o_.budgets.nvme_dirs[0]) +
      ") with the checkpoints of an earlier run (" + std::to_string(held.size()) +
      " manifest(s), the newest " + held.back() + "); add " + Mention(Option::kResume) +
      " with that run's " + Mention(Option::kCkptDir) +
      " to continue it, or give an empty directory");
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

// Note [NVMe capacity] in scheduler/nvme_capacity.h. `room` bounds a new store only.
scheduler::NvmeSizing PagedTrainer::size_nvme(uint64_t asked, uint64_t room) const {
  scheduler::NvmeSizingInput in;
  in.page_bytes = pages_->page_bytes();
  in.state_pages = pages_->num_pages();
  in.durable_pages = durable_pages().size();
  in.host_pages = plan_.host_bytes / in.page_bytes;
  in.keep_checkpoints = o_.checkpoints.every > 0 ? uint64_t(o_.checkpoints.keep) : 0;
  in.asked_bytes = asked;
  in.room_bytes = room;
  return scheduler::SizeNvmeTier(in);
}

// What the minimum holds, in words (Note [NVMe capacity]).
std::string PagedTrainer::nvme_minimum_text(const scheduler::NvmeSizing& s) const {
  const uint64_t staged = std::min(plan_.host_bytes / pages_->page_bytes(), pages_->num_pages());
  return FormatBytes(s.min_bytes) + " that the NVMe tier needs (one version of each of the " +
         std::to_string(pages_->num_pages()) + " pages of state, room for the " +
         std::to_string(staged) + " versions the host pool can stage" +
         (o_.checkpoints.every > 0
              ? ", a second version of every page for one kept checkpoint, and one of the " +
                    std::to_string(pages_->num_pages() - durable_pages().size()) +
                    " gradient pages while the next is saved"
              : std::string()) +
         ")";
}

Status PagedTrainer::check_nvme_room(const scheduler::NvmeSizing& s, uint64_t have,
                                     const std::string& whose) const {
  if (!s.refused()) return Status::Ok();
  const bool asked = whose == Mention(Option::kNvmeMem);
  return Status::ResourceExhausted(
      whose + " " + FormatBytes(have) + " is below the " + nvme_minimum_text(s) +
      (asked ? "; raise " + Mention(Option::kNvmeMem) + " or leave it out (a new store)"
             : "; give " + Mention(Option::kNvmeMem) + " " + FormatBytes(s.min_bytes) +
                   " or more with " + Mention(Option::kResume) +
                   " to grow the store, or start over in an empty " +
                   Mention(Option::kNvmeDir)));
}

// A new store without --nvme-mem: the default when the disks hold it, else the minimum and the
// checkpoints that fit, else a refusal in the page store's ENOSPC wording.
Result<scheduler::NvmeSizing> PagedTrainer::size_new_nvme() const {
  const scheduler::NvmeSizing want = size_nvme(0, UINT64_MAX);
  const uint64_t page = pages_->page_bytes();
  const Result<memory::NvmeDiskRoom> measured =
      memory::NvmeRoomForNewStore(o_.budgets.nvme_dirs, page, want.default_bytes / page);
  // A missing or unreadable directory: the store's open words it (CheckWritableDir).
  if (!measured.ok()) return want;
  const memory::NvmeDiskRoom& room = *measured;
  const scheduler::NvmeSizing s = size_nvme(0, room.slot_bytes);
  if (!s.refused()) return s;
  return Status::ResourceExhausted(
      Mention(Option::kNvmeDir) + " " + room.dir + ": No space left on device (ENOSPC): the store's slot files at "
      "the " + nvme_minimum_text(s) + " and " + FormatBytes(room.headroom_bytes) +
      " of headroom for its catalog need " + FormatBytes(s.min_bytes + room.headroom_bytes) +
      " there but only " + FormatBytes(room.free_bytes) +
      " are free; free space, or give " + Mention(Option::kNvmeDir) +
      " directories on other disks");
}

// Fewer kept checkpoints than --keep-checkpoints fit: one line, and the run keeps that many.
void PagedTrainer::keep_checkpoints_that_fit(const scheduler::NvmeSizing& s) {
  if (o_.checkpoints.every <= 0 || s.checkpoints_fit >= uint64_t(o_.checkpoints.keep)) return;
  Logger("train")->warn(
      "the NVMe tier takes {} on {} (at least {}, {} with every kept checkpoint): room for {} "
      "of the {} checkpoints of {}, so the run keeps the {} newest; to keep them all, free "
      "space or give {} {} (on {} it grows the store)",
      FormatBytes(s.capacity_bytes), o_.budgets.nvme_dirs[0], FormatBytes(s.min_bytes),
      FormatBytes(s.default_bytes), s.checkpoints_fit, o_.checkpoints.keep,
      Mention(Option::kKeepCheckpoints), s.checkpoints_fit, Mention(Option::kNvmeMem),
      FormatBytes(s.default_bytes), Mention(Option::kResume));
  o_.checkpoints.keep = int(s.checkpoints_fit);
}

Status PagedTrainer::open_nvme() {
  std::optional<scheduler::CheckpointRecord> found;
  // Only checkpoints need the fingerprint (it reads --data, --init).
  if (!o_.checkpoints.dir.empty()) {
    STRATA_RETURN_IF_ERROR(make_fingerprint());
    STRATA_ASSIGN_OR_RETURN(found, scheduler::ReadCheckpointRecord(o_.checkpoints.dir));
  }
  STRATA_RETURN_IF_ERROR(check_checkpoint_flags(found));
  scheduler::NvmeSizing sizing = size_nvme(o_.budgets.nvme_mem, UINT64_MAX);
  if (o_.budgets.nvme_mem > 0) {
    STRATA_RETURN_IF_ERROR(check_nvme_room(sizing, o_.budgets.nvme_mem, Mention(Option::kNvmeMem)));
  }
  const bool existed = memory::NvmeStoreExists(o_.budgets.nvme_dirs[0]);
  memory::NvmeStoreOptions so;
  so.dirs = o_.budgets.nvme_dirs;
  so.page_bytes = pages_->page_bytes();
  if (o_.budgets.nvme_mem == 0 && !existed) {
    STRATA_ASSIGN_OR_RETURN(sizing, size_new_nvme());
  }
  so.capacity_bytes = sizing.capacity_bytes > 0 ? sizing.capacity_bytes : sizing.default_bytes;
  so.faults = o_.nvme_faults;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<memory::NvmeStore> store, memory::NvmeStore::Open(so));
  // A store that exists keeps its own capacity (or grows to --nvme-mem).
  sizing = size_nvme(store->capacity_bytes(), UINT64_MAX);
  STRATA_RETURN_IF_ERROR(
      check_nvme_room(sizing, store->capacity_bytes(), "the NVMe store's capacity"));
  keep_checkpoints_that_fit(sizing);
  if (!o_.checkpoints.resume && existed) STRATA_RETURN_IF_ERROR(check_restartable(*store, found));
  if (o_.checkpoints.resume || (existed && !o_.checkpoints.dir.empty())) {
    STRATA_RETURN_IF_ERROR(plan_resume(*store, found));
  } else if (!o_.checkpoints.dir.empty()) {
    // Before any manifest: a kill before the first checkpoint leaves a record of this store.
    record_ = fresh_record();
    STRATA_ASSIGN_OR_RETURN(record_.store_id, store->id());
    STRATA_RETURN_IF_ERROR(scheduler::WriteCheckpointRecord(o_.checkpoints.dir, record_));
  }
  nvme_ = memory::NvmeStore::IntoTier(std::move(store));
  return Status::Ok();
}

// --resume (or a new run over a store with no checkpoint): the checkpoint to continue from, the
// record in force (scheduler::PlanResume).
Status PagedTrainer::plan_resume(memory::NvmeStore& store,
                                 const std::optional<scheduler::CheckpointRecord>& found) {
  scheduler::ResumeRequest req{o_.checkpoints.dir, o_.budgets.nvme_dirs[0],
                               o_.checkpoints.resume_from, o_.checkpoints.discard_newer,
                               o_.checkpoints.resume};
  if (o_.checkpoints.resume &&
      world_size() > 1) {  // Note [Checkpoints across ranks] in data_parallel.h
    // Without --resume-from the ranks agree on their newest common checkpoint: a rank's newer
    // one (killed while the others saved) was never the job's, and goes.
    req.discard_newer = req.discard_newer || o_.checkpoints.resume_from < 0;
    std::vector<long> steps;
    if (found) {
      for (const scheduler::CheckpointEntry& e : found->checkpoints) steps.push_back(e.step);
    }
    STRATA_ASSIGN_OR_RETURN(
        req.resume_from, scheduler::AgreeOnResumeStep(*world_, steps, o_.checkpoints.resume_from));
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
