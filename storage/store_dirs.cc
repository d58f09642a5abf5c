#include "storage/store_dirs.h"

#include <filesystem>

#include "core/util/option.h"
#include "storage/aligned_buffer.h"
#include "storage/catalog.h"
#include "storage/posix_file.h"
#include "storage/slot_file.h"
#include "storage/store_lock.h"

namespace strata::storage {
namespace {

// Canonical form of a directory, so that "/a/b/" and "/a/./b" name the same store.
std::string Canonical(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(dir, ec);
  return ec ? dir : p.string();
}

}  // namespace

Result<std::vector<std::string>> CheckedDirs(const PageStoreOptions& options) {
  if (options.page_bytes == 0 || !IsIoAligned(options.page_bytes)) {
    return AtFault(Option::kPageSize,
                   Status::InvalidArgument("page size " + std::to_string(options.page_bytes) +
                                           " bytes is not a positive multiple of 4 KiB (4096 "
                                           "bytes); use e.g. 4M or 16M"),
                   {{"got", FaultNumber(options.page_bytes)}});
  }
  if (options.dirs.empty()) {
    return AtFault(Option::kNvmeDir,
                   Status::InvalidArgument("no " + Mention(Option::kNvmeDir) +
                                           " given; pass one directory per NVMe disk"),
                   {{"dirs", 0}});
  }
  std::vector<std::string> dirs;
  for (const std::string& d : options.dirs) {
    STRATA_RETURN_IF_ERROR(
        AtFault(Option::kNvmeDir, CheckWritableDir(d, Mention(Option::kNvmeDir))));
    dirs.push_back(Canonical(d));
  }
  for (size_t i = 0; i < dirs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (dirs[i] == dirs[j]) {
        return AtFault(Option::kNvmeDir,
                       Status::InvalidArgument(Mention(Option::kNvmeDir) + " " + options.dirs[i] +
                                               " is given twice; pass each directory once"),
                       {{"index", int64_t(i)}, {"same_as_index", int64_t(j)}});
      }
    }
  }
  return dirs;
}

// A new store is created only in directories that hold nothing but Strata's own leftovers (the
// lock, an interrupted creation's *.new files): it must never overwrite or mix with a user's
// files, and a directory with other files in it is usually a mistyped path.
Status CheckEmptyForNewStore(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> others;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == kStoreLockName || name == std::string(kSlotFileName) + ".new" ||
        name == std::string(kCatalogDirName) + ".new") {
      continue;
    }
    others.push_back(name);
  }
  if (ec) {
    return AtFault(Option::kNvmeDir, Status::IoError(Mention(Option::kNvmeDir) + " " + dir +
                                                     ": cannot list it: " + ec.message()));
  }
  if (others.empty()) return Status::Ok();
  std::sort(others.begin(), others.end());
  std::string shown;
  for (size_t i = 0; i < others.size() && i < 3; ++i) shown += (i ? ", '" : "'") + others[i] + "'";
  if (others.size() > 3) shown += ", ...";
  return AtFault(
      Option::kNvmeDir,
      Status::InvalidArgument(
          Mention(Option::kNvmeDir) + " " + dir + " is not empty (it holds " +
          std::to_string(others.size()) +
          (others.size() == 1 ? " other entry: " : " other entries: ") + shown +
          "); a new store is created only in an empty directory, so that it never overwrites "
          "your files: give an empty or new directory (or " +
          Mention(Option::kResume) + " to continue a run whose store is there)"),
      {{"entries", int64_t(others.size())}});
}

}  // namespace strata::storage
