#include "scheduler/checkpoint_writer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/util/log.h"

namespace strata::scheduler {

using memory::Role;

std::vector<memory::PageId> DurablePages(const StatePages& pages, int num_blocks,
                                         bool delayed_update) {
  std::vector<memory::PageId> out;
  for (int b = 0; b < num_blocks; ++b) {
    for (Role r : {Role::kParam, Role::kAdamM, Role::kAdamV, Role::kMaster}) {
      if (r == Role::kMaster && !delayed_update) continue;
      for (memory::PageId p : pages.pages(b, r)) out.push_back(p);
    }
  }
  return out;
}

CheckpointWriter::CheckpointWriter(CheckpointWriterOptions options, CheckpointRecord record)
    : o_(std::move(options)), record_(std::move(record)) {}

// The next step's updates queue behind the write, so the manifest holds exactly the state after
// `steps_done` while the driver goes on with the next step's compute.
Status CheckpointWriter::checkpoint(long steps_done) {
  if (pending_.valid()) STRATA_RETURN_IF_ERROR(pending_.get());
  if (o_.world != nullptr && o_.world->size() > 1) {
    STRATA_RETURN_IF_ERROR(o_.world->barrier().with_context("checkpoint barrier"));
  }
  pending_ = o_.engine->enqueue_after_updates([this, steps_done] {
    return write(steps_done).with_context("checkpoint after step " + std::to_string(steps_done));
  });
  return Status::Ok();
}

Status CheckpointWriter::wait() {
  if (pending_.valid()) STRATA_RETURN_IF_ERROR(pending_.get());
  return Status::Ok();
}

// Note [Checkpoint retirement]: the manifest, then the record that lists it (and drops the
// oldest beyond `keep`), then the deletion of every manifest the record no longer lists.
Status CheckpointWriter::write(long steps_done) {
  // A snapshot of this name can only be an orphan (a killed run saved it but never recorded
  // it, and a resume collects those): save_snapshot replaces it.
  const std::string name = ManifestNameForStep(steps_done);
  STRATA_RETURN_IF_ERROR(o_.memory->save_snapshot(name, o_.pages));
  CheckpointRecord next = record_;
  // The retired ones' manifests go with every other unlisted step-* manifest below.
  (void)next.push_newest({steps_done, name}, uint64_t(o_.keep));
  STRATA_RETURN_IF_ERROR(WriteCheckpointRecord(o_.dir, next));
  record_ = std::move(next);
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, o_.memory->snapshot_names());
  for (const std::string& n : names) {
    const bool listed = std::any_of(record_.checkpoints.begin(), record_.checkpoints.end(),
                                    [&](const CheckpointEntry& e) { return e.manifest == n; });
    if (!listed && IsCheckpointManifest(n)) {
      STRATA_RETURN_IF_ERROR(o_.memory->delete_snapshot(n));
    }
  }
  Logger("train")->debug("checkpoint {} in {} (kept: steps {})", name, o_.dir,
                         record_.steps_text());
  return Status::Ok();
}

}  // namespace strata::scheduler
