// CheckpointRecord: the one record of which NVMe page-store manifests hold which checkpoints,
// shared by both kinds of checkpoint Strata makes:
//   - the trainer's, <--ckpt-dir>/checkpoint.json (scheduler/checkpoint.h): numbered by step;
//   - the C API's, <checkpoint_dir>/strata_checkpoints.json (embed/checkpoint_book.h): named.
// A checkpoint is a manifest of the NVMe page store (storage/page_store.h: a durable snapshot
// of every page's current version, no copy of unchanged pages) plus its entry here.
//
// Format 2, the one both write:
//   {"format": 2,
//    "step": 6, "manifest": "step-00000006",   the newest checkpoint (0 and "" when none)
//    "run": "<one line>",                      the trainer's run in words; "" for the C API
//    "checkpoints": [{"step": 6, "manifest": "step-00000006"}, ...],       newest first
//    "store_id": "9f2c...",                    the store's id (NvmeTierSnapshots::id), or ""
//    "nvme_dirs": ["/abs/nvme0", ...],         where that store lives
//    "fingerprint": {"<key>": "<value>", ...}, what a resume must match (see below)
//    "checksum": "<16 hex digits>"}            XXH3-64 of the canonical JSON (sorted keys, no
//                                              spaces) of every other field
// A named checkpoint's entry adds its "name" and its own "fingerprint":
//    {"step": 20, "manifest": "embed-step-20", "name": "step-20", "fingerprint": {...}}
// and is written only when set: the trainer's record is byte for byte what it was before the
// C API shared it.
//
// Note [Record fingerprint]
// The fingerprint is the facts a run must repeat for a checkpoint's pages to mean the same
// thing, as strings. This file gives them no meaning; each user states its own:
//   - the trainer: the record's "fingerprint", one per record (every checkpoint listed is of
//     the run that wrote it): the run's options and model (scheduler/run_fingerprint.h);
//   - the C API: each entry's own "fingerprint" (a checkpoint_dir may list checkpoints of
//     several runtimes, one after another): the page size and every registered tensor (name,
//     bytes, dtype, role, group, in order); the record's is empty.
//
// Order: a record whose checkpoints are numbered only (no names: the trainer's) lists them by
// step, newest first, each step once. A record of named checkpoints lists them in the order
// they were made, newest first, each name once: a runtime resumed from an older checkpoint may
// save one with a lower step than one listed.
//
// Format 1 (no "format" key: an older trainer's {"step", "manifest", "run"}) is read as one
// numbered checkpoint with no store id, fingerprint or checksum. The C API's older record
// (format 1 with a "checkpoints" list) is the C API's to read (embed/checkpoint_book.h); here
// an explicit "format": 1 is NotSupported, as any format but 2.
//
// Errors are facts: they name the file and what is wrong with it, and carry a
// CheckpointRecordFault detail. What to do about it names options, so each caller says it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace strata::memory {

inline constexpr int kCheckpointRecordFormat = 2;
// Records above this size are refused unread (a real one is a few KiB; a C API record lists
// every registered tensor of every checkpoint, some hundred bytes each).
inline constexpr uint64_t kMaxCheckpointRecordBytes = 16 << 20;

using RecordFingerprint = std::map<std::string, std::string>;

struct CheckpointEntry {
  long step = 0;         // optimizer steps done when it was saved
  std::string manifest;  // the store's manifest that holds its pages
  // The named checkpoint's (the C API's); {step, manifest} stays a whole initializer, as
  // members with default initializers need none.
  std::string name = {};  // "" for a checkpoint numbered by step only (the trainer's)
  RecordFingerprint fingerprint = {};  // its own (Note [Record fingerprint]); empty: the record's
  friend bool operator==(const CheckpointEntry&, const CheckpointEntry&) = default;
};

struct CheckpointRecord {
  int format = kCheckpointRecordFormat;  // 1: an older trainer's record (step, manifest, run)
  long step = 0;                         // the newest checkpoint (checkpoints[0]); 0 when none
  std::string manifest;                  // its manifest; "" when none
  std::string run;                       // one line for people; "" when none
  std::vector<CheckpointEntry> checkpoints;  // newest first
  std::string store_id;                      // "" in a format-1 record or when unknown
  std::vector<std::string> nvme_dirs;        // absolute; empty in a format-1 record
  RecordFingerprint fingerprint;             // Note [Record fingerprint]; empty in format 1

  // Sets checkpoints and step/manifest from the first. Numbered entries are sorted newest
  // first by step; named ones are taken in the order given (newest first).
  void set_checkpoints(std::vector<CheckpointEntry> entries);
  // Makes `entry` the newest checkpoint and keeps the newest `keep` (0: all). The entries it
  // supersedes go (a named entry: one of its name; a numbered one: those of its step or later,
  // which a resume from an older step left behind). Returns the entries no longer listed whose
  // manifests the caller deletes once this record is durable (not one the entry reuses).
  std::vector<CheckpointEntry> push_newest(CheckpointEntry entry, uint64_t keep);
  // The listed entry of `step` (numbered) or of `name` (named), or nullptr.
  const CheckpointEntry* find(long step) const;
  const CheckpointEntry* find_named(const std::string& name) const;
  // Whether a listed entry has this manifest.
  bool lists_manifest(const std::string& manifest) const;
  // "6, 4" (the steps, newest first); "none" when empty.
  std::string steps_text() const;
};

// The Status detail of a record that cannot be used, for the caller's advice
// (DetailOf<CheckpointRecordFault>(status)).
struct CheckpointRecordFault {
  enum class Kind : uint8_t {
    kNotARecord,   // not JSON, or a field missing or of the wrong type (Corruption)
    kChecksum,     // parses, but its checksum does not match its content (Corruption)
    kFormat,       // a format this Strata does not read (NotSupported)
    kUnreadable,   // the file cannot be read (the errno's code)
  };
  CheckpointRecordFault(Kind k, std::string p) : kind(k), path(std::move(p)) {}
  Kind kind;
  std::string path;
};

// Whether JSON `text` nests lists and objects deeper than `max_depth` (a guard before a parser
// that recurses; text that is not JSON is judged by its brackets outside strings).
bool JsonNestsDeeperThan(std::string_view text, int max_depth);

// Parses the text of a record. Pure: never throws, reads nothing else, allocates only in
// proportion to `text`. Corruption naming `path_for_messages` for text that is not a record
// (with the field at fault) or whose checksum does not match its content (both sums);
// NotSupported for another format. Every error carries a CheckpointRecordFault.
Result<CheckpointRecord> ParseCheckpointRecord(std::string_view text,
                                               const std::string& path_for_messages);
// The record's JSON (with its checksum), as WriteCheckpointRecord writes it.
std::string CheckpointRecordJson(const CheckpointRecord& record);

// The text of <dir>/<file>; nullopt when it does not exist. Refuses (kNotARecord) a file over
// kMaxCheckpointRecordBytes unread; kUnreadable with the errno's code when it cannot be read.
Result<std::optional<std::string>> ReadCheckpointRecordText(const std::string& dir,
                                                            const std::string& file);
// nullopt when <dir>/<file> does not exist; else ReadCheckpointRecordText's and
// ParseCheckpointRecord's errors.
Result<std::optional<CheckpointRecord>> ReadCheckpointRecord(const std::string& dir,
                                                             const std::string& file);
// Creates `dir` if needed; atomic and durable (a temporary file, fsync, rename, fsync of the
// directory: a kill leaves the old record or the new one). IoError naming `dir_what` (how the
// caller's user names the directory) and the path.
Status WriteCheckpointRecord(const std::string& dir, const std::string& file,
                             const CheckpointRecord& record, const std::string& dir_what);

}  // namespace strata::memory
