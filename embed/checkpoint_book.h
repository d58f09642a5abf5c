// CheckpointBook: the record of an embedder's checkpoints, <checkpoint_dir>/strata_checkpoints.json.
//
// A checkpoint is a manifest of the NVMe page store (every page's committed version, no copy of
// unchanged pages: memory::MemoryManager::save_snapshot) plus its entry here. The record is the
// trainer's (memory/checkpoint_record.h, format 2: a checksum over every field, the newest
// first, the newest `keep_checkpoints` kept), with named entries: each holds its name, the
// manifest, the optimizer's step count and its fingerprint (Note [Embedder fingerprint]), against
// which a resumed runtime's registrations are checked: the pages are only meaningful for the
// same layout.
//   {"format": 2, "step": 20, "manifest": "embed-step-20", "run": "", "store_id": "",
//    "checkpoints": [{"name": "step-20", "manifest": "embed-step-20", "step": 20,
//                     "fingerprint": {"page_size": "65536", "tensors": "2",
//                                     "tensor 00000": "[\"wte\",65536,0,0,\"wte\"]", ...}}, ...],
//    "nvme_dirs": ["/abs/nvme"], "fingerprint": {}, "checksum": "0f3a..."}
// The record is replaced durably after the manifest is durable, so a kill leaves the previous
// record or the new one, and every manifest it lists exists.
//
// Note [Embedder fingerprint]
// What a runtime must repeat to resume a checkpoint, as the record's strings: "page_size" (bytes),
// "tensors" (how many were registered) and "tensor NNNNN" for each in order, the JSON list
// [name, bytes, dtype, role, group]. It is each entry's own, not the record's: a checkpoint_dir
// may list checkpoints of several runtimes, one after another (with their own nvme_dir each).
//
// Note [Format-1 records]
// Before the C API shared the trainer's record, it wrote {"format": 1, "checkpoints": [{"name",
// "manifest", "step", "page_bytes", "tensors": [[name, bytes, dtype, role, group], ...]}]}, with
// no checksum. Such a record is still read: each entry becomes a named entry with the same
// fingerprint, and the first checkpoint or drop rewrites the whole record in format 2 (which an
// older Strata refuses as not its record). Nothing is written until then, so a resume alone
// leaves the file as it was.
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
#include "memory/checkpoint_record.h"

namespace strata::embed {

class CheckpointBook {
 public:
  // name, manifest, step and fingerprint (Note [Embedder fingerprint]).
  using Entry = memory::CheckpointEntry;

  // Reads the record in `dir` (none yet: an empty book), format 2 or 1 (Note [Format-1
  // records]). Corruption naming the file, what is wrong and what to do for a record that does
  // not parse or fails its checksum; NotSupported for a newer format.
  static Result<std::unique_ptr<CheckpointBook>> Open(const std::string& dir);

  // NotFound naming the checkpoints there are.
  Result<const Entry*> find(const std::string& name) const;
  // FailedPrecondition naming the first difference between the checkpoint's fingerprint and the
  // layout's.
  static Status CheckLayout(const Entry& entry, const Layout& layout);
  // Adds (or replaces) `name` as the newest checkpoint, keeps the newest `keep` (0: all), and
  // writes the record durably, naming `nvme_dirs` as the store's place. Returns the manifests of
  // the checkpoints it no longer lists, for the caller to delete (Note [Dropping checkpoints]).
  Result<std::vector<std::string>> record(const std::string& name, int64_t step,
                                          const Layout& layout, uint64_t keep,
                                          const std::vector<std::string>& nvme_dirs);
  // Stops listing `name`, durably, and returns its manifest for the caller to delete. NotFound
  // naming the checkpoints there are.
  Result<std::string> drop(const std::string& name);
  // Whether a checkpoint listed here has this manifest.
  bool lists_manifest(const std::string& manifest) const {
    return record_.lists_manifest(manifest);
  }

  static std::string ManifestName(const std::string& name) { return "embed-" + name; }
  // Whether a store's manifest is one of an embedder's checkpoints (ManifestName's form).
  static bool IsManifest(const std::string& manifest) { return manifest.rfind("embed-", 0) == 0; }
  // InvalidArgument unless 1-100 characters of [A-Za-z0-9._-].
  static Status CheckName(const std::string& name);
  // Note [Embedder fingerprint] of a layout's tensors (their page/offset unused).
  static memory::RecordFingerprint Fingerprint(uint64_t page_bytes,
                                               const std::vector<TensorInfo>& tensors);

 private:
  explicit CheckpointBook(std::string dir) : dir_(std::move(dir)) {}
  Status write(const memory::CheckpointRecord& record) const;
  std::string dir_;
  memory::CheckpointRecord record_;
};

// Note [Format-1 records]: whether `text` is such a record, and its entries (newest first).
// Corruption naming `path` when it is one but an entry does not parse.
bool IsFormat1Book(std::string_view text);
Result<std::vector<CheckpointBook::Entry>> ParseFormat1Book(std::string_view text,
                                                            const std::string& path);

}  // namespace strata::embed
