// A checkpoint as Hugging Face publishes one, as a source of named tensors read range by range:
// - one safetensors file; or
// - a model directory: config.json plus model.safetensors, or plus model.safetensors.index.json
//   whose "weight_map" names the shard file of every tensor (model-00001-of-00002.safetensors...).
// Only headers are read when it is opened; tensors are read later, an element range at a time
// (SafetensorsReader), so a model larger than memory is never held whole. The shapes and the
// config are facts for the model that reads them (which tensors it needs, what config.json's
// keys mean): this file knows no model.
//
// Thread safety: after Open, read() may be called from several threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/io/safetensors_reader.h"
#include "core/util/status.h"

namespace strata {

inline constexpr const char* kHfConfigFile = "config.json";
inline constexpr const char* kHfWeightsFile = "model.safetensors";
inline constexpr const char* kHfIndexFile = "model.safetensors.index.json";

class HfCheckpoint {
 public:
  // Errors, each naming the file at fault (an OptionFault on `init`):
  // - NotFound: `path` does not exist; a directory with neither model.safetensors nor the index;
  //   a shard the index lists that is absent;
  // - InvalidArgument: a directory without config.json;
  // - Corruption: config.json or the index is not the JSON object it should be; a tensor the
  //   index places in a shard that does not hold it; a tensor in two files;
  // - the SafetensorsReader's errors for each file.
  static Result<HfCheckpoint> Open(const std::string& path);

  const std::string& path() const { return path_; }
  // config.json, for a model directory; nullopt for a lone safetensors file.
  const std::optional<nlohmann::json>& config() const { return config_; }
  // Every tensor's name, sorted.
  std::vector<std::string> names() const;
  // The tensor named `name` (dtype, shape, element count), or nullptr.
  const SafetensorsEntry* find(const std::string& name) const;
  // The file that holds `name` (for messages); "" if none does.
  std::string file_of(const std::string& name) const;
  // Elements [first, first + count) of tensor `name` (which must exist: checked), as floats.
  [[nodiscard]] Status read(const std::string& name, uint64_t first, uint64_t count,
                            float* out) const;

 private:
  HfCheckpoint() = default;
  Status add_file(const std::string& file);

  std::string path_;
  std::optional<nlohmann::json> config_;
  std::vector<SafetensorsReader> files_;
  // name -> (index into files_, index of its entry in that file's header)
  std::map<std::string, std::pair<size_t, size_t>> where_;
};

}  // namespace strata
