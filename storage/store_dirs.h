// The directories of a store (PageStoreOptions::dirs, the {nvme_dir} given): checked before a
// store is opened or created. Each refusal is at fault of {nvme_dir} (Note [Options in messages]
// in core/util/option.h) and states its numbers.
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"
#include "storage/page_store.h"

namespace strata::storage {

// The canonical directories of options.dirs, each checked to be a writable directory given once
// (InvalidArgument for a page size that is no positive multiple of 4 KiB, or no directory).
Result<std::vector<std::string>> CheckedDirs(const PageStoreOptions& options);

// OK when `dir` holds nothing but Strata's own leftovers (the lock, an interrupted creation's
// *.new files); InvalidArgument naming the other entries otherwise.
Status CheckEmptyForNewStore(const std::string& dir);

}  // namespace strata::storage
