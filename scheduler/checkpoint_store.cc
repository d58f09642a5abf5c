#include "scheduler/checkpoint_store.h"

#include <algorithm>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"

namespace strata::scheduler {
namespace {

std::string RecordPath(const std::string& ckpt_dir) { return ckpt_dir + "/" + kCheckpointFile; }

// What to do when the checkpoint `bad` cannot be used: the older ones, and --resume-from.
std::string OlderAdvice(const CheckpointRecord& record, long bad) {
  std::string older;
  for (const CheckpointEntry& e : record.checkpoints) {
    if (e.step < bad) older += (older.empty() ? "" : ", ") + std::to_string(e.step);
  }
  if (older.empty()) {
    return "no older checkpoint is kept (" + Mention(Option::kKeepCheckpoints) +
           "); start a new run in an empty " + Mention(Option::kCkptDir) + " and " +
           Mention(Option::kNvmeDir);
  }
  const std::string first = older.substr(0, older.find(','));
  return "older checkpoints: step " + older + "; resume from one with " + Mention(Option::kResume) +
         " " + Mention(Option::kResumeFrom) + " " + first + " " + Mention(Option::kDiscardNewer) +
         " (which drops this one)";
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "10, 8": the listed steps after `step`.
std::string NewerSteps(const CheckpointRecord& record, long step) {
  std::string out;
  for (const CheckpointEntry& e : record.checkpoints) {
    if (e.step > step) out += (out.empty() ? "" : ", ") + std::to_string(e.step);
  }
  return out;
}

// --resume-from an older checkpoint drops the newer ones (a resumed run is another future): only
// when asked to.
Status CheckNewerKept(const CheckpointRecord& record, const ResumeRequest& req) {
  if (req.resume_from < 0 || req.discard_newer) return Status::Ok();
  const std::string newer = NewerSteps(record, req.resume_from);
  if (newer.empty() || record.find(req.resume_from) == nullptr) return Status::Ok();
  return AtFault(Option::kDiscardNewer,
                 Status::InvalidArgument(
                     Mention(Option::kResumeFrom) + " " + std::to_string(req.resume_from) + ": " +
                     RecordPath(req.ckpt_dir) + " lists newer checkpoints (steps " + newer +
                     "), which a run resumed from step " + std::to_string(req.resume_from) +
                     " replaces with its own; add " + Mention(Option::kDiscardNewer) +
                     " to drop "
                     "them, or resume from the newest with " +
                     Mention(Option::kResume) + " alone"),
                 {{"step", req.resume_from}});
}

// The checkpoint --resume continues from: the newest, or --resume-from's, whose manifest the
// store holds and whose every page version reads back with its checksum.
Result<CheckpointEntry> ChooseCheckpoint(memory::NvmeTierSnapshots& store,
                                         const CheckpointRecord& record,
                                         const std::vector<std::string>& manifests,
                                         const ResumeRequest& req) {
  const CheckpointEntry* chosen = &record.checkpoints.front();
  if (req.resume_from >= 0) {
    chosen = record.find(req.resume_from);
    if (chosen == nullptr) {
      return AtFault(Option::kResumeFrom,
                     Status::InvalidArgument(
                         Mention(Option::kResumeFrom) + " " + std::to_string(req.resume_from) +
                         ": " + RecordPath(req.ckpt_dir) + " lists checkpoints of steps " +
                         record.steps_text() + "; pick one of them"),
                     {{"got", req.resume_from}});
    }
  }
  const std::string where = Mention(Option::kResume) + ": checkpoint step " +
                            std::to_string(chosen->step) + " (" + chosen->manifest +
                            ", listed in " + RecordPath(req.ckpt_dir) + ")";
  if (std::find(manifests.begin(), manifests.end(), chosen->manifest) == manifests.end()) {
    return AtFault(
        Option::kResumeFrom,
        Status::NotFound(where + " is missing from the NVMe store in " + Mention(Option::kNvmeDir) +
                         " " + req.nvme_dir + "; " + OlderAdvice(record, chosen->step)),
        {{"step", chosen->step}});
  }
  Status verified = store.verify_snapshot(chosen->manifest);
  if (!verified.ok() && verified.code() != StatusCode::kCorruption) {
    // A read that failed says nothing about the checkpoint: the disk may be fine next time, and
    // advising an older checkpoint (or a new run) would throw a good one away.
    return verified.with_context(where +
                                 " could not be read back to verify it (the checkpoint is "
                                 "not known to be damaged; " +
                                 Mention(Option::kResume) + " again once the disk answers)");
  }
  if (!verified.ok()) {
    return AtFault(Option::kResumeFrom,
                   Status::Corruption(where + " is damaged: " + verified.message() + "; " +
                                      OlderAdvice(record, chosen->step)),
                   {{"step", chosen->step}});
  }
  return *chosen;
}

}  // namespace

Status CheckRecordIsOfRun(const CheckpointRecord& record, const RunFingerprint& now,
                          const std::string& ckpt_dir) {
  if (record.format >= 2) return CheckSameRun(now, record.fingerprint);
  if (record.run == now.summary()) return Status::Ok();
  return AtFault(
      Option::kCkptDir,
      Status::InvalidArgument(Mention(Option::kResume) + ": the checkpoint in " + ckpt_dir +
                              " is of another run (" + record.run + "), not " + now.summary() +
                              "; use the same flags or another " + Mention(Option::kCkptDir)));
}

Status CheckResumable(const std::optional<CheckpointRecord>& found, const std::string& ckpt_dir) {
  if (!found) {
    return AtFault(
        Option::kResume,
        Status::InvalidArgument(Mention(Option::kResume) + ": " + Mention(Option::kCkptDir) + " " +
                                ckpt_dir + " holds no checkpoint record (" + kCheckpointFile +
                                "): there is nothing to resume; start a new run without " +
                                Mention(Option::kResume)));
  }
  if (!found->checkpoints.empty()) return Status::Ok();
  return AtFault(Option::kResume,
                 Status::InvalidArgument(Mention(Option::kResume) + ": " +
                                         Mention(Option::kCkptDir) + " " + ckpt_dir +
                                         " lists no checkpoint yet: the run that wrote it "
                                         "stopped before its first (" +
                                         Mention(Option::kCkptEvery) +
                                         "); start it again without " + Mention(Option::kResume) +
                                         " (a store that "
                                         "holds no checkpoint is started over)"));
}

Status CheckStoreId(const CheckpointRecord& record, const std::string& store_id,
                    const std::string& ckpt_dir, const std::string& nvme_dir) {
  if (record.store_id.empty() || record.store_id == store_id) return Status::Ok();
  return AtFault(
      Option::kNvmeDir,
      Status::InvalidArgument(
          Mention(Option::kResume) + ": " + RecordPath(ckpt_dir) + " belongs to NVMe store " +
          record.store_id + " but " + Mention(Option::kNvmeDir) + " " + nvme_dir + " holds store " +
          store_id + "; pass the " + Mention(Option::kCkptDir) + " and " +
          Mention(Option::kNvmeDir) +
          " of one run (the record names its dirs: " + JoinNames(record.nvme_dirs) + ")"));
}

Result<std::vector<std::string>> CheckpointManifests(memory::NvmeTierSnapshots& store) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, store.snapshot_names());
  std::erase_if(names, [](const std::string& n) { return !IsCheckpointManifest(n); });
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::vector<std::string>> CollectUnlisted(memory::NvmeTierSnapshots& store,
                                                 const CheckpointRecord& record) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, CheckpointManifests(store));
  std::vector<std::string> deleted;
  for (const std::string& n : names) {
    const bool listed = std::any_of(record.checkpoints.begin(), record.checkpoints.end(),
                                    [&](const CheckpointEntry& e) { return e.manifest == n; });
    if (listed) continue;
    STRATA_RETURN_IF_ERROR(store.delete_snapshot(n));
    deleted.push_back(n);
  }
  if (!deleted.empty()) {
    Logger("train")->info("deleted {} manifest(s) no checkpoint record lists: {}", deleted.size(),
                          JoinNames(deleted));
  }
  return deleted;
}

Result<ResumePlan> PlanResume(memory::NvmeTierSnapshots& store,
                              const std::optional<CheckpointRecord>& found_record,
                              CheckpointRecord fresh, const ResumeRequest& req) {
  STRATA_ASSIGN_OR_RETURN(fresh.store_id, store.id());
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> manifests, CheckpointManifests(store));
  // A record that lists no checkpoint protects nothing: when it names another store (that
  // store was wiped, say) it is as good as none, and this run's replaces it.
  std::optional<CheckpointRecord> found = found_record;
  if (found && found->checkpoints.empty() && found->store_id != fresh.store_id) found.reset();
  if (!found && !manifests.empty()) {
    return AtFault(Option::kCkptDir,
                   Status::InvalidArgument(
                       Mention(Option::kResume) + ": " + Mention(Option::kCkptDir) + " " +
                       req.ckpt_dir + " holds no checkpoint record of this store, but " +
                       Mention(Option::kNvmeDir) + " " + req.nvme_dir + " holds checkpoints " +
                       JoinNames(manifests) + " of a run; pass that run's " +
                       Mention(Option::kCkptDir) + " (starting over here would overwrite them)"));
  }
  if (found) {
    STRATA_RETURN_IF_ERROR(CheckStoreId(*found, fresh.store_id, req.ckpt_dir, req.nvme_dir));
  }
  if (req.must_resume) STRATA_RETURN_IF_ERROR(CheckResumable(found, req.ckpt_dir));
  if ((!found || found->checkpoints.empty()) && req.resume_from >= 0) {
    return AtFault(Option::kResumeFrom,
                   Status::InvalidArgument(Mention(Option::kResumeFrom) + " " +
                                           std::to_string(req.resume_from) + ": " + req.ckpt_dir +
                                           " lists no checkpoint yet"),
                   {{"got", req.resume_from}});
  }
  ResumePlan plan;
  std::vector<CheckpointEntry> kept;
  if (found && !found->checkpoints.empty()) {
    STRATA_RETURN_IF_ERROR(CheckNewerKept(*found, req));
    STRATA_ASSIGN_OR_RETURN(CheckpointEntry from, ChooseCheckpoint(store, *found, manifests, req));
    for (const CheckpointEntry& e : found->checkpoints) {
      if (e.step <= from.step) kept.push_back(e);  // a later one is another future now
    }
    if (kept.size() < found->checkpoints.size()) {
      Logger("train")->info("resuming from step {} drops the newer checkpoints of steps {}",
                            from.step, NewerSteps(*found, from.step));
    }
    plan.from = from;
  }
  fresh.set_checkpoints(std::move(kept));
  // Durable before any manifest it drops is deleted (Note [Checkpoint retirement]).
  STRATA_RETURN_IF_ERROR(WriteCheckpointRecord(req.ckpt_dir, fresh));
  STRATA_RETURN_IF_ERROR(CollectUnlisted(store, fresh).status());
  if (plan.from) STRATA_RETURN_IF_ERROR(store.restore_snapshot(plan.from->manifest));
  plan.record = std::move(fresh);
  return plan;
}

Result<std::unique_ptr<memory::NvmeTierSnapshots>> OpenRecordStore(const CheckpointRecord& record,
                                                                   const std::string& ckpt_dir,
                                                                   std::vector<std::string> dirs) {
  if (dirs.empty()) dirs = record.nvme_dirs;
  if (dirs.empty()) {
    return AtFault(Option::kNvmeDir,
                   Status::InvalidArgument(RecordPath(ckpt_dir) +
                                           " names no NVMe directories (an older record); pass " +
                                           Mention(Option::kNvmeDir)));
  }
  if (!memory::PageStoreExists(dirs[0])) {
    return AtFault(
        Option::kNvmeDir,
        Status::NotFound("no NVMe page store in " + dirs[0] + " (named by " + RecordPath(ckpt_dir) +
                         "); pass " + Mention(Option::kNvmeDir) + " where it is now"));
  }
  memory::NvmeTierOptions so;
  so.dirs = dirs;
  STRATA_ASSIGN_OR_RETURN(so.page_bytes, memory::PageStorePageBytes(dirs[0]));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<memory::NvmeTierSnapshots> store,
                          memory::NvmeTierSnapshots::Open(so));
  STRATA_ASSIGN_OR_RETURN(std::string id, store->id());
  if (!record.store_id.empty() && record.store_id != id) {
    return AtFault(
        Option::kNvmeDir,
        Status::InvalidArgument(RecordPath(ckpt_dir) + " belongs to NVMe store " + record.store_id +
                                " but " + dirs[0] + " holds store " + id + "; pass the " +
                                Mention(Option::kNvmeDir) + " of the run that wrote the record"));
  }
  return store;
}

Result<std::vector<CheckpointListing>> ListCheckpoints(memory::NvmeTierSnapshots& store,
                                                       const CheckpointRecord& record) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> manifests, CheckpointManifests(store));
  std::vector<CheckpointListing> out;
  for (const CheckpointEntry& e : record.checkpoints) {
    CheckpointListing l;
    l.entry = e;
    l.present = std::find(manifests.begin(), manifests.end(), e.manifest) != manifests.end();
    if (l.present) {
      STRATA_ASSIGN_OR_RETURN(l.size, store.snapshot_size(e.manifest));
    }
    out.push_back(std::move(l));
  }
  return out;
}

Result<PruneResult> PruneCheckpoints(memory::NvmeTierSnapshots& store, CheckpointRecord& record,
                                     const std::string& ckpt_dir, int keep) {
  if (keep < 1) {
    return AtFault(Option::kKeep,
                   Status::InvalidArgument(Mention(Option::kKeep) + " " + std::to_string(keep) +
                                           " must be at least 1 (the newest checkpoint stays)"),
                   {{"got", keep}, {"min", 1}});
  }
  PruneResult result;
  const uint64_t used_before = store.used_bytes();
  std::vector<CheckpointEntry> kept = record.checkpoints;
  if (kept.size() > size_t(keep)) {
    result.dropped.assign(kept.begin() + keep, kept.end());
    kept.resize(size_t(keep));
    record.set_checkpoints(std::move(kept));
    STRATA_RETURN_IF_ERROR(WriteCheckpointRecord(ckpt_dir, record));
  }
  STRATA_RETURN_IF_ERROR(CollectUnlisted(store, record).status());
  const uint64_t used_after = store.used_bytes();
  result.freed_bytes = used_before > used_after ? used_before - used_after : 0;
  return result;
}

}  // namespace strata::scheduler
