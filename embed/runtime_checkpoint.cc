// Runtime::checkpoint and drop_checkpoint: a manifest of the NVMe store plus an entry in the
// CheckpointBook (Note [Dropping checkpoints] in checkpoint_book.h).
#include <numeric>

#include "embed/checkpoint_book.h"
#include "embed/optimizer.h"
#include "embed/runtime.h"

namespace strata::embed {

Status Runtime::checkpoint(const std::string& name) {
  STRATA_RETURN_IF_ERROR(CheckpointBook::CheckName(name));
  std::lock_guard<std::mutex> steps(step_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(seal(lock));
  if (!book_) {
    return Status::FailedPrecondition("strata_checkpoint needs the option checkpoint_dir");
  }
  lock.unlock();
  STRATA_RETURN_IF_ERROR(optimizer_->wait());
  lock.lock();
  STRATA_RETURN_IF_ERROR(materialize_dead(lock));  // may unlock: the check comes after it
  STRATA_RETURN_IF_ERROR(check_no_holds("strata_checkpoint"));
  std::vector<memory::PageId> pages(layout_.num_pages());
  std::iota(pages.begin(), pages.end(), memory::PageId{0});
  // No acquire can start while mu_ is held, and none is running (no holds, no pins).
  STRATA_RETURN_IF_ERROR(memory_->save_snapshot(CheckpointBook::ManifestName(name), pages));
  STRATA_ASSIGN_OR_RETURN(
      std::vector<std::string> retired,
      book_->record(name, optimizer_->steps_done(), layout_, options_.keep_checkpoints,
                    nvme_dirs()));
  // Their versions stay until a resume collects them (Note [Dropping checkpoints]).
  return delete_manifests(retired).with_context(
      "strata_checkpoint: '" + name + "' is saved, but freeing the checkpoints beyond "
      "keep_checkpoints failed");
}

// Under both locks, as a checkpoint: the record and the store change together.
Status Runtime::drop_checkpoint(const std::string& name) {
  STRATA_RETURN_IF_ERROR(CheckpointBook::CheckName(name));
  std::lock_guard<std::mutex> steps(step_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::FailedPrecondition("the runtime is closed");
  if (!book_) {
    return Status::FailedPrecondition("strata_checkpoint_drop needs the option checkpoint_dir");
  }
  STRATA_ASSIGN_OR_RETURN(const std::string manifest, book_->drop(name));
  return delete_manifests({manifest});
}

}  // namespace strata::embed
