// Runtime: acquire, release, prefetch and discard (Note [Holds], Note [Dead tensors] in
// runtime.h).
#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/util/sizes.h"
#include "embed/grad_sums.h"
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
  const TensorInfo& info = layout_.tensor(t);
  if (tier == STRATA_TIER_HOST && info.num_pages > 1) {
    uint64_t need = layout_.page_bytes();
    while (need < info.bytes) need *= 2;  // a tensor that fits a page starts a new one
    return Status::FailedPrecondition(
        "tensor '" + info.name + "' (" + FormatBytes(info.bytes) + ") spans " +
        std::to_string(info.num_pages) + " pages of " + FormatBytes(layout_.page_bytes()) +
        ", and a host pointer is one page: acquire it on the device tier (a contiguous copy), "
        "or set page_size to at least " + FormatBytes(need));
  }
  if (h.writer) {
    return Status::FailedPrecondition("tensor '" + info.name +
                                      "' is already acquired for write; release it first "
                                      "(one writer at a time)");
  }
  if (intent != STRATA_READ && h.readers > 0) {
    return Status::FailedPrecondition("tensor '" + info.name + "' is acquired for read " +
                                      std::to_string(h.readers) +
                                      " time(s); release it before acquiring it for write");
  }
  if (h.readers > 0 && h.tier != tier) {
    return Status::FailedPrecondition("tensor '" + info.name + "' is acquired on the " +
                                      TierName(h.tier) + " tier; release it before acquiring "
                                      "it on the " + TierName(tier) + " tier");
  }
  return Status::Ok();
}

// A device acquire that no wait could satisfy fails at once, with the budget to raise: every
// page of the tensor is pinned in the host pool at once (the copy is gathered from them), and
// the copy is one allocation under gpu_mem.
Status Runtime::check_fits(size_t t, strata_tier tier) const {
  if (tier != STRATA_TIER_DEVICE) return Status::Ok();
  const TensorInfo& info = layout_.tensor(t);
  const uint64_t frames = memory_->host_frames(), page = layout_.page_bytes();
  const std::string what = "strata_acquire: tensor '" + info.name + "' (" +
                           FormatBytes(info.bytes) + ") on the device tier";
  if (info.num_pages > frames) {
    return Status::ResourceExhausted(
        what + " needs its " + std::to_string(info.num_pages) + " pages of " + FormatBytes(page) +
        " pinned in the host pool at once, but host_mem " + FormatBytes(options_.host_bytes) +
        " holds " + std::to_string(frames) + ": raise host_mem to at least " +
        FormatBytes(info.num_pages * page) + " (plus what the optimizer and other acquires hold)");
  }
  const uint64_t device = device_->stats().capacity_bytes;
  if (device != 0 && info.bytes > device) {
    return Status::ResourceExhausted(what + " is larger than the device budget, gpu_mem " +
                                     FormatBytes(device) + ": raise gpu_mem to at least " +
                                     FormatBytes(info.bytes));
  }
  return Status::Ok();
}

// Waits until no unfinished update unit touches the tensor's pages. The step's error when one
// that did failed (its update did not happen).
Status Runtime::wait_unpending(std::unique_lock<std::mutex>& lock, size_t t) {
  const TensorInfo& info = layout_.tensor(t);
  auto done = [&] {
    for (uint64_t i = 0; i < info.num_pages; ++i) {
      if (pending_[info.page + i] != 0) return false;
    }
    return true;
  };
  if (done()) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  cv_.wait(lock, done);
  stall_ns_ += NanosSince(start);
  for (uint64_t i = 0; i < info.num_pages; ++i) {
    for (size_t u : layout_.units_of(info.page + i)) {
      if (optimizer_->unit_failed(u)) return optimizer_->last_status();
    }
  }
  return Status::Ok();
}

// One pin per page, shared by the tensors acquired in it (Note [Holds]). `t` names the
// acquirer in messages.
Status Runtime::pin_page(std::unique_lock<std::mutex>& lock, memory::PageId page, size_t t,
                         memory::Access access) {
  PagePin& pin = pins_[page];
  cv_.wait(lock, [&] { return !pin.pinning; });
  if (!dead_in_page_[page].empty() && access == memory::Access::kRead) {
    access = memory::Access::kWrite;  // the dead tensors are zeroed at this pin
  }
  if (pin.holds > 0) {
    if (pin.access == memory::Access::kRead && access != memory::Access::kRead) {
      for (size_t other : layout_.tensors_in(page)) {
        if (holds_[other].readers > 0 && other != t) {
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
  for (size_t dead : dead_in_page_[page]) {
    const Piece piece = layout_.piece_in(dead, page);
    std::memset(static_cast<char*>(pin.ref.data()) + piece.page_offset, 0, piece.bytes);
  }
  dead_in_page_[page].clear();
  return Status::Ok();
}

void Runtime::unpin_page(memory::PageId page) {
  PagePin& pin = pins_[page];
  STRATA_CHECK(pin.holds > 0) << "unpin of page " << page << " that is not pinned";
  if (--pin.holds == 0) pin.ref.release();
}

Status Runtime::pin_tensor(std::unique_lock<std::mutex>& lock, size_t t, memory::Access access) {
  const TensorInfo& info = layout_.tensor(t);
  for (uint64_t i = 0; i < info.num_pages; ++i) {
    Status s = pin_page(lock, info.page + i, t, access);
    if (!s.ok()) {
      for (uint64_t j = 0; j < i; ++j) unpin_page(info.page + j);
      return s;
    }
  }
  return Status::Ok();
}

void Runtime::unpin_tensor(size_t t) {
  const TensorInfo& info = layout_.tensor(t);
  for (uint64_t i = 0; i < info.num_pages; ++i) unpin_page(info.page + i);
}

// The page access for an acquire: a page is loaded unless the one tensor in it is overwritten
// whole.
memory::Access Runtime::page_access(size_t t, strata_intent intent) const {
  if (intent == STRATA_READ) return memory::Access::kRead;
  if (intent == STRATA_WRITE) return memory::Access::kWrite;
  const TensorInfo& info = layout_.tensor(t);
  for (uint64_t i = 0; i < info.num_pages; ++i) {
    if (layout_.tensors_in(info.page + i).size() != 1) return memory::Access::kWrite;
  }
  return memory::Access::kOverwrite;
}

Result<void*> Runtime::acquire(size_t t, strata_intent intent, strata_tier tier) {
  std::unique_lock<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(seal(lock));
  STRATA_RETURN_IF_ERROR(check_fits(t, tier));
  STRATA_RETURN_IF_ERROR(check_hold(t, intent, tier));
  STRATA_RETURN_IF_ERROR(wait_unpending(lock, t));
  STRATA_RETURN_IF_ERROR(check_hold(t, intent, tier));  // another thread may have come first
  Hold& h = holds_[t];
  auto unreserve = [&] {
    if (intent == STRATA_READ) --h.readers; else h.writer = false;
  };
  if (intent == STRATA_READ) ++h.readers; else h.writer = true;  // reserved while pinning
  h.tier = tier;
  Status pinned = pin_tensor(lock, t, page_access(t, intent));
  if (!pinned.ok()) {
    unreserve();
    return pinned;
  }
  const TensorInfo& info = layout_.tensor(t);
  void* out = static_cast<char*>(pins_[info.page].ref.data()) + info.offset;
  if (tier == STRATA_TIER_DEVICE) {
    auto dev = to_device(t, intent != STRATA_OVERWRITE);
    if (!dev.ok()) {
      unreserve();
      unpin_tensor(t);
      return dev.status();
    }
    out = *dev;
  }
  const int64_t pair = layout_.grad_pair(t);
  if (pair >= 0 && intent != STRATA_READ) grad_sums_->stale(size_t(pair));
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
  if (!memory_ || (!holds_[t].writer && holds_[t].readers == 0)) {
    return Status::FailedPrecondition("strata_release: tensor '" + layout_.tensor(t).name +
                                      "' is not acquired");
  }
  Hold& h = holds_[t];
  Status status;
  if (h.tier == STRATA_TIER_DEVICE) {
    if (h.writer) status = copy_device(t, CopyKind::kDeviceToHost);
    if (h.writer || h.readers == 1) {
      device_->free(h.device_copy);
      h.device_copy = nullptr;
    }
  }
  const int64_t pair = layout_.grad_pair(t);
  if (h.writer && pair >= 0 && status.ok()) {  // Note [Norms at release]
    grad_sums_->measure(size_t(pair),
                        [&](memory::PageId page) { return pins_[page].ref.data(); });
  }
  if (h.writer) h.writer = false; else --h.readers;
  unpin_tensor(t);
  return status;
}

// Device copies are made at acquire and dropped at the last release (the sim backend's arena
// is host memory under gpu_mem; on CUDA, device memory). A tensor spanning pages is gathered
// from them into one contiguous copy. The lock is held across the copy: a bounded memcpy or
// DMA that waits on nothing of the runtime's.
Result<void*> Runtime::to_device(size_t t, bool load) {
  Hold& h = holds_[t];
  if (h.device_copy) return h.device_copy;  // another reader's
  auto copy = device_->alloc(layout_.tensor(t).bytes);
  if (!copy.ok()) {
    return copy.status().with_context("strata_acquire '" + layout_.tensor(t).name +
                                      "' on the device (raise gpu_mem)");
  }
  h.device_copy = *copy;
  if (load) {
    Status s = copy_device(t, CopyKind::kHostToDevice);
    if (!s.ok()) {
      device_->free(h.device_copy);
      h.device_copy = nullptr;
      return s;
    }
  }
  return h.device_copy;
}

// Copies between the device copy and the tensor's pieces in its pinned pages.
Status Runtime::copy_device(size_t t, CopyKind kind) {
  char* dev = static_cast<char*>(holds_[t].device_copy);
  for (const Piece& piece : layout_.pieces(t)) {
    char* host = static_cast<char*>(pins_[piece.page].ref.data()) + piece.page_offset;
    const bool down = kind == CopyKind::kDeviceToHost;
    STRATA_RETURN_IF_ERROR(device_->copy_async(down ? host : dev + piece.tensor_offset,
                                               down ? dev + piece.tensor_offset : host,
                                               piece.bytes, kind, *copy_stream_));
  }
  return copy_stream_->synchronize();
}

void Runtime::issue_prefetches(const std::vector<memory::PageId>& pages) {
  for (memory::PageId page : pages) memory_->prefetch(page);
  prefetches_ += pages.size();
}

Status Runtime::prefetch(size_t t) {
  std::unique_lock<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(seal(lock));
  const TensorInfo& info = layout_.tensor(t);
  std::vector<memory::PageId> pages;
  for (uint64_t i = 0; i < info.num_pages; ++i) {
    // A page the optimizer has now will be resident when it is done.
    if (pending_[info.page + i] == 0) pages.push_back(info.page + i);
  }
  lock.unlock();
  issue_prefetches(pages);
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
  STRATA_RETURN_IF_ERROR(wait_unpending(lock, t));
  for (const Piece& piece : layout_.pieces(t)) {
    STRATA_RETURN_IF_ERROR(discard_piece(lock, t, piece));
  }
  const int64_t pair = layout_.grad_pair(t);
  if (pair >= 0) grad_sums_->zero(size_t(pair));  // it reads as zeros now
  return Status::Ok();
}

// Note [Dead tensors]: zeroed now in a page pinned for write, else marked dead there; a page
// whose every tensor is dead is dropped.
Status Runtime::discard_piece(std::unique_lock<std::mutex>& lock, size_t t, const Piece& piece) {
  cv_.wait(lock, [&] { return !pins_[piece.page].pinning; });
  PagePin& pin = pins_[piece.page];
  if (pin.holds > 0 && pin.access != memory::Access::kRead) {
    std::memset(static_cast<char*>(pin.ref.data()) + piece.page_offset, 0, piece.bytes);
    return Status::Ok();
  }
  auto& dead = dead_in_page_[piece.page];
  if (std::find(dead.begin(), dead.end(), t) == dead.end()) dead.push_back(t);
  if (pin.holds > 0 || dead.size() != layout_.tensors_in(piece.page).size()) return Status::Ok();
  dead.clear();
  pin.pinning = true;  // nobody pins the page while it is dropped
  lock.unlock();
  Status s = memory_->discard(piece.page);
  lock.lock();
  pin.pinning = false;
  cv_.notify_all();
  return s;
}

// Zeroes every dead tensor (Note [Dead tensors]) by pinning its pages for write, so that the
// optimizer or a checkpoint, which read pages directly, see zeros.
Status Runtime::materialize_dead(std::unique_lock<std::mutex>& lock) {
  for (memory::PageId page = 0; page < dead_in_page_.size(); ++page) {
    if (dead_in_page_[page].empty()) continue;
    STRATA_RETURN_IF_ERROR(pin_page(lock, page, dead_in_page_[page][0], memory::Access::kWrite));
    unpin_page(page);
  }
  return Status::Ok();
}

}  // namespace strata::embed
