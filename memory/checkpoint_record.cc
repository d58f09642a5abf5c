#include "memory/checkpoint_record.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/util/durable_file.h"

namespace strata::memory {
namespace {

using Json = nlohmann::json;
using Kind = CheckpointRecordFault::Kind;

// A record nests three levels ({"checkpoints": [{"fingerprint": {...}}]}); deeper text is
// refused before parsing, so that no input makes the parser or the destructor recurse deeply.
constexpr int kMaxRecordDepth = 4;

// The checksum of a record: XXH3-64 of its canonical text (nlohmann's objects sort their keys;
// every value is an integer, a string, or a list or object of those, so the text is unique).
std::string ChecksumOf(const Json& without_checksum) {
  const std::string text = without_checksum.dump(-1, ' ', false, Json::error_handler_t::replace);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  return hex;
}

Status Fault(Status status, Kind kind, const std::string& path) {
  return WithDetail(std::move(status), CheckpointRecordFault(kind, path));
}

Status Bad(const std::string& path, const std::string& what) {
  return Fault(Status::Corruption(path + " is not a Strata checkpoint record (" + what + ")"),
               Kind::kNotARecord, path);
}

Result<long> StepOf(const Json& j, const char* key, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    return Bad(path, std::string("\"") + key + "\" is missing or not an integer");
  }
  if (!it->is_number_unsigned() || it->get<uint64_t>() > uint64_t(1) << 53) {
    return Bad(path, std::string("\"") + key + "\" is not a step number");
  }
  return it->get<long>();
}

Result<std::string> TextOf(const Json& j, const char* key, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    return Bad(path, std::string("\"") + key + "\" is missing or not a string");
  }
  return it->get<std::string>();
}

// A format-1 record (an older trainer's): {"step", "manifest", "run"}, no checksum.
Result<CheckpointRecord> ParseFormat1(const Json& j, const std::string& path) {
  CheckpointRecord r;
  r.format = 1;
  STRATA_ASSIGN_OR_RETURN(long step, StepOf(j, "step", path));
  STRATA_ASSIGN_OR_RETURN(std::string manifest, TextOf(j, "manifest", path));
  STRATA_ASSIGN_OR_RETURN(r.run, TextOf(j, "run", path));
  r.set_checkpoints({{step, manifest}});
  return r;
}

// A "fingerprint" object of string values, into `out`.
Status FingerprintOf(const Json& j, const std::string& path, RecordFingerprint& out) {
  if (!j.is_object()) return Bad(path, "\"fingerprint\" is not an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) return Bad(path, "fingerprint " + it.key() + " is not a string");
    out[it.key()] = it.value().get<std::string>();
  }
  return Status::Ok();
}

// A named entry's name and fingerprint, when it has them.
Status NameOf(const Json& e, const std::string& path, CheckpointEntry& entry) {
  if (!e.contains("name")) {
    if (e.contains("fingerprint")) return Bad(path, "an unnamed checkpoint has a fingerprint");
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(entry.name, TextOf(e, "name", path));
  if (entry.name.empty()) return Bad(path, "a checkpoint's \"name\" is empty");
  auto fp = e.find("fingerprint");
  if (fp == e.end()) return Bad(path, "checkpoint '" + entry.name + "' has no fingerprint");
  return FingerprintOf(*fp, path, entry.fingerprint);
}

Result<CheckpointEntry> EntryOf(const Json& e, const std::string& path) {
  if (!e.is_object()) return Bad(path, "an entry of \"checkpoints\" is not an object");
  CheckpointEntry entry;
  STRATA_ASSIGN_OR_RETURN(entry.step, StepOf(e, "step", path));
  STRATA_ASSIGN_OR_RETURN(entry.manifest, TextOf(e, "manifest", path));
  STRATA_RETURN_IF_ERROR(NameOf(e, path, entry));
  if (entry.name.empty() && entry.manifest.rfind("step-", 0) != 0) {
    return Bad(path, "checkpoint manifest '" + entry.manifest + "' is not a step-* name");
  }
  if (entry.manifest.empty()) return Bad(path, "checkpoint '" + entry.name + "' has no manifest");
  return entry;
}

Result<std::vector<CheckpointEntry>> EntriesOf(const Json& j, const std::string& path) {
  auto it = j.find("checkpoints");
  if (it == j.end() || !it->is_array()) return Bad(path, "\"checkpoints\" is not a list");
  std::vector<CheckpointEntry> out;
  for (const Json& e : *it) {
    STRATA_ASSIGN_OR_RETURN(CheckpointEntry entry, EntryOf(e, path));
    if (!out.empty() && out[0].name.empty() != entry.name.empty()) {
      return Bad(path, "some checkpoints are named and some are not");
    }
    out.push_back(std::move(entry));
  }
  return out;
}

Status ReadDirsAndFingerprint(const Json& j, const std::string& path, CheckpointRecord& r) {
  auto dirs = j.find("nvme_dirs");
  if (dirs == j.end() || !dirs->is_array()) return Bad(path, "\"nvme_dirs\" is not a list");
  for (const Json& d : *dirs) {
    if (!d.is_string()) return Bad(path, "an entry of \"nvme_dirs\" is not a string");
    r.nvme_dirs.push_back(d.get<std::string>());
  }
  auto fp = j.find("fingerprint");
  if (fp == j.end()) return Bad(path, "\"fingerprint\" is not an object");
  return FingerprintOf(*fp, path, r.fingerprint);
}

// Each step once (numbered) or each name once (named).
Status CheckDistinct(const CheckpointRecord& r, const std::string& path) {
  std::set<std::string> names;
  for (size_t i = 0; i < r.checkpoints.size(); ++i) {
    const CheckpointEntry& e = r.checkpoints[i];
    if (e.name.empty() && i > 0 && e.step == r.checkpoints[i - 1].step) {
      return Bad(path, "step " + std::to_string(e.step) + " is listed twice");
    }
    if (!e.name.empty() && !names.insert(e.name).second) {
      return Bad(path, "checkpoint '" + e.name + "' is listed twice");
    }
  }
  return Status::Ok();
}

Result<CheckpointRecord> ParseFormat2(Json j, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string checksum, TextOf(j, "checksum", path));
  j.erase("checksum");
  const std::string actual = ChecksumOf(j);
  if (checksum != actual) {
    return Fault(Status::Corruption(path + ": checksum mismatch (recorded " + checksum +
                                    ", the content hashes to " + actual +
                                    "): the record was edited or damaged after Strata wrote it; "
                                    "put back the file Strata wrote"),
                 Kind::kChecksum, path);
  }
  CheckpointRecord r;
  STRATA_ASSIGN_OR_RETURN(r.step, StepOf(j, "step", path));
  STRATA_ASSIGN_OR_RETURN(r.manifest, TextOf(j, "manifest", path));
  STRATA_ASSIGN_OR_RETURN(r.run, TextOf(j, "run", path));
  STRATA_ASSIGN_OR_RETURN(r.store_id, TextOf(j, "store_id", path));
  STRATA_ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries, EntriesOf(j, path));
  STRATA_RETURN_IF_ERROR(ReadDirsAndFingerprint(j, path, r));
  const long step = r.step;
  const std::string manifest = r.manifest;
  r.set_checkpoints(std::move(entries));
  if (r.step != step || r.manifest != manifest) {
    return Bad(path, "\"step\" and \"manifest\" are not the newest of \"checkpoints\"");
  }
  STRATA_RETURN_IF_ERROR(CheckDistinct(r, path));
  return r;
}

Result<CheckpointRecord> ParseJson(std::string_view text, const std::string& path) {
  if (JsonNestsDeeperThan(text, kMaxRecordDepth)) return Bad(path, "nested too deeply");
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad(path, "not JSON");
  if (!j.is_object()) return Bad(path, "not a JSON object");
  auto format = j.find("format");
  if (format == j.end()) return ParseFormat1(j, path);
  if (!format->is_number_unsigned()) return Bad(path, "\"format\" is not a version number");
  if (format->get<uint64_t>() != uint64_t(kCheckpointRecordFormat)) {
    return Fault(Status::NotSupported(path + " has checkpoint record format " + format->dump() +
                                      "; this Strata reads formats 1 and 2: use the Strata that "
                                      "wrote it"),
                 Kind::kFormat, path);
  }
  return ParseFormat2(std::move(j), path);
}

}  // namespace

bool JsonNestsDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

void CheckpointRecord::set_checkpoints(std::vector<CheckpointEntry> entries) {
  const bool named = !entries.empty() && !entries[0].name.empty();
  if (!named) {
    std::stable_sort(
        entries.begin(), entries.end(),
        [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step > b.step; });
  }
  checkpoints = std::move(entries);
  step = checkpoints.empty() ? 0 : checkpoints[0].step;
  manifest = checkpoints.empty() ? "" : checkpoints[0].manifest;
}

std::vector<CheckpointEntry> CheckpointRecord::push_newest(CheckpointEntry entry, uint64_t keep) {
  std::vector<CheckpointEntry> next, gone;
  for (CheckpointEntry& e : checkpoints) {
    const bool superseded = entry.name.empty() ? e.step >= entry.step : e.name == entry.name;
    if (superseded && e.manifest == entry.manifest) continue;  // saved again in its place
    if (!superseded && (keep == 0 || next.size() + 1 < keep)) {
      next.push_back(std::move(e));
    } else {
      gone.push_back(std::move(e));
    }
  }
  next.insert(next.begin(), std::move(entry));
  set_checkpoints(std::move(next));
  return gone;
}

const CheckpointEntry* CheckpointRecord::find(long s) const {
  for (const CheckpointEntry& e : checkpoints) {
    if (e.step == s) return &e;
  }
  return nullptr;
}

const CheckpointEntry* CheckpointRecord::find_named(const std::string& name) const {
  for (const CheckpointEntry& e : checkpoints) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

bool CheckpointRecord::lists_manifest(const std::string& m) const {
  for (const CheckpointEntry& e : checkpoints) {
    if (e.manifest == m) return true;
  }
  return false;
}

std::string CheckpointRecord::steps_text() const {
  std::string out;
  for (const CheckpointEntry& e : checkpoints) {
    out += (out.empty() ? "" : ", ") + std::to_string(e.step);
  }
  return out.empty() ? "none" : out;
}

Result<CheckpointRecord> ParseCheckpointRecord(std::string_view text,
                                               const std::string& path_for_messages) {
  try {
    return ParseJson(text, path_for_messages);
  } catch (const std::exception& e) {  // nlohmann's type errors; none expected after the checks
    return Bad(path_for_messages, e.what());
  }
}

std::string CheckpointRecordJson(const CheckpointRecord& r) {
  Json list = Json::array();
  for (const CheckpointEntry& e : r.checkpoints) {
    Json entry = {{"step", e.step}, {"manifest", e.manifest}};
    if (!e.name.empty()) {
      entry["name"] = e.name;
      entry["fingerprint"] = e.fingerprint;
    }
    list.push_back(std::move(entry));
  }
  Json j = {{"format", kCheckpointRecordFormat}, {"step", r.step},
            {"manifest", r.manifest},            {"run", r.run},
            {"checkpoints", list},               {"store_id", r.store_id},
            {"nvme_dirs", r.nvme_dirs},          {"fingerprint", r.fingerprint}};
  j["checksum"] = ChecksumOf(j);
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<std::optional<std::string>> ReadCheckpointRecordText(const std::string& dir,
                                                            const std::string& file) {
  const std::string path = dir + "/" + file;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<std::string>();
  const uint64_t bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxCheckpointRecordBytes) {
    return Bad(path, std::to_string(bytes) + " bytes, far more than a record holds");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fault(Status::FromErrno(errno, "cannot read " + path), Kind::kUnreadable, path);
  std::stringstream ss;
  ss << in.rdbuf();
  return std::optional<std::string>(ss.str());
}

Result<std::optional<CheckpointRecord>> ReadCheckpointRecord(const std::string& dir,
                                                             const std::string& file) {
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadCheckpointRecordText(dir, file));
  if (!text) return std::optional<CheckpointRecord>();
  STRATA_ASSIGN_OR_RETURN(CheckpointRecord r, ParseCheckpointRecord(*text, dir + "/" + file));
  return std::optional<CheckpointRecord>(std::move(r));
}

Status WriteCheckpointRecord(const std::string& dir, const std::string& file,
                             const CheckpointRecord& record, const std::string& dir_what) {
  return WriteFileDurably(dir, file, CheckpointRecordJson(record), dir_what);
}

}  // namespace strata::memory
