#include "embed/checkpoint_book.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/util/durable_file.h"

namespace strata::embed {
namespace {

using Json = nlohmann::json;
constexpr const char* kRecordFile = "strata_checkpoints.json";

Json EntryJson(const CheckpointBook::Entry& e) {
  Json tensors = Json::array();
  for (const TensorInfo& t : e.tensors) {
    tensors.push_back(Json::array({t.name, t.bytes, t.dtype, t.role, t.group}));
  }
  return {{"name", e.name}, {"manifest", e.manifest}, {"step", e.step},
          {"page_bytes", e.page_bytes}, {"tensors", tensors}};
}

CheckpointBook::Entry EntryFrom(const Json& j) {
  CheckpointBook::Entry e;
  e.name = j.at("name").get<std::string>();
  e.manifest = j.at("manifest").get<std::string>();
  e.step = j.at("step").get<int64_t>();
  e.page_bytes = j.at("page_bytes").get<uint64_t>();
  for (const Json& t : j.at("tensors")) {
    e.tensors.push_back({t.at(0).get<std::string>(), t.at(1).get<uint64_t>(), t.at(2).get<int>(),
                         t.at(3).get<int>(), t.at(4).get<std::string>()});
  }
  return e;
}

std::string Describe(const TensorInfo& t) {
  return "'" + t.name + "' (" + std::to_string(t.bytes) + " bytes, dtype " +
         std::to_string(t.dtype) + ", role " + std::to_string(t.role) + ", group '" + t.group +
         "')";
}

}  // namespace

Result<std::unique_ptr<CheckpointBook>> CheckpointBook::Open(const std::string& dir) {
  std::unique_ptr<CheckpointBook> book(new CheckpointBook(dir));
  const std::string path = dir + "/" + kRecordFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return book;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const Json j = Json::parse(text.str());
    for (const Json& e : j.at("checkpoints")) book->entries_.push_back(EntryFrom(e));
  } catch (const std::exception& e) {
    return Status::Corruption(path + " is not a checkpoint record of Strata's embedding API (" +
                              e.what() + "); move it away to start afresh");
  }
  return book;
}

Status CheckpointBook::CheckName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 100;
  for (char c : name) ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                            c == '-';
  if (!ok) {
    return Status::InvalidArgument("checkpoint name '" + name +
                                   "': use 1 to 100 letters, digits, '.', '_' or '-'");
  }
  return Status::Ok();
}

Result<const CheckpointBook::Entry*> CheckpointBook::find(const std::string& name) const {
  std::string names;
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
    names += (names.empty() ? "" : ", ") + e.name;
  }
  return Status::NotFound("no checkpoint '" + name + "' in " + dir_ + "/" + kRecordFile +
                          " (it has: " + (names.empty() ? "none" : names) + ")");
}

Status CheckpointBook::CheckLayout(const Entry& entry, const Layout& layout) {
  const Entry* e = &entry;
  const std::string why = "checkpoint '" + e->name + "' was saved with other tensors: register the "
                          "same tensors and pairs, in the same order, to resume from it";
  if (e->page_bytes != layout.page_bytes()) {
    return Status::FailedPrecondition(why + " (its page_size is " +
                                      std::to_string(e->page_bytes) + ")");
  }
  const auto& now = layout.tensors();
  for (size_t i = 0; i < std::max(now.size(), e->tensors.size()); ++i) {
    if (i >= now.size() || i >= e->tensors.size()) {
      return Status::FailedPrecondition(why + " (it has " + std::to_string(e->tensors.size()) +
                                        " tensors, this runtime " + std::to_string(now.size()) +
                                        ")");
    }
    const TensorInfo &a = e->tensors[i], &b = now[i];
    if (a.name != b.name || a.bytes != b.bytes || a.dtype != b.dtype || a.role != b.role ||
        a.group != b.group) {
      return Status::FailedPrecondition(why + " (tensor " + std::to_string(i) + " was " +
                                        Describe(a) + ", now " + Describe(b) + ")");
    }
  }
  return Status::Ok();
}

Result<std::vector<std::string>> CheckpointBook::record(const std::string& name, int64_t step,
                                                        const Layout& layout, uint64_t keep) {
  Entry entry{name, ManifestName(name), step, layout.page_bytes(), {}};
  for (const TensorInfo& t : layout.tensors()) {
    entry.tensors.push_back({t.name, t.bytes, t.dtype, t.role, t.group});
  }
  std::vector<Entry> next = {std::move(entry)};
  std::vector<std::string> retired;
  for (Entry& e : entries_) {
    if (e.name == name) continue;  // replaced: the same manifest, saved again
    if (keep == 0 || next.size() < keep) {
      next.push_back(e);
    } else {
      retired.push_back(e.manifest);
    }
  }
  STRATA_RETURN_IF_ERROR(write(next));
  entries_ = std::move(next);
  return retired;
}

Result<std::string> CheckpointBook::drop(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(const Entry* found, find(name));
  const std::string manifest = found->manifest;
  std::vector<Entry> next;
  for (const Entry& e : entries_) {
    if (e.name != name) next.push_back(e);
  }
  STRATA_RETURN_IF_ERROR(write(next));
  entries_ = std::move(next);
  return manifest;
}

bool CheckpointBook::lists_manifest(const std::string& manifest) const {
  for (const Entry& e : entries_) {
    if (e.manifest == manifest) return true;
  }
  return false;
}

Status CheckpointBook::write(const std::vector<Entry>& entries) const {
  Json all = Json::array();
  for (const Entry& e : entries) all.push_back(EntryJson(e));
  const Json record = {{"format", 1}, {"checkpoints", all}};
  return WriteFileDurably(dir_, kRecordFile, record.dump(1), "checkpoint_dir");
}

}  // namespace strata::embed
