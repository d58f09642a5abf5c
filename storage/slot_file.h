// SlotFile: one preallocated file per NVMe directory, <dir>/strata.slots, cut into fixed-size
// slots (one page version each). Slot i lives at byte offset i * slot_bytes.
//
// Contract:
// - A new store's files are created under the pending name strata.slots.new and publish()ed
//   (renamed to strata.slots) once the store's catalog exists, so that a crash during creation
//   leaves only files that are recognisably unfinished (Note [Creating a store], page_store_open.cc).
// - Create() checks free space first and fails with ResourceExhausted naming the directory,
//   the bytes needed and the bytes free, in NoSpaceError's words ("No space left on device
//   (ENOSPC)"); it then fallocates the whole file so that a full disk can never surface later
//   as a failed page write (fallocate's own ENOSPC is worded the same). On any failure it
//   removes the file it created: nothing is left behind.
// - Open() opens an existing file and checks its size (a shorter file is Corruption).
// - Files are opened O_DIRECT. Where the filesystem refuses O_DIRECT (EINVAL), DirectIo::kAuto
//   reopens buffered and reports direct_io() == false (the caller then uses the sync engine and
//   fdatasync for durability); DirectIo::kRequire fails with NotSupported naming the path.
// - Thread-safe after construction (all accessors are const; sync() is fdatasync).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/util/status.h"
#include "storage/fault_injector.h"
#include "storage/posix_file.h"

namespace strata::storage {

inline constexpr const char* kSlotFileName = "strata.slots";

enum class DirectIo : uint8_t { kAuto, kRequire };

struct SlotFileOptions {
  std::string dir;
  uint64_t slot_bytes = 0;  // multiple of 4 KiB
  uint64_t slots = 0;
  DirectIo direct_io = DirectIo::kAuto;
  bool pending = false;             // Create(): use the pending name strata.slots.new
  // Borrowed; refuse_direct_io() is honoured at open, refuse_fallocate() by Create and extend.
  FaultInjector* faults = nullptr;
};

class SlotFile {
 public:
  static std::string PathFor(const std::string& dir);
  static std::string PendingPathFor(const std::string& dir) { return PathFor(dir) + ".new"; }
  static Result<std::unique_ptr<SlotFile>> Create(const SlotFileOptions& options);
  static Result<std::unique_ptr<SlotFile>> Open(const SlotFileOptions& options);
  // Bytes a slot file of `slots` slots needs on disk.
  static uint64_t BytesFor(uint64_t slots, uint64_t slot_bytes) { return slots * slot_bytes; }

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }
  uint64_t slots() const { return slots_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint64_t offset_of(uint64_t slot) const { return slot * slot_bytes_; }
  bool direct_io() const { return direct_io_; }
  [[nodiscard]] Status sync() const;
  // Grows the file to `slots` slots (fallocate, fsync). ResourceExhausted on a full disk, in
  // NoSpaceError's words (the file keeps its old slots usable). No-op when it has that many
  // already.
  [[nodiscard]] Status extend(uint64_t slots);
  // Renames a pending file to its final name, durably. No-op when not pending.
  [[nodiscard]] Status publish();

 private:
  SlotFile() = default;
  static Result<std::unique_ptr<SlotFile>> OpenFile(const SlotFileOptions& options, bool create);
  // A created file's slots, allocated whole and made durable; a file this open created is
  // removed again when that fails (`existed`: it was there before).
  Status allocate_whole(bool existed);
  // An existing file is at least as long as its slots (only a shorter one is Corruption).
  Status check_length() const;

  UniqueFd fd_;
  std::string dir_;
  std::string path_;
  uint64_t slots_ = 0;
  uint64_t slot_bytes_ = 0;
  bool direct_io_ = true;
  FaultInjector* faults_ = nullptr;  // borrowed
};

}  // namespace strata::storage
