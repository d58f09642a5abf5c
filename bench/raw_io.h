// RawIo: the baseline of `strata bench pages`'s NVMe ratios. It moves pages between one
// buffer and a preallocated O_DIRECT file through an IoEngine of its own, at the queue depth
// and request size the page store uses, with nothing else on the path (no checksums, no
// catalog), so the store's rates can be read against the raw engine's on the same disk.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/util/status.h"
#include "storage/io_engine.h"
#include "storage/posix_file.h"

namespace strata::bench {

class RawIo {
 public:
  // Opens `dir`/raw.bin (O_DIRECT, fallocated to pages x page bytes) and registers `buffer`
  // (pages x page bytes, aligned for O_DIRECT) with a new engine.
  static Result<std::unique_ptr<RawIo>> Create(const std::string& dir, uint64_t page,
                                               uint64_t pages, void* buffer);
  ~RawIo();
  RawIo(const RawIo&) = delete;
  RawIo& operator=(const RawIo&) = delete;

  // Moves every page (all submitted at once), then fdatasync for writes; returns seconds.
  Result<double> run(storage::IoOp op);
  storage::IoEngine& engine() { return *engine_; }

 private:
  RawIo() = default;
  uint64_t page_ = 0, pages_ = 0;
  char* buffer_ = nullptr;
  storage::UniqueFd fd_;
  std::unique_ptr<storage::IoEngine> engine_;
  int file_ = -1;
};

}  // namespace strata::bench
