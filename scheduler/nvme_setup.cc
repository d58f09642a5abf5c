// Opening the NVMe tier, moved whole from the paged trainer's setup: the checks and the words
// are the ones it had.
#include "scheduler/nvme_setup.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "memory/nvme_capacity.h"
#include "memory/open_nvme_tier.h"
#include "parallel/comm.h"
#include "scheduler/checkpoint_store.h"
#include "scheduler/data_parallel.h"

namespace strata::scheduler {
namespace {

using memory::NvmeSizing;
using memory::NvmeSizingInput;
using memory::SizeNvmeTier;

// One SetUpNvmeTier call: its input, and what it builds up.
class NvmeOpener {
 public:
  explicit NvmeOpener(const NvmeTierInput& in) : in_(in) { keep_ = in.checkpoints->keep; }
  Status open();
  OpenedNvme take() {
    out_.keep_checkpoints = keep_;
    return std::move(out_);
  }

 private:
  CheckpointRecord fresh_record() const;
  Status check_checkpoint_flags(const std::optional<CheckpointRecord>& found);
  Status check_restartable(memory::NvmeTierSnapshots& store,
                           const std::optional<CheckpointRecord>& found) const;
  NvmeSizing size_nvme(uint64_t asked, uint64_t room) const;
  std::string nvme_minimum_text(const NvmeSizing& s) const;
  Status check_nvme_room(const NvmeSizing& s, uint64_t have, const std::string& whose) const;
  Result<NvmeSizing> size_new_nvme() const;
  void keep_checkpoints_that_fit(const NvmeSizing& s);
  Status plan_resume(memory::NvmeTierSnapshots& store,
                     const std::optional<CheckpointRecord>& found);

  const NvmeTierInput& in_;
  int keep_ = 0;  // --keep-checkpoints, lowered to what fits
  OpenedNvme out_;
};

// This run's record before its first checkpoint.
CheckpointRecord NvmeOpener::fresh_record() const {
  CheckpointRecord r;
  r.run = in_.fingerprint->summary();
  r.fingerprint = in_.fingerprint->to_map();
  for (const std::string& d : in_.budgets->nvme_dirs) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(d, ec);
    r.nvme_dirs.push_back(ec ? d : abs.lexically_normal().string());
  }
  return r;
}

// What can be refused before the store is opened: flags that contradict the --ckpt-dir's record.
// --resume never creates a store: it needs a checkpoint to continue (CheckResumable). A new run
// may not replace checkpoints; a store that holds none is started over (open_nvme).
Status NvmeOpener::check_checkpoint_flags(const std::optional<CheckpointRecord>& found) {
  const std::string& dir = in_.budgets->nvme_dirs[0];
  if (keep_ < 1) {
    return AtFault(Option::kKeepCheckpoints,
                   Status::InvalidArgument(Mention(Option::kKeepCheckpoints) + " " +
                                           std::to_string(keep_) + " must be at least 1"),
                   {{"got", keep_}, {"min", 1}});
  }
  if (!in_.checkpoints->resume) {
    if (found && !found->checkpoints.empty()) {
      return AtFault(Option::kCkptDir,
                     Status::InvalidArgument(
                         Mention(Option::kCkptDir) + " " + in_.checkpoints->dir +
                         " already holds checkpoints (steps " + found->steps_text() +
                         ") of a run whose store is in " +
                         (found->nvme_dirs.empty() ? std::string("its " + Mention(Option::kNvmeDir))
                                                   : found->nvme_dirs[0]) +
                         "; add " + Mention(Option::kResume) +
                         " to continue it, or give an empty " + Mention(Option::kCkptDir)));
    }
    return Status::Ok();
  }
  // No record beside an existing store: PlanResume names the store's checkpoints (a mistyped
  // --ckpt-dir), or refuses for want of one.
  if (!found && memory::PageStoreExists(dir)) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CheckResumable(found, in_.checkpoints->dir));
  STRATA_RETURN_IF_ERROR(CheckRecordIsOfRun(*found, *in_.fingerprint, in_.checkpoints->dir));
  if (!memory::PageStoreExists(dir)) {
    return AtFault(
        Option::kNvmeDir,
        Status::NotFound(Mention(Option::kResume) + ": " + in_.checkpoints->dir +
                         " names checkpoint " + found->manifest + " but " +
                         Mention(Option::kNvmeDir) + " " + dir + " holds no page store; give the " +
                         Mention(Option::kNvmeDir) + " of the checkpointed run"));
  }
  return Status::Ok();
}

// A new run over an existing store: only one that holds no checkpoint (a run stopped before its
// first, or one without --ckpt-dir) is started over; its pages are rewritten from the start. A
// manifest that this store's own record (`found`) does not list was saved by a run killed before
// it recorded it (Note [Checkpoint retirement]): no checkpoint, collected as a resume would.
Status NvmeOpener::check_restartable(memory::NvmeTierSnapshots& store,
                                     const std::optional<CheckpointRecord>& found) const {
  STRATA_ASSIGN_OR_RETURN(const std::vector<std::string> held, CheckpointManifests(store));
  STRATA_ASSIGN_OR_RETURN(const std::string id, store.id());
  const bool unrecorded = found && found->checkpoints.empty() && found->store_id == id;
  if (held.empty() || unrecorded) {
    Logger("train")->info(
        "{} {} holds the store of an earlier run with no checkpoint: starting "
        "it over",
        Mention(Option::kNvmeDir), in_.budgets->nvme_dirs[0]);
    return Status::Ok();
  }
  return AtFault(Option::kNvmeDir,
                 Status::InvalidArgument(
                     Mention(Option::kNvmeDir) + " " + in_.budgets->nvme_dirs[0] +
                     " already holds a Strata page store (" +
                     memory::PageStoreCatalogPath(in_.budgets->nvme_dirs[0]) +
                     ") with the checkpoints of an earlier run (" + std::to_string(held.size()) +
                     " manifest(s), the newest " + held.back() + "); add " +
                     Mention(Option::kResume) + " with that run's " + Mention(Option::kCkptDir) +
                     " to continue it, or give an empty directory"),
                 {{"manifests", FaultNumber(held.size())}});
}

// Note [NVMe capacity] in memory/nvme_capacity.h. `room` bounds a new store only.
NvmeSizing NvmeOpener::size_nvme(uint64_t asked, uint64_t room) const {
  NvmeSizingInput in;
  in.page_bytes = in_.page_bytes;
  in.state_pages = in_.state_pages;
  in.durable_pages = in_.durable_pages;
  in.host_pages = in_.host_bytes / in.page_bytes;
  in.keep_checkpoints = in_.checkpoints->every > 0 ? uint64_t(keep_) : 0;
  in.asked_bytes = asked;
  in.room_bytes = room;
  return SizeNvmeTier(in);
}

// What the minimum holds, in words (Note [NVMe capacity]).
std::string NvmeOpener::nvme_minimum_text(const NvmeSizing& s) const {
  const uint64_t staged = std::min(in_.host_bytes / in_.page_bytes, in_.state_pages);
  return FormatBytes(s.min_bytes) + " that the NVMe tier needs (one version of each of the " +
         std::to_string(in_.state_pages) + " pages of state, room for the " +
         std::to_string(staged) + " versions the host pool can stage" +
         (in_.checkpoints->every > 0
              ? ", a second version of every page for one kept checkpoint, and one of the " +
                    std::to_string(in_.state_pages - in_.durable_pages) +
                    " gradient pages while the next is saved"
              : std::string()) +
         ")";
}

Status NvmeOpener::check_nvme_room(const NvmeSizing& s, uint64_t have,
                                   const std::string& whose) const {
  if (!s.refused()) return Status::Ok();
  const bool asked = whose == Mention(Option::kNvmeMem);
  return ShortOfBytes(
      asked ? Option::kNvmeMem : Option::kNvmeDir,
      Status::ResourceExhausted(
          whose + " " + FormatBytes(have) + " is below the " + nvme_minimum_text(s) +
          (asked
               ? "; raise " + Mention(Option::kNvmeMem) + " or leave it out (a new store)"
               : "; give " + Mention(Option::kNvmeMem) + " " + FormatBytes(s.min_bytes) +
                     " or more with " + Mention(Option::kResume) +
                     " to grow the store, or start over in an empty " + Mention(Option::kNvmeDir))),
      have, s.min_bytes);
}

// A new store without --nvme-mem: the default when the disks hold it, else the minimum and the
// checkpoints that fit, else a refusal in the page store's ENOSPC wording.
Result<NvmeSizing> NvmeOpener::size_new_nvme() const {
  const NvmeSizing want = size_nvme(0, UINT64_MAX);
  const uint64_t page = in_.page_bytes;
  const Result<memory::NvmeDiskRoom> measured =
      memory::RoomForNewPageStore(in_.budgets->nvme_dirs, page, want.default_bytes / page);
  // A missing or unreadable directory: the store's open words it (CheckWritableDir).
  if (!measured.ok()) return want;
  const memory::NvmeDiskRoom& room = *measured;
  const NvmeSizing s = size_nvme(0, room.slot_bytes);
  if (!s.refused()) return s;
  return AtFault(
      Option::kNvmeDir,
      Status::ResourceExhausted(
          Mention(Option::kNvmeDir) + " " + room.dir +
          ": No space left on device (ENOSPC): the store's slot files at "
          "the " +
          nvme_minimum_text(s) + " and " + FormatBytes(room.headroom_bytes) +
          " of headroom for its catalog need " + FormatBytes(s.min_bytes + room.headroom_bytes) +
          " there but only " + FormatBytes(room.free_bytes) + " are free; free space, or give " +
          Mention(Option::kNvmeDir) + " directories on other disks"),
      {{"need_bytes", FaultNumber(s.min_bytes + room.headroom_bytes)},
       {"free_bytes", FaultNumber(room.free_bytes)}});
}

// Fewer kept checkpoints than --keep-checkpoints fit: one line, and the run keeps that many.
void NvmeOpener::keep_checkpoints_that_fit(const NvmeSizing& s) {
  if (in_.checkpoints->every <= 0 || s.checkpoints_fit >= uint64_t(keep_)) return;
  Logger("train")->warn(
      "the NVMe tier takes {} on {} (at least {}, {} with every kept checkpoint): room for {} "
      "of the {} checkpoints of {}, so the run keeps the {} newest; to keep them all, free "
      "space or give {} {} (on {} it grows the store)",
      FormatBytes(s.capacity_bytes), in_.budgets->nvme_dirs[0], FormatBytes(s.min_bytes),
      FormatBytes(s.default_bytes), s.checkpoints_fit, keep_, Mention(Option::kKeepCheckpoints),
      s.checkpoints_fit, Mention(Option::kNvmeMem), FormatBytes(s.default_bytes),
      Mention(Option::kResume));
  keep_ = int(s.checkpoints_fit);
}

Status NvmeOpener::open() {
  std::optional<CheckpointRecord> found;
  if (!in_.checkpoints->dir.empty()) {
    STRATA_ASSIGN_OR_RETURN(found, ReadCheckpointRecord(in_.checkpoints->dir));
  }
  STRATA_RETURN_IF_ERROR(check_checkpoint_flags(found));
  NvmeSizing sizing = size_nvme(in_.budgets->nvme_mem, UINT64_MAX);
  if (in_.budgets->nvme_mem > 0) {
    STRATA_RETURN_IF_ERROR(
        check_nvme_room(sizing, in_.budgets->nvme_mem, Mention(Option::kNvmeMem)));
  }
  const bool existed = memory::PageStoreExists(in_.budgets->nvme_dirs[0]);
  memory::NvmeTierOptions so;
  so.dirs = in_.budgets->nvme_dirs;
  so.page_bytes = in_.page_bytes;
  if (in_.budgets->nvme_mem == 0 && !existed) {
    STRATA_ASSIGN_OR_RETURN(sizing, size_new_nvme());
  }
  so.capacity_bytes = sizing.capacity_bytes > 0 ? sizing.capacity_bytes : sizing.default_bytes;
  so.faults = in_.faults;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<memory::NvmeTierSnapshots> store,
                          memory::NvmeTierSnapshots::Open(so));
  // A store that exists keeps its own capacity (or grows to --nvme-mem).
  sizing = size_nvme(store->capacity_bytes(), UINT64_MAX);
  STRATA_RETURN_IF_ERROR(
      check_nvme_room(sizing, store->capacity_bytes(), "the NVMe store's capacity"));
  keep_checkpoints_that_fit(sizing);
  if (!in_.checkpoints->resume && existed) STRATA_RETURN_IF_ERROR(check_restartable(*store, found));
  if (in_.checkpoints->resume || (existed && !in_.checkpoints->dir.empty())) {
    STRATA_RETURN_IF_ERROR(plan_resume(*store, found));
  } else if (!in_.checkpoints->dir.empty()) {
    // Before any manifest: a kill before the first checkpoint leaves a record of this store.
    out_.record = fresh_record();
    STRATA_ASSIGN_OR_RETURN(out_.record.store_id, store->id());
    STRATA_RETURN_IF_ERROR(WriteCheckpointRecord(in_.checkpoints->dir, out_.record));
  }
  out_.tier = memory::NvmeTierSnapshots::IntoTier(std::move(store));
  return Status::Ok();
}

// --resume (or a new run over a store with no checkpoint): the checkpoint to continue from, the
// record in force (PlanResume).
Status NvmeOpener::plan_resume(memory::NvmeTierSnapshots& store,
                               const std::optional<CheckpointRecord>& found) {
  ResumeRequest req{in_.checkpoints->dir, in_.budgets->nvme_dirs[0], in_.checkpoints->resume_from,
                    in_.checkpoints->discard_newer, in_.checkpoints->resume};
  // Note [Checkpoints across ranks] in data_parallel.h.
  if (in_.checkpoints->resume && in_.world != nullptr && in_.world->size() > 1) {
    // Without --resume-from the ranks agree on their newest common checkpoint: a rank's newer
    // one (killed while the others saved) was never the job's, and goes.
    req.discard_newer = req.discard_newer || in_.checkpoints->resume_from < 0;
    std::vector<long> steps;
    if (found) {
      for (const CheckpointEntry& e : found->checkpoints) steps.push_back(e.step);
    }
    STRATA_ASSIGN_OR_RETURN(req.resume_from,
                            AgreeOnResumeStep(*in_.world, steps, in_.checkpoints->resume_from));
  }
  STRATA_ASSIGN_OR_RETURN(ResumePlan plan, PlanResume(store, found, fresh_record(), req));
  out_.record = std::move(plan.record);
  out_.resume_from = plan.from;
  return Status::Ok();
}

}  // namespace

Result<OpenedNvme> SetUpNvmeTier(const NvmeTierInput& in) {
  NvmeOpener opener(in);
  STRATA_RETURN_IF_ERROR(opener.open());
  return opener.take();
}

}  // namespace strata::scheduler
