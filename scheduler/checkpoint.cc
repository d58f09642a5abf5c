#include "scheduler/checkpoint.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/util/durable_file.h"

namespace strata::scheduler {
namespace {

using Json = nlohmann::json;

// A record nests two levels ({"checkpoints": [{...}]}); deeper text is refused before parsing,
// so that no input makes the parser or the destructor recurse deeply.
constexpr int kMaxRecordDepth = 4;

bool NestsDeeperThan(std::string_view text, int max_depth) {
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

// The checksum of a record: XXH3-64 of its canonical text (nlohmann's objects sort their keys;
// every value is an integer or a string, so the text is unique).
std::string ChecksumOf(const Json& without_checksum) {
  const std::string text = without_checksum.dump(-1, ' ', false, Json::error_handler_t::replace);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  return hex;
}

Status Bad(const std::string& path, const std::string& what) {
  return Status::Corruption(path + " is not a Strata checkpoint record (" + what +
                            "); put back the file Strata wrote, or start a new run in an empty "
                            "--ckpt-dir and --nvme-dir");
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

// A format-1 record: {"step", "manifest", "run"}, no checksum.
Result<CheckpointRecord> ParseFormat1(const Json& j, const std::string& path) {
  CheckpointRecord r;
  r.format = 1;
  STRATA_ASSIGN_OR_RETURN(long step, StepOf(j, "step", path));
  STRATA_ASSIGN_OR_RETURN(std::string manifest, TextOf(j, "manifest", path));
  STRATA_ASSIGN_OR_RETURN(r.run, TextOf(j, "run", path));
  r.set_checkpoints({{step, manifest}});
  return r;
}

Result<std::vector<CheckpointEntry>> EntriesOf(const Json& j, const std::string& path) {
  auto it = j.find("checkpoints");
  if (it == j.end() || !it->is_array()) return Bad(path, "\"checkpoints\" is not a list");
  std::vector<CheckpointEntry> out;
  for (const Json& e : *it) {
    if (!e.is_object()) return Bad(path, "an entry of \"checkpoints\" is not an object");
    CheckpointEntry entry;
    STRATA_ASSIGN_OR_RETURN(entry.step, StepOf(e, "step", path));
    STRATA_ASSIGN_OR_RETURN(entry.manifest, TextOf(e, "manifest", path));
    if (!IsCheckpointManifest(entry.manifest)) {
      return Bad(path, "checkpoint manifest '" + entry.manifest + "' is not a step-* name");
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
  if (fp == j.end() || !fp->is_object()) return Bad(path, "\"fingerprint\" is not an object");
  for (auto it = fp->begin(); it != fp->end(); ++it) {
    if (!it.value().is_string()) return Bad(path, "fingerprint " + it.key() + " is not a string");
    r.fingerprint[it.key()] = it.value().get<std::string>();
  }
  return Status::Ok();
}

Result<CheckpointRecord> ParseFormat2(Json j, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string checksum, TextOf(j, "checksum", path));
  j.erase("checksum");
  const std::string actual = ChecksumOf(j);
  if (checksum != actual) {
    return Status::Corruption(
        path + ": checksum mismatch (recorded " + checksum + ", the content hashes to " + actual +
        "): the record was edited or damaged after Strata wrote it; put back the file Strata "
        "wrote (to resume from an older listed checkpoint use --resume-from STEP, never an edit)");
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
  for (size_t i = 1; i < r.checkpoints.size(); ++i) {
    if (r.checkpoints[i].step == r.checkpoints[i - 1].step) {
      return Bad(path, "step " + std::to_string(r.checkpoints[i].step) + " is listed twice");
    }
  }
  return r;
}

Result<CheckpointRecord> ParseJson(std::string_view text, const std::string& path) {
  if (NestsDeeperThan(text, kMaxRecordDepth)) return Bad(path, "nested too deeply");
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad(path, "not JSON");
  if (!j.is_object()) return Bad(path, "not a JSON object");
  auto format = j.find("format");
  if (format == j.end()) return ParseFormat1(j, path);
  if (!format->is_number_unsigned()) return Bad(path, "\"format\" is not a version number");
  if (format->get<uint64_t>() != uint64_t(kCheckpointFormat)) {
    return Status::NotSupported(
        path + " has checkpoint record format " + format->dump() +
        "; this Strata reads formats 1 and 2: use the Strata that wrote it");
  }
  return ParseFormat2(std::move(j), path);
}

}  // namespace

void CheckpointRecord::set_checkpoints(std::vector<CheckpointEntry> entries) {
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step > b.step; });
  checkpoints = std::move(entries);
  step = checkpoints.empty() ? 0 : checkpoints[0].step;
  manifest = checkpoints.empty() ? "" : checkpoints[0].manifest;
}

const CheckpointEntry* CheckpointRecord::find(long s) const {
  for (const CheckpointEntry& e : checkpoints) {
    if (e.step == s) return &e;
  }
  return nullptr;
}

std::string CheckpointRecord::steps_text() const {
  std::string out;
  for (const CheckpointEntry& e : checkpoints) {
    out += (out.empty() ? "" : ", ") + std::to_string(e.step);
  }
  return out.empty() ? "none" : out;
}

std::string ManifestNameForStep(long step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08ld", step);
  return buf;
}

bool IsCheckpointManifest(const std::string& name) { return name.rfind("step-", 0) == 0; }

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
    list.push_back({{"step", e.step}, {"manifest", e.manifest}});
  }
  Json j = {{"format", kCheckpointFormat}, {"step", r.step},
            {"manifest", r.manifest},      {"run", r.run},
            {"checkpoints", list},         {"store_id", r.store_id},
            {"nvme_dirs", r.nvme_dirs},    {"fingerprint", r.fingerprint}};
  j["checksum"] = ChecksumOf(j);
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<std::optional<CheckpointRecord>> ReadCheckpointRecord(const std::string& dir) {
  const std::string path = dir + "/" + kCheckpointFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<CheckpointRecord>();
  const uint64_t bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxCheckpointRecordBytes) {
    return Bad(path, std::to_string(bytes) + " bytes, far more than a record holds");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno(errno, "--ckpt-dir: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  STRATA_ASSIGN_OR_RETURN(CheckpointRecord r, ParseCheckpointRecord(ss.str(), path));
  return std::optional<CheckpointRecord>(std::move(r));
}

Status WriteCheckpointRecord(const std::string& dir, const CheckpointRecord& record) {
  return WriteFileDurably(dir, kCheckpointFile, CheckpointRecordJson(record), "--ckpt-dir");
}

}  // namespace strata::scheduler
