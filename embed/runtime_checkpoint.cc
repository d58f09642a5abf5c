// Runtime::checkpoint: a manifest of the NVMe store plus an entry in the CheckpointBook.
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
  return book_->record(name, optimizer_->steps_done(), layout_);
}

}  // namespace strata::embed
