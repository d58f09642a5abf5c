// CheckpointBook: the record of an embedder's checkpoints, <checkpoint_dir>/strata_checkpoints.json.
//
// A checkpoint is a manifest of the NVMe page store (every page's committed version, no copy of
// unchanged pages: memory::MemoryManager::save_snapshot) plus its entry here: its name, the
// manifest, the optimizer's step count, and the registered tensors (name, bytes, dtype, role,
// group, in order), against which a resumed runtime's registrations are checked: the pages are
// only meaningful for the same layout.
//   {"format": 1, "checkpoints": [{"name": "step-20", "manifest": "embed-step-20", "step": 20,
//    "page_bytes": 65536, "tensors": [["wte", 65536, 0, 0, "wte"], ...]}, ...]}
// The record is replaced durably (core/util/durable_file.h) after the manifest is durable, so a
// kill leaves the previous record or the new one, and every manifest it lists exists.
// Threads: one at a time (the Runtime's lock).
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "core/util/status.h"
#include "embed/layout.h"

namespace strata::embed {

class CheckpointBook {
 public:
  struct Entry {
    std::string name;
    std::string manifest;
    int64_t step = 0;
    uint64_t page_bytes = 0;
    std::vector<TensorInfo> tensors;  // page/offset unset
  };

  // Reads the record in `dir` (none yet: an empty book). Corruption for a record that does not
  // parse.
  static Result<std::unique_ptr<CheckpointBook>> Open(const std::string& dir);

  // NotFound naming the checkpoints there are.
  Result<const Entry*> find(const std::string& name) const;
  // FailedPrecondition naming the first difference between the checkpoint's tensors and the
  // layout's.
  Status check_layout(const std::string& name, const Layout& layout) const;
  // Adds (or replaces) `name` and writes the record durably.
  Status record(const std::string& name, int64_t step, const Layout& layout);

  static std::string ManifestName(const std::string& name) { return "embed-" + name; }
  // InvalidArgument unless 1-100 characters of [A-Za-z0-9._-].
  static Status CheckName(const std::string& name);

 private:
  explicit CheckpointBook(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::vector<Entry> entries_;
};

}  // namespace strata::embed
