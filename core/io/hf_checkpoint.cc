#include "core/io/hf_checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "core/util/check.h"
#include "core/util/option.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

Status InitFault(Status s) { return AtFault(Option::kInit, std::move(s)); }

// A JSON object read from `file` (config.json, the index).
Result<nlohmann::json> ReadJsonObject(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::FromErrno(errno, "open " + file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InitFault(Status::Corruption(file + " is not a JSON object; re-download it"));
  }
  return j;
}

// The shard files of an index, in order of first mention, each checked to exist, and which
// tensor the index places in which shard.
Result<std::pair<std::vector<std::string>, std::map<std::string, std::string>>> ReadIndex(
    const std::string& dir, const std::string& index_file) {
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json index, ReadJsonObject(index_file));
  const auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object()) {
    return InitFault(Status::Corruption(index_file + " has no \"weight_map\" object"));
  }
  std::vector<std::string> shards;
  std::map<std::string, std::string> placed;
  for (const auto& [tensor, shard] : map->items()) {
    if (!shard.is_string()) {
      return InitFault(Status::Corruption(index_file + ": the shard of " + tensor +
                                          " is not a file name"));
    }
    const std::string file = (fs::path(dir) / shard.get<std::string>()).string();
    placed[tensor] = file;
    if (std::find(shards.begin(), shards.end(), file) != shards.end()) continue;
    std::error_code ec;
    if (!fs::exists(file, ec)) {
      return InitFault(Status::NotFound("shard " + file + ", which " + index_file +
                                        " lists (it holds " + tensor +
                                        "), does not exist; download every shard"));
    }
    shards.push_back(file);
  }
  return std::make_pair(std::move(shards), std::move(placed));
}

}  // namespace

Status HfCheckpoint::add_file(const std::string& file) {
  STRATA_ASSIGN_OR_RETURN(SafetensorsReader reader, SafetensorsReader::Open(file));
  files_.push_back(std::move(reader));
  const size_t at = files_.size() - 1;
  const std::vector<SafetensorsEntry>& entries = files_[at].header().entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    const SafetensorsEntry& e = entries[i];
    const auto [it, added] = where_.emplace(e.name, std::make_pair(at, i));
    if (!added) {
      return InitFault(Status::Corruption("tensor " + e.name + " is in both " +
                                          files_[it->second.first].path() + " and " + file +
                                          "; a checkpoint holds each tensor once"));
    }
  }
  return Status::Ok();
}

Result<HfCheckpoint> HfCheckpoint::Open(const std::string& path) {
  HfCheckpoint c;
  c.path_ = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return InitFault(Status::NotFound(path + " does not exist; " + Mention(Option::kInit) +
                                      " takes a safetensors file or a Hugging Face model "
                                      "directory"));
  }
  if (!fs::is_directory(path, ec)) {
    STRATA_RETURN_IF_ERROR(c.add_file(path));
    return c;
  }
  const std::string config = (fs::path(path) / kHfConfigFile).string();
  if (!fs::exists(config, ec)) {
    return InitFault(Status::InvalidArgument(
        "directory " + path + " has no " + kHfConfigFile + "; " + Mention(Option::kInit) +
        " takes a safetensors file or a Hugging Face model directory (" + kHfConfigFile +
        " plus " + kHfWeightsFile + " or " + kHfIndexFile + ")"));
  }
  STRATA_ASSIGN_OR_RETURN(c.config_, ReadJsonObject(config));
  const std::string single = (fs::path(path) / kHfWeightsFile).string();
  const std::string index = (fs::path(path) / kHfIndexFile).string();
  if (fs::exists(index, ec)) {
    STRATA_ASSIGN_OR_RETURN(const auto shards, ReadIndex(path, index));
    for (const std::string& file : shards.first) STRATA_RETURN_IF_ERROR(c.add_file(file));
    for (const auto& [tensor, file] : shards.second) {
      if (c.file_of(tensor) != file) {
        return InitFault(Status::Corruption(index + " places " + tensor + " in " + file +
                                            ", which does not hold it; re-download the shards"));
      }
    }
    return c;
  }
  if (!fs::exists(single, ec)) {
    return InitFault(Status::NotFound("directory " + path + " has neither " + kHfWeightsFile +
                                      " nor " + kHfIndexFile + "; download the weights"));
  }
  STRATA_RETURN_IF_ERROR(c.add_file(single));
  return c;
}

std::vector<std::string> HfCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, at] : where_) out.push_back(name);
  return out;
}

const SafetensorsEntry* HfCheckpoint::find(const std::string& name) const {
  const auto it = where_.find(name);
  return it == where_.end() ? nullptr
                            : &files_[it->second.first].header().entries[it->second.second];
}

std::string HfCheckpoint::file_of(const std::string& name) const {
  const auto it = where_.find(name);
  return it == where_.end() ? "" : files_[it->second.first].path();
}

Status HfCheckpoint::read(const std::string& name, uint64_t first, uint64_t count,
                          float* out) const {
  const auto it = where_.find(name);
  STRATA_CHECK(it != where_.end()) << "read of " << name << ", which " << path_ << " lacks";
  const SafetensorsReader& file = files_[it->second.first];
  return file.read(file.header().entries[it->second.second], first, count, out);
}

}  // namespace strata
