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
//
// Note [Dropping checkpoints]
// A checkpoint is dropped (strata_checkpoint_drop, or the option keep_checkpoints after
// strata_checkpoint) as the trainer retires its own (Note [Checkpoint retirement] in
// scheduler/checkpoint.h): the record stops listing it first, durably, and its manifest is
// deleted after. A kill in between leaves a manifest no record lists, holding NVMe slots;
// the runtime deletes every such "embed-*" manifest when it opens the store to resume
// (Runtime::collect_unlisted), so they never pile up and fill the store.
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
  static Status CheckLayout(const Entry& entry, const Layout& layout);
  // Adds (or replaces) `name` as the newest checkpoint, keeps the newest `keep` (0: all), and
  // writes the record durably. Returns the manifests of the checkpoints it no longer lists, for
  // the caller to delete (Note [Dropping checkpoints]).
  Result<std::vector<std::string>> record(const std::string& name, int64_t step,
                                          const Layout& layout, uint64_t keep);
  // Stops listing `name`, durably, and returns its manifest for the caller to delete. NotFound
  // naming the checkpoints there are.
  Result<std::string> drop(const std::string& name);
  // Whether a checkpoint listed here has this manifest.
  bool lists_manifest(const std::string& manifest) const;

  static std::string ManifestName(const std::string& name) { return "embed-" + name; }
  // Whether a store's manifest is one of an embedder's checkpoints (ManifestName's form).
  static bool IsManifest(const std::string& manifest) { return manifest.rfind("embed-", 0) == 0; }
  // InvalidArgument unless 1-100 characters of [A-Za-z0-9._-].
  static Status CheckName(const std::string& name);

 private:
  explicit CheckpointBook(std::string dir) : dir_(std::move(dir)) {}
  Status write(const std::vector<Entry>& entries) const;
  std::string dir_;
  std::vector<Entry> entries_;
};

}  // namespace strata::embed
