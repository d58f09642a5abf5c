#include "memory/nvme_capacity.h"

#include <algorithm>

namespace strata::memory {

NvmeSizing SizeNvmeTier(const NvmeSizingInput& in) {
  NvmeSizing s;
  const uint64_t staged_pages = std::min(in.host_pages, in.state_pages);
  // A checkpoint pins every page with a committed version, gradients included.
  s.checkpoint_bytes = in.state_pages * in.page_bytes;
  // A run that saves checkpoints keeps at least one; while the next is saved (before the oldest
  // is retired) the next step's gradients may be written back.
  const uint64_t least = std::min<uint64_t>(in.keep_checkpoints, 1);
  const uint64_t grad_pages = in.state_pages - in.durable_pages;
  s.min_bytes =
      (in.state_pages + staged_pages + least * (in.state_pages + grad_pages)) * in.page_bytes;
  s.default_bytes = s.min_bytes + (in.keep_checkpoints - least) * s.checkpoint_bytes;
  auto fitting = [&](uint64_t bytes) {
    if (s.checkpoint_bytes == 0) return in.keep_checkpoints;
    return std::min(in.keep_checkpoints, least + (bytes - s.min_bytes) / s.checkpoint_bytes);
  };
  if (in.asked_bytes > 0) {
    if (in.asked_bytes < s.min_bytes) {
      s.fit = NvmeFit::kAskedBelowMinimum;
      return s;
    }
    s.fit = NvmeFit::kAsked;
    s.capacity_bytes = in.asked_bytes;
    s.checkpoints_fit = fitting(in.asked_bytes);
    return s;
  }
  if (in.room_bytes >= s.default_bytes) {
    s.fit = NvmeFit::kDefault;
    s.capacity_bytes = s.default_bytes;
    s.checkpoints_fit = in.keep_checkpoints;
  } else if (in.room_bytes >= s.min_bytes) {
    s.fit = NvmeFit::kFewerCheckpoints;
    s.checkpoints_fit = fitting(in.room_bytes);
    s.capacity_bytes = s.min_bytes + (s.checkpoints_fit - least) * s.checkpoint_bytes;
  } else {
    s.fit = NvmeFit::kBelowMinimum;
  }
  return s;
}

}  // namespace strata::memory
