// Fuzz target safetensors_header (see fuzz_targets.h).
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/io/safetensors.h"
#include "core/util/check.h"
#include "tests/fuzz/fuzz_targets.h"

namespace strata::fuzz {
namespace {

// Re-encodes `file` as the F32 file WriteSafetensors would write, in memory.
Result<std::string> EncodeF32(const SafetensorsFile& file) {
  std::vector<TensorView> views;
  for (const auto& [name, t] : file.tensors) views.push_back({name, t.shape, t.data.data()});
  STRATA_ASSIGN_OR_RETURN(std::string bytes, EncodeSafetensorsHeader(views, file.metadata, "fuzz"));
  for (const auto& [name, t] : file.tensors) {  // std::map: in name order, as the format wants
    bytes.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
  }
  return bytes;
}

}  // namespace

bool FuzzSafetensorsHeader(std::string_view bytes) {
  Result<SafetensorsFile> file = ParseSafetensors(bytes, "fuzz");
  if (!file.ok()) {
    STRATA_CHECK(!file.status().message().empty()) << "an error without a message";
    return false;
  }
  for (const auto& [name, t] : file->tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    STRATA_CHECK_EQ(numel, t.data.size()) << "tensor '" << name << "'";
    // Every element came from the input: the data can never outgrow it.
    STRATA_CHECK_LE(t.data.size() * 2, bytes.size()) << "tensor '" << name << "'";
  }
  // The writer refuses an empty tensor name, which the format (and so the reader) allows.
  if (file->tensors.count("") != 0) return true;
  Result<std::string> again = EncodeF32(*file);
  STRATA_CHECK(again.ok()) << "a file that parsed does not re-encode: "
                           << again.status().to_string();
  Result<SafetensorsFile> back = ParseSafetensors(*again, "fuzz (re-encoded)");
  STRATA_CHECK(back.ok()) << "a re-encoded file does not parse: " << back.status().to_string();
  STRATA_CHECK(back->metadata == file->metadata) << "metadata changed in the round trip";
  STRATA_CHECK_EQ(back->tensors.size(), file->tensors.size());
  for (const auto& [name, t] : file->tensors) {
    const auto it = back->tensors.find(name);
    STRATA_CHECK(it != back->tensors.end()) << "tensor '" << name << "' lost in the round trip";
    const SafetensorsTensor& u = it->second;
    STRATA_CHECK(u.dtype == "F32" && u.shape == t.shape && u.data.size() == t.data.size())
        << "tensor '" << name << "' changed in the round trip";
    // Bitwise: NaN payloads and signed zeros must survive too.
    STRATA_CHECK(t.data.empty() ||
                 std::memcmp(u.data.data(), t.data.data(), t.data.size() * sizeof(float)) == 0)
        << "tensor '" << name << "': values changed in the round trip";
  }
  return true;
}

}  // namespace strata::fuzz
