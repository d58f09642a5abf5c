// Layout: the registered tensors, the optimizer's pairs, and where each tensor lives in pages.
//
// Tensors are registered (name, bytes, dtype, role, group) until the layout is sealed; sealing
// lays them into pages with memory::MakePagePlan: one page class per (group, role), tensors in
// registration order, 256-byte aligned (Note [Page packing] in memory/page_plan.h: a tensor that
// fits in a page stays in one, so a host pointer into its page is the tensor; a larger one
// spans consecutive pages, and only a contiguous device copy can hold it whole).
//
// Note [Update units]
// The optimizer works in chunks: the pieces of a pair over which its parameter, gradient and
// two moments each lie in one page (a pair inside one page per role is one chunk). Chunks with
// the same (parameter page, gradient page, first-moment page, second-moment page) form a unit,
// updated while the optimizer holds those four pages. An acquire of any page that an unfinished
// unit writes or reads waits for it, so a unit never waits on the embedder and the embedder
// never sees a half-updated page.
//
// Note [Sizes up front]
// Every size is checked when a tensor is registered, before anything is allocated for it (a
// 1e15-byte tensor once cost gigabytes of per-page tables at sealing before a budget was
// checked): its bytes against its dtype's element size, and the pages the layout would then
// take against StateLimits (state_limits.h: kMaxPages and what the tiers could ever hold). The
// pages are counted as MakePagePlan will lay them (Note [Page packing]): per (group, page role),
// the page count and the offset in its last page, in O(1) per tensor; seal() checks that the
// plan agrees. A sealed runtime keeps about 340-400 bytes of bookkeeping per page (the page
// plan's spans, the runtime's per-page vectors, the manager's page table, the store's slots:
// measured 2026-11-27, 368 B/page at 2^20 pages of 4 KiB in one tensor, 341 B in 4096 tensors),
// so kMaxPages costs about 1.5 GiB, and the 59.6 million pages of a 1e15-byte tensor in 16 MiB
// pages would have cost the 24 GB that once got a process killed.
//
// Threads: not thread-safe; the Runtime guards it (registration) and reads it only after
// sealing (immutable then).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
#include "core/util/status.h"
#include "embed/state_limits.h"
#include "memory/page_plan.h"

namespace strata::embed {

// The most tensors a runtime may register: a tensor handle carries the index in 32 bits (Note
// [Handle table] in handles.h).
inline constexpr uint64_t kMaxTensors = 0xFFFFFFFFull;

// Bytes per element of a strata_dtype (0 for a value that is none).
uint64_t DtypeBytes(int dtype);

struct TensorInfo {
  std::string name;
  uint64_t bytes = 0;
  int dtype = 0;  // strata_dtype
  int role = 0;   // strata_role
  std::string group;
  // After sealing:
  memory::PageId page = 0;  // the first page
  uint64_t offset = 0;      // inside the first page
  uint64_t num_pages = 1;   // consecutive pages it spans
};

// One contiguous piece of a tensor inside one page.
struct Piece {
  memory::PageId page = 0;
  uint64_t page_offset = 0;
  uint64_t tensor_offset = 0;
  uint64_t bytes = 0;
};

struct Pair {
  size_t param = 0, grad = 0, exp_avg = 0, exp_avg_sq = 0;  // tensor indices
  float weight_decay = 0.0f;
};

// Floats [begin, end) of pair `pair`: one page per tensor (Note [Update units]).
struct Chunk {
  size_t id = 0;  // index into Layout::chunks()
  size_t pair = 0;
  uint64_t begin = 0, end = 0;
};

struct UpdateUnit {
  std::array<memory::PageId, 4> pages{};  // param, grad, exp_avg, exp_avg_sq
  std::vector<Chunk> chunks;              // in pair order, then float order
};

class Layout {
 public:
  explicit Layout(uint64_t page_bytes) : page_bytes_(page_bytes) {
    limits_.page_bytes = page_bytes;
  }

  // The limits add() checks (Note [Sizes up front]); by default only kMaxPages.
  void set_limits(const StateLimits& limits) { limits_ = limits; }
  // InvalidArgument for an empty name, 0 bytes or bytes that are not whole elements of the
  // dtype; AlreadyExists for a name taken; StateLimits::check's errors; FailedPrecondition once
  // sealed.
  Result<size_t> add(TensorInfo info);
  Status add_pair(size_t param, size_t grad, float weight_decay);
  Result<size_t> find(const std::string& name) const;

  // Lays every tensor into pages; afterwards nothing can be added.
  Status seal();
  bool sealed() const { return sealed_; }

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo& tensor(size_t i) const { return tensors_[i]; }
  const std::vector<Pair>& pairs() const { return pairs_; }
  const std::vector<UpdateUnit>& units() const { return units_; }
  uint64_t page_bytes() const { return page_bytes_; }
  uint64_t num_pages() const { return num_pages_; }
  // The pages the registered tensors take (num_pages() once sealed).
  uint64_t counted_pages() const { return counted_pages_; }
  // The tensors in `page`, in layout order.
  const std::vector<size_t>& tensors_in(memory::PageId page) const { return page_tensors_[page]; }
  // Indices of the units that touch `page`.
  const std::vector<size_t>& units_of(memory::PageId page) const { return page_units_[page]; }
  // Whether `tensor` is the parameter or gradient of a pair.
  bool in_pair(size_t tensor) const;
  // The pair whose gradient `tensor` is, or -1.
  int64_t grad_pair(size_t tensor) const;
  // The chunk ids of pair `k`: [first, last).
  std::pair<size_t, size_t> chunks_of(size_t k) const {
    return {pair_chunks_[k], pair_chunks_[k + 1]};
  }
  // The pieces of `tensor`, one per page it spans, in order.
  std::vector<Piece> pieces(size_t tensor) const;
  // Its piece in `page` (bytes 0 when it has none).
  Piece piece_in(size_t tensor, memory::PageId page) const;
  // Where byte `at` of `tensor` lies: its page and the offset in that page.
  std::pair<memory::PageId, uint64_t> locate(size_t tensor, uint64_t at) const;
  // The chunks of every pair, in pair order (their index is a chunk id).
  const std::vector<Chunk>& chunks() const { return chunks_; }

 private:
  // Where a (group, page role)'s stream of bytes ends: its pages and the bytes used in the last.
  struct Fill {
    uint64_t pages = 0;
    uint64_t offset = 0;
  };
  struct Placement {
    int group = 0;
    std::pair<int, int> key;  // into fills_
    Fill after;
    uint64_t added_pages = 0;
  };
  Status check_size(const TensorInfo& info) const;
  Fill fill_after(Fill fill, uint64_t bytes) const;
  Placement place(const TensorInfo& info) const;
  Status check_pair_tensor(size_t i, int role, const char* what) const;
  void build_units();

  uint64_t page_bytes_;
  bool sealed_ = false;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
  std::unordered_map<std::string, int> group_ids_;
  std::vector<int> group_of_;  // per tensor
  std::vector<Pair> pairs_;
  std::vector<int> pair_member_;  // per tensor: 1 when the param or grad of a pair
  std::vector<int64_t> grad_pair_;    // per tensor: the pair whose gradient it is, or -1
  std::vector<size_t> pair_chunks_;   // per pair: its first chunk id (and one past the last)
  std::vector<UpdateUnit> units_;
  std::vector<Chunk> chunks_;
  uint64_t num_pages_ = 0;
  StateLimits limits_;
  std::map<std::pair<int, int>, Fill> fills_;  // per (group id, memory::Role)
  uint64_t counted_pages_ = 0;
  std::vector<std::vector<size_t>> page_tensors_;
  std::vector<std::vector<size_t>> page_units_;
};

}  // namespace strata::embed
