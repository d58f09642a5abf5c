// Runtime: acquire, release, prefetch and discard (Note [Holds], Note [Dead tensors] in
// runtime.h).
#include <chrono>
#include <cstring>

#include "embed/optimizer.h"
#include "embed/runtime.h"

namespace strata::embed {
namespace {

const char* TierName(strata_tier tier) { return tier == STRATA_TIER_DEVICE ? "device" : "host"; }

uint64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count());
}

}  // namespace

Status Runtime::check_hold(size_t t, strata_intent intent, strata_tier tier) const {
  const Hold& h = holds_[t];
  const std::string& name = layout_.tensor(t).name;
  if (h.writer) {
    return Status::FailedPrecondition("tensor '" + name +
                                      "' is already acquired for write; release it first "
                                      "(one writer at a time)");
  }
  if (intent != STRATA_READ && h.readers > 0) {
    return Status::FailedPrecondition("tensor '" + name + "' is acquired for read " +
                                      std::to_string(h.readers) +
                                      " time(s); release it before acquiring it for write");
  }
  if (h.readers > 0 && h.tier != tier) {
    return Status::FailedPrecondition("tensor '" + name + "' is acquired on the " +
                                      TierName(h.tier) + " tier; release it before acquiring "
                                      "it on the " + TierName(tier) + " tier");
  }
  return Status::Ok();
}

// Waits until no unfinished update unit touches `page`. The step's error when one that did
// failed (its update did not happen).
Status Runtime::wait_unpending(std::unique_lock<std::mutex>& lock, memory::PageId page) {
  if (pending_[page] == 0) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  cv_.wait(lock, [&] { return pending_[page] == 0; });
  stall_ns_ += NanosSince(start);
  for (size_t u : layout_.units_of(page)) {
    if (optimizer_->unit_failed(u)) return optimizer_->last_status();
  }
  return Status::Ok();
}

// One pin per page, shared by the tensors acquired in it (Note [Holds]).
Status Runtime::pin_page(std::unique_lock<std::mutex>& lock, size_t t, memory::Access access) {
  const memory::PageId page = layout_.tensor(t).page;
  PagePin& pin = pins_[page];
  cv_.wait(lock, [&] { return !pin.pinning; });
  bool has_dead = false;
  for (size_t other : layout_.tensors_in(page)) has_dead |= dead_[other] != 0;
  if (has_dead && access == memory::Access::kRead) access = memory::Access::kWrite;
  if (pin.holds > 0) {
    if (pin.access == memory::Access::kRead && access != memory::Access::kRead) {
      for (size_t other : layout_.tensors_in(page)) {
        if (holds_[other].readers > 0) {
          return Status::FailedPrecondition(
              "tensor '" + layout_.tensor(t).name + "' shares a page with '" +
              layout_.tensor(other).name + "' (same group and role), which is acquired for "
              "read; release it first, or put the two in different groups");
        }
      }
    }
    ++pin.holds;
    return Status::Ok();
  }
  pin.pinning = true;
  lock.unlock();
  const auto start = std::chrono::steady_clock::now();
  auto ref = memory_->acquire_sync(page, access, {"strata_acquire " + layout_.tensor(t).name, 0});
  const uint64_t waited = NanosSince(start);
  lock.lock();
  pin.pinning = false;
  cv_.notify_all();
  if (!ref.ok()) return ref.status();
  stall_ns_ += waited;
  pin.ref = std::move(ref).value();
  pin.access = access == memory::Access::kRead ? access : memory::Access::kWrite;
  pin.holds = 1;
  for (size_t other : layout_.tensors_in(page)) {
    if (!dead_[other]) continue;
    std::memset(static_cast<char*>(pin.ref.data()) + layout_.tensor(other).offset, 0,
                layout_.tensor(other).bytes);
    dead_[other] = 0;
  }
  return Status::Ok();
}

void Runtime::unpin_page(memory::PageId page) {
  PagePin& pin = pins_[page];
  STRATA_CHECK(pin.holds > 0) << "unpin of page " << page << " that is not pinned";
  if (--pin.holds == 0) pin.ref.release();
}

Result<void*> Runtime::acquire(size_t t, strata_intent intent, strata_tier tier) {
  std::unique_lock<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(seal(lock));
  STRATA_RETURN_IF_ERROR(check_hold(t, intent, tier));
  const TensorInfo& info = layout_.tensor(t);
  STRATA_RETURN_IF_ERROR(wait_unpending(lock, info.page));
  STRATA_RETURN_IF_ERROR(check_hold(t, intent, tier));  // another thread may have come first
  memory::Access access = memory::Access::kRead;
  if (intent == STRATA_WRITE) access = memory::Access::kWrite;
  // A page is loaded unless the one tensor in it is overwritten whole.
  if (intent == STRATA_OVERWRITE) {
    access = layout_.tensors_in(info.page).size() == 1 ? memory::Access::kOverwrite
                                                       : memory::Access::kWrite;
  }
  Hold& h = holds_[t];
  if (intent == STRATA_READ) ++h.readers; else h.writer = true;  // reserved while pinning
  h.tier = tier;
  Status pinned = pin_page(lock, t, access);
  if (!pinned.ok()) {
    if (intent == STRATA_READ) --h.readers; else h.writer = false;
    return pinned;
  }
  void* host = static_cast<char*>(pins_[info.page].ref.data()) + info.offset;
  void* out = host;
  if (tier == STRATA_TIER_DEVICE) {
    auto dev = to_device(t, host, intent != STRATA_OVERWRITE);
    if (!dev.ok()) {
      if (intent == STRATA_READ) --h.readers; else h.writer = false;
      unpin_page(info.page);
      return dev.status();
    }
    out = *dev;
  }
  ++acquires_;
  std::vector<memory::PageId> to_prefetch;
  (order_->on_acquire(t, to_prefetch) ? predicted_ : unpredicted_)++;
  lock.unlock();
  issue_prefetches(to_prefetch);
  return out;
}

Status Runtime::release(size_t t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::FailedPrecondition("the runtime is closed");
  if (!layout_.sealed() || (!holds_[t].writer && holds_[t].readers == 0)) {
    return Status::FailedPrecondition("strata_release: tensor '" + layout_.tensor(t).name +
                                      "' is not acquired");
  }
  Hold& h = holds_[t];
  const TensorInfo& info = layout_.tensor(t);
  Status status;
  if (h.tier == STRATA_TIER_DEVICE) {
    void* host = static_cast<char*>(pins_[info.page].ref.data()) + info.offset;
    if (h.writer) status = from_device(t, host);
    if (h.writer || h.readers == 1) {
      device_->free(h.device_copy);
      h.device_copy = nullptr;
    }
  }
  if (h.writer) h.writer = false; else --h.readers;
  unpin_page(info.page);
  return status;
}

// Device copies are made at acquire and dropped at the last release (the sim backend's arena
// is host memory under gpu_mem; on CUDA, device memory). The lock is held across the copy:
// it is a bounded memcpy or DMA that waits on nothing of the runtime's.
Result<void*> Runtime::to_device(size_t t, void* host, bool load) {
  Hold& h = holds_[t];
  if (h.device_copy) return h.device_copy;  // another reader's
  const uint64_t bytes = layout_.tensor(t).bytes;
  auto copy = device_->alloc(bytes);
  if (!copy.ok()) {
    return copy.status().with_context("strata_acquire '" + layout_.tensor(t).name +
                                      "' on the device (raise gpu_mem)");
  }
  if (load) {
    Status s = device_->copy_async(*copy, host, bytes, CopyKind::kHostToDevice, *copy_stream_);
    if (s.ok()) s = copy_stream_->synchronize();
    if (!s.ok()) {
      device_->free(*copy);
      return s;
    }
  }
  h.device_copy = *copy;
  return h.device_copy;
}

Status Runtime::from_device(size_t t, void* host) {
  STRATA_RETURN_IF_ERROR(device_->copy_async(host, holds_[t].device_copy, layout_.tensor(t).bytes,
                                             CopyKind::kDeviceToHost, *copy_stream_));
  return copy_stream_->synchronize();
}

void Runtime::issue_prefetches(const std::vector<memory::PageId>& pages) {
  for (memory::PageId page : pages) memory_->prefetch(page);
  prefetches_ += pages.size();
}

Status Runtime::prefetch(size_t t) {
  std::unique_lock<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(seal(lock));
  const memory::PageId page = layout_.tensor(t).page;
  if (pending_[page] > 0) return Status::Ok();  // the optimizer has it: it will be resident
  lock.unlock();
  issue_prefetches({page});
  return Status::Ok();
}

Status Runtime::discard(size_t t) {
  std::unique_lock<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(seal(lock));
  const TensorInfo& info = layout_.tensor(t);
  if (holds_[t].writer || holds_[t].readers > 0) {
    return Status::FailedPrecondition("strata_discard: tensor '" + info.name +
                                      "' is acquired; release it first");
  }
  STRATA_RETURN_IF_ERROR(wait_unpending(lock, info.page));
  cv_.wait(lock, [&] { return !pins_[info.page].pinning; });
  PagePin& pin = pins_[info.page];
  if (pin.holds > 0 && pin.access != memory::Access::kRead) {
    std::memset(static_cast<char*>(pin.ref.data()) + info.offset, 0, info.bytes);
    return Status::Ok();
  }
  dead_[t] = 1;
  bool all_dead = pin.holds == 0;
  for (size_t other : layout_.tensors_in(info.page)) all_dead &= dead_[other] != 0;
  if (!all_dead) return Status::Ok();
  for (size_t other : layout_.tensors_in(info.page)) dead_[other] = 0;
  pin.pinning = true;  // nobody pins the page while it is dropped
  lock.unlock();
  Status s = memory_->discard(info.page);
  lock.lock();
  pin.pinning = false;
  cv_.notify_all();
  return s;
}

// Zeroes every dead tensor (Note [Dead tensors]) by pinning its page for write, so that the
// optimizer or a checkpoint, which read pages directly, see zeros.
Status Runtime::materialize_dead(std::unique_lock<std::mutex>& lock) {
  for (size_t t = 0; t < dead_.size(); ++t) {
    if (!dead_[t]) continue;
    STRATA_RETURN_IF_ERROR(pin_page(lock, t, memory::Access::kWrite));
    unpin_page(layout_.tensor(t).page);
  }
  return Status::Ok();
}

}  // namespace strata::embed
