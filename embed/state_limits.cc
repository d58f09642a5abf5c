#include "embed/state_limits.h"

#include <sys/statvfs.h>

#include <set>

#include "core/util/sizes.h"

namespace strata::embed {
namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// "6 pages of 64.00 KiB (384.00 KiB)".
std::string PagesText(uint64_t pages, uint64_t page_bytes) {
  const std::string bytes =
      pages > UINT64_MAX / page_bytes ? "over 16 EiB" : FormatBytes(pages * page_bytes);
  return std::to_string(pages) + " pages of " + FormatBytes(page_bytes) + " (" + bytes + ")";
}

std::string BytesOf(uint64_t pages, uint64_t page_bytes) {
  return pages > UINT64_MAX / page_bytes ? "over 16 EiB" : FormatBytes(pages * page_bytes);
}

// The whole size of the filesystems the directories are on, each counted once; UINT64_MAX
// when one cannot be read.
uint64_t FilesystemBytes(const std::vector<std::string>& dirs) {
  std::set<unsigned long> seen;
  uint64_t total = 0;
  for (const std::string& dir : dirs) {
    struct statvfs vfs;
    if (::statvfs(dir.c_str(), &vfs) != 0) return UINT64_MAX;
    if (!seen.insert(vfs.f_fsid).second) continue;
    total = SaturatingAdd(total, uint64_t(vfs.f_blocks) * uint64_t(vfs.f_frsize));
  }
  return total;
}

}  // namespace

Status StateLimits::check(const std::string& what, uint64_t bytes, uint64_t pages) const {
  const std::string adding = "registering " + what + " (" + FormatBytes(bytes) +
                             ") would bring the registered tensors to " +
                             PagesText(pages, page_bytes);
  if (pages > max_pages) {
    return Status::InvalidArgument(
        adding + ", above the " + std::to_string(max_pages) +
        " pages a runtime may have (it keeps bookkeeping per page): raise page_size, or register "
        "fewer or smaller tensors");
  }
  const uint64_t nvme_slots = nvme == Nvme::kNone ? 0 : nvme_pages;
  if (pages <= SaturatingAdd(host_pages, nvme_slots)) return Status::Ok();
  const std::string host = "host_mem holds " + PagesText(host_pages, page_bytes);
  switch (nvme) {
    case Nvme::kNone:
      return Status::ResourceExhausted(adding + ", but " + host +
                                       " and there is no NVMe tier: raise host_mem to at least " +
                                       BytesOf(pages, page_bytes) + " or set nvme_dir");
    case Nvme::kBudget:
      return Status::ResourceExhausted(adding + ", more than the tiers could ever hold: " + host +
                                       " and nvme_mem " + BytesOf(nvme_pages, page_bytes) +
                                       ": raise nvme_mem to at least " +
                                       BytesOf(pages - host_pages, page_bytes) +
                                       " (unset, it is sized to what the tier stores)");
    case Nvme::kDisks:
      break;
  }
  return Status::ResourceExhausted(
      adding + ", more than the tiers could ever hold: " + host +
      " and the filesystems of the NVMe tier's directories are " + BytesOf(nvme_pages, page_bytes) +
      " in all: put nvme_dir on a larger disk, or register fewer or smaller tensors");
}

StateLimits MakeStateLimits(const EmbedOptions& options,
                            const std::vector<std::string>& nvme_dirs) {
  StateLimits limits;
  limits.page_bytes = options.page_bytes;
  limits.host_pages = options.host_bytes / options.page_bytes;
  if (nvme_dirs.empty()) return limits;
  // A resumed store keeps its own capacity when nvme_mem is smaller: only the disks bound it.
  if (options.nvme_bytes != 0 && options.resume.empty()) {
    limits.nvme = StateLimits::Nvme::kBudget;
    limits.nvme_pages = options.nvme_bytes / options.page_bytes;
    return limits;
  }
  limits.nvme = StateLimits::Nvme::kDisks;
  const uint64_t disk = FilesystemBytes(nvme_dirs);
  limits.nvme_pages = disk == UINT64_MAX ? UINT64_MAX : disk / options.page_bytes;
  return limits;
}

}  // namespace strata::embed
