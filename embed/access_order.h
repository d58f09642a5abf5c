// AccessOrder: the embedder's acquire order, learned from one iteration and used in the next.
//
// An embedder gives no step program. The runtime records which tensors it acquires between two
// strata_step calls (an iteration) and, from the next iteration on, expects the same order: it
// prefetches the pages of the tensors coming up (a window of bytes ahead of a cursor), and the
// host pool evicts by Belady over the recorded page order (memory::MemoryManager's access plan).
//
// Note [Per-page fallback]
// When the order changes (a branch taken, another batch shape), the cursor follows the
// embedder only as far as the evidence goes: an acquire found inside the prefetch window moves
// the cursor past it (the ones skipped were prefetched anyway); one found beyond the window
// moves it only when the next acquire is the entry right after it (two in a row: the embedder
// really jumped); one not ahead of the cursor (already passed, or new) leaves it where it is.
// So a moved or new tensor loses its own prefetch, and everything still in the recorded order
// keeps it. The order
// recorded during an iteration replaces the expected one at the next step, so a lasting change
// costs one iteration. A tensor acquired several times per iteration is foreseen each time
// (Note [Repeated acquires] in access_order.cc). (DeepSpeed's ZeRO-3 prefetcher invalidates its whole trace instead, and
// falls back to fetching on demand until it has recorded a new one.)
//
// Threads: not thread-safe; the Runtime calls it under its lock.
#pragma once
#include <cstdint>
#include <cstddef>
#include <vector>
#include "embed/layout.h"

namespace strata::embed {

class AccessOrder {
 public:
  // Acquires recorded per iteration at most (32 MiB of indices).
  static constexpr size_t kMaxRecorded = size_t(1) << 22;

  // `window_bytes`: how many bytes of pages ahead of the cursor are prefetched.
  AccessOrder(const Layout* layout, uint64_t window_bytes);

  // Notes an acquire of `tensor`; returns whether it was foreseen (its prefetch was issued in
  // this iteration), and appends to `to_prefetch` the pages to prefetch now.
  bool on_acquire(size_t tensor, std::vector<memory::PageId>& to_prefetch);

  // An iteration ends (strata_step): the recorded order becomes the expected one. Returns
  // whether the expected order changed (the caller then gives the host pool a new plan), and
  // appends the pages that start the next iteration to `to_prefetch`.
  bool end_iteration(std::vector<memory::PageId>& to_prefetch);

  // The expected order (tensor indices); empty before the first iteration ended.
  const std::vector<size_t>& expected() const { return expected_; }

 private:
  void extend_window(std::vector<memory::PageId>& to_prefetch);

  const Layout* layout_;
  uint64_t window_bytes_;
  std::vector<size_t> expected_;
  std::vector<std::vector<uint32_t>> positions_;  // per tensor: its positions in expected_
  std::vector<size_t> recording_;
  size_t cursor_ = 0;    // the next expected position
  size_t frontier_ = 0;  // positions below it have had their prefetch issued
  size_t far_ = SIZE_MAX;  // the last acquire found beyond the window (a jump not yet confirmed)
  uint64_t iteration_ = 1;
  std::vector<uint64_t> prefetched_in_;  // per tensor: the iteration its prefetch was issued in
};

}  // namespace strata::embed
