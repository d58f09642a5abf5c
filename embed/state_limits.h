// StateLimits: how many pages of registered state a runtime could ever hold, checked as each
// tensor is registered (Note [Sizes up front] in layout.h).
//
// Two limits:
// - kMaxPages, the most pages a runtime may have whatever its budgets: the runtime and the
//   memory manager keep about 370 bytes of bookkeeping per page, allocated when the layout is
//   sealed (Note [Sizes up front] in layout.h has the measurement).
// - what the tiers could ever hold: the host pool's frames plus the NVMe tier's slots. The NVMe
//   tier's capacity is nvme_mem when set; otherwise it follows the registered tensors, and the
//   only ceiling is the size of the filesystems its directories are on.
// Both are ceilings, not promises: a layout under them may still need more room at run time
// (copy-on-write versions, checkpoints), and the memory manager says so when it does.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "embed/options.h"

namespace strata::embed {

// The most pages a runtime may have: at 16 MiB pages, 64 TiB of state (the trainer's limit,
// kMaxStatePages in scheduler/paged_trainer_impl.h, is the same).
inline constexpr uint64_t kMaxPages = uint64_t{1} << 22;

struct StateLimits {
  enum class Nvme { kNone, kBudget, kDisks };

  uint64_t page_bytes = 0;
  uint64_t max_pages = kMaxPages;
  uint64_t host_pages = UINT64_MAX;  // the host pool's frames
  Nvme nvme = Nvme::kNone;
  uint64_t nvme_pages = 0;  // kBudget: nvme_mem's slots; kDisks: what the filesystems hold

  // InvalidArgument (above max_pages: raise page_size) or ResourceExhausted (above what the
  // tiers could hold: the budget to raise, with the numbers) naming `what` ("'w'", `bytes`
  // long), whose registration would bring the layout to `pages`.
  Status check(const std::string& what, uint64_t bytes, uint64_t pages) const;
};

// The limits of a runtime with `options` whose NVMe tier is in `nvme_dirs` (none: no NVMe
// tier). The directories exist (Runtime::check_store made them); a filesystem whose size
// cannot be read puts no ceiling of its own.
StateLimits MakeStateLimits(const EmbedOptions& options, const std::vector<std::string>& nvme_dirs);

}  // namespace strata::embed
