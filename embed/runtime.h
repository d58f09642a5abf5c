// Runtime: what one strata_runtime handle is (include/strata.h), in C++ with Status errors.
// embed/c_api.cc is the thin C layer over it.
//
// Parts
// - Layout (layout.h): registered tensors, pairs, pages, update units.
// - memory::MemoryManager: the pinned host pool and the NVMe tier; made when the layout is
//   sealed (the first acquire, prefetch, discard or step), since it needs the page count.
// - Pins: per page, the runtime's one pin (a memory::PageRef) shared by every acquire of a
//   tensor in that page; per tensor, its readers / writer / tier (Note [Holds]).
// - AccessOrder (access_order.h): the learned acquire order, prefetch and the host pool's plan.
// - Optimizer (optimizer.h): the background AdamW step over update units.
//
// Note [Holds]
// Tensors of one group and role share a page, so an acquire pins the page (every page of a
// tensor spanning several), not the tensor. A
// page pinned for read by one tensor cannot be written through another tensor of that page at
// the same time (the pin would have to change kind under the reader): such an acquire is
// FailedPrecondition naming the reader. Per tensor: many readers on one tier, or one writer.
//
// Note [Dead tensors]
// strata_discard drops a page (no write-back, reads as zeros) only once every tensor in it is
// discarded: until then the discarded tensor's piece is marked dead in that page, and whoever
// next pins the page zeroes the dead pieces (an acquire of a page with dead pieces pins it for
// write). The optimizer and a checkpoint zero them first, since they read pages directly.
//
// Threads (Note [Runtime locking]): mu_ guards holds, pins, pending counts and the access order.
// It is never held across a page load or a wait (only across a device copy, a bounded memcpy
// or DMA): a page being pinned is marked `pinning` and others wait on cv_ for it. step_mu_
// (taken before mu_) lets one thread at a time start or join a step (step, step_wait, close,
// checkpoint): the optimizer's thread is joined by one caller only. The optimizer thread takes pages through the manager
// directly; the pages of unfinished update units are off limits to acquires until done.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include "core/device/device.h"
#include "core/util/status.h"
#include "embed/access_order.h"
#include "embed/checkpoint_book.h"
#include "embed/layout.h"
#include "embed/options.h"
#include "memory/memory_manager.h"
#include "strata.h"

namespace strata::embed {

class Optimizer;
class GradSums;

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> Create(const EmbedOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // FailedPrecondition (nothing closed) while a tensor is acquired; otherwise closed (a failed
  // step's error is logged: step_wait reports it).
  Status close();

  Result<size_t> register_tensor(TensorInfo info);
  Result<size_t> find(const std::string& name);
  Status register_pair(size_t param, size_t grad, float weight_decay);
  // InvalidArgument unless `tensor` is a registered tensor's index.
  Status check_tensor(size_t tensor);

  Result<void*> acquire(size_t tensor, strata_intent intent, strata_tier tier);
  Status release(size_t tensor);
  Status prefetch(size_t tensor);
  Status discard(size_t tensor);

  Status step(const strata_step_options& options);
  Status step_wait();
  int64_t step_count();
  double last_grad_norm();

  // Saves `name`, then drops the oldest checkpoints beyond keep_checkpoints (Note [Dropping
  // checkpoints] in checkpoint_book.h).
  Status checkpoint(const std::string& name);
  // Drops `name` (Note [Dropping checkpoints]): NotFound naming those there are.
  Status drop_checkpoint(const std::string& name);
  strata_stats stats();

  // For the optimizer (optimizer.cc): the pages of unit `u` are done.
  void finish_unit(size_t unit);

 private:
  struct Hold {
    int readers = 0;
    bool writer = false;
    strata_tier tier = STRATA_TIER_HOST;
    void* device_copy = nullptr;
  };
  struct PagePin {
    memory::PageRef ref;
    memory::Access access = memory::Access::kRead;
    int holds = 0;
    bool pinning = false;
  };
  explicit Runtime(const EmbedOptions& options);
  Status seal(std::unique_lock<std::mutex>& lock);
  std::vector<std::string> nvme_dirs() const;
  Status check_store();
  Status check_store_free(const std::vector<std::string>& dirs) const;
  uint64_t default_nvme_bytes() const;  // nvme_mem unset
  Status open_memory();
  Status collect_unlisted();
  Status delete_manifests(const std::vector<std::string>& manifests);
  Status check_hold(size_t tensor, strata_intent intent, strata_tier tier) const;
  Status check_fits(size_t tensor, strata_tier tier) const;
  memory::Access page_access(size_t tensor, strata_intent intent) const;
  Status pin_page(std::unique_lock<std::mutex>& lock, memory::PageId page, size_t tensor,
                  memory::Access access);
  void unpin_page(memory::PageId page);
  Status pin_tensor(std::unique_lock<std::mutex>& lock, size_t tensor, memory::Access access);
  void unpin_tensor(size_t tensor);
  Result<void*> to_device(size_t tensor, bool load);
  Status copy_device(size_t tensor, CopyKind kind);
  void issue_prefetches(const std::vector<memory::PageId>& pages);
  Status wait_unpending(std::unique_lock<std::mutex>& lock, size_t tensor);
  Status discard_piece(std::unique_lock<std::mutex>& lock, size_t tensor, const Piece& piece);
  Status check_no_holds(const char* what) const;
  Status check_step_ready() const;
  Status wait_for_step();
  Status materialize_dead(std::unique_lock<std::mutex>& lock);
  std::vector<size_t> unit_order() const;
  void set_plan();

  EmbedOptions options_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Stream> copy_stream_;
  std::unique_ptr<memory::NvmeTier> nvme_;
  std::unique_ptr<memory::MemoryManager> memory_;
  Layout layout_;
  std::unique_ptr<AccessOrder> order_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<GradSums> grad_sums_;  // Note [Norms at release] in grad_sums.h
  std::unique_ptr<CheckpointBook> book_;

  std::mutex step_mu_;  // serialises starting and joining steps; taken before mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Hold> holds_;    // per tensor
  std::vector<PagePin> pins_;  // per page
  std::vector<int> pending_;   // per page: unfinished update units that touch it
  // Per page: the tensors discarded there whose bytes are not zeroed yet (Note [Dead tensors]).
  std::vector<std::vector<size_t>> dead_in_page_;
  bool closed_ = false;
  CheckpointBook::Entry resumed_;  // the checkpoint resumed from (its name "" when none)

  std::atomic<uint64_t> acquires_{0}, predicted_{0}, unpredicted_{0}, prefetches_{0};
  std::atomic<uint64_t> stall_ns_{0};
};

}  // namespace strata::embed
