// Note [Format-1 records] in checkpoint_book.h: the C API's record before it shared the
// trainer's, read into named entries of the shared record.
#include <nlohmann/json.hpp>

#include "embed/checkpoint_book.h"

namespace strata::embed {
namespace {

using Json = nlohmann::json;

// One entry as the format-1 writer wrote it; nlohmann's at()/get() throw on what is not.
CheckpointBook::Entry EntryFrom(const Json& j) {
  std::vector<TensorInfo> tensors;
  for (const Json& t : j.at("tensors")) {
    tensors.push_back({t.at(0).get<std::string>(), t.at(1).get<uint64_t>(), t.at(2).get<int>(),
                       t.at(3).get<int>(), t.at(4).get<std::string>()});
  }
  CheckpointBook::Entry e;
  e.name = j.at("name").get<std::string>();
  e.manifest = j.at("manifest").get<std::string>();
  e.step = j.at("step").get<int64_t>();
  e.fingerprint = CheckpointBook::Fingerprint(j.at("page_bytes").get<uint64_t>(), tensors);
  return e;
}

}  // namespace

bool IsFormat1Book(std::string_view text) {
  // {"checkpoints": [{"tensors": [[...]]}]}: deeper text is not one, and is not parsed here.
  if (memory::JsonNestsDeeperThan(text, 5)) return false;
  const Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto format = j.find("format");
  return format != j.end() && format->is_number_unsigned() && format->get<uint64_t>() == 1 &&
         j.contains("checkpoints");
}

Result<std::vector<CheckpointBook::Entry>> ParseFormat1Book(std::string_view text,
                                                            const std::string& path) {
  std::vector<CheckpointBook::Entry> entries;
  try {
    const Json j = Json::parse(text.begin(), text.end());
    for (const Json& e : j.at("checkpoints")) entries.push_back(EntryFrom(e));
  } catch (const std::exception& e) {
    return Status::Corruption(path + " is not a checkpoint record of Strata's embedding API (" +
                              e.what() + "); move it away to start afresh");
  }
  for (const CheckpointBook::Entry& e : entries) {
    if (e.name.empty() || !CheckpointBook::IsManifest(e.manifest)) {
      return Status::Corruption(path + " is not a checkpoint record of Strata's embedding API "
                                "(checkpoint '" + e.name + "' has manifest '" + e.manifest +
                                "'); move it away to start afresh");
    }
  }
  return entries;
}

}  // namespace strata::embed
