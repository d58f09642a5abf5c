#include "embed/checkpoint_book.h"

#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace strata::embed {
namespace {

using Json = nlohmann::json;
using Fault = memory::CheckpointRecordFault;
constexpr const char* kRecordFile = "strata_checkpoints.json";

// memory/checkpoint_record.h says what is wrong with the record and where; the advice is in the
// C API's terms.
Status InApiTerms(const Status& s) {
  const Fault* fault = DetailOf<Fault>(s);
  if (fault == nullptr) return s;
  switch (fault->kind) {
    case Fault::Kind::kNotARecord:
      return s.with_message(s.message() +
                            "; put back the file Strata wrote, or move it away to start "
                            "afresh (its checkpoints are then lost)");
    case Fault::Kind::kChecksum:
      return s.with_message(s.message() +
                            " (to resume from another listed checkpoint, set the option "
                            "resume to its name; never edit the record)");
    case Fault::Kind::kUnreadable:
      return s.with_context("checkpoint_dir");
    case Fault::Kind::kFormat:
      return s;
  }
  return s;
}

Status NotOurs(const std::string& path, const std::string& what) {
  return InApiTerms(
      WithDetail(Status::Corruption(path + " is not a Strata checkpoint record (" + what + ")"),
                 Fault(Fault::Kind::kNotARecord, path)));
}

// A format-2 record, or a format-1 one (Note [Format-1 records]).
Result<memory::CheckpointRecord> ParseBook(std::string_view text, const std::string& path) {
  if (IsFormat1Book(text)) {
    STRATA_ASSIGN_OR_RETURN(std::vector<CheckpointBook::Entry> entries,
                            ParseFormat1Book(text, path));
    memory::CheckpointRecord r;
    r.format = 1;  // written as format 2 by the next checkpoint or drop
    r.set_checkpoints(std::move(entries));
    return r;
  }
  auto parsed = memory::ParseCheckpointRecord(text, path);
  if (!parsed.ok()) return InApiTerms(parsed.status());
  for (const CheckpointBook::Entry& e : parsed->checkpoints) {
    if (e.name.empty()) {
      return NotOurs(path, "it lists the checkpoints of a training run (" + e.manifest +
                               "), not a C API runtime's");
    }
    if (!CheckpointBook::IsManifest(e.manifest)) {
      return NotOurs(path, "checkpoint '" + e.name + "' has manifest '" + e.manifest +
                               "', not an embed-* one");
    }
  }
  return parsed;
}

std::string Describe(const TensorInfo& t) {
  return "'" + t.name + "' (" + std::to_string(t.bytes) + " bytes, dtype " +
         std::to_string(t.dtype) + ", role " + std::to_string(t.role) + ", group '" + t.group +
         "')";
}

// A "tensor NNNNN" value of a fingerprint, in Describe's words (as written when it is not one
// Strata wrote).
std::string DescribeRecorded(const std::string& value) {
  const Json t = Json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (t.is_array() && t.size() == 5 && t[0].is_string() && t[1].is_number_unsigned() &&
      t[2].is_number_integer() && t[3].is_number_integer() && t[4].is_string()) {
    return Describe({t[0].get<std::string>(), t[1].get<uint64_t>(), t[2].get<int>(),
                     t[3].get<int>(), t[4].get<std::string>()});
  }
  return value;
}

std::string TensorKey(size_t i) {
  char key[32];
  std::snprintf(key, sizeof key, "tensor %05zu", i);
  return key;
}

std::string ValueOf(const memory::RecordFingerprint& fp, const std::string& key) {
  auto it = fp.find(key);
  return it == fp.end() ? "" : it->second;
}

size_t CountOf(const memory::RecordFingerprint& fp) {
  const std::string text = ValueOf(fp, "tensors");
  size_t n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

}  // namespace

memory::RecordFingerprint CheckpointBook::Fingerprint(uint64_t page_bytes,
                                                      const std::vector<TensorInfo>& tensors) {
  memory::RecordFingerprint fp = {{"page_size", std::to_string(page_bytes)},
                                  {"tensors", std::to_string(tensors.size())}};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    fp[TensorKey(i)] = Json::array({t.name, t.bytes, t.dtype, t.role, t.group})
                           .dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return fp;
}

Result<std::unique_ptr<CheckpointBook>> CheckpointBook::Open(const std::string& dir) {
  std::unique_ptr<CheckpointBook> book(new CheckpointBook(dir));
  auto text = memory::ReadCheckpointRecordText(dir, kRecordFile);
  if (!text.ok()) return InApiTerms(text.status());
  if (!text->has_value()) return book;
  STRATA_ASSIGN_OR_RETURN(book->record_, ParseBook(**text, dir + "/" + kRecordFile));
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
  if (const Entry* e = record_.find_named(name)) return e;
  std::string names;
  for (const Entry& e : record_.checkpoints) names += (names.empty() ? "" : ", ") + e.name;
  return Status::NotFound("no checkpoint '" + name + "' in " + dir_ + "/" + kRecordFile +
                          " (it has: " + (names.empty() ? "none" : names) + ")");
}

Status CheckpointBook::CheckLayout(const Entry& entry, const Layout& layout) {
  const std::string why = "checkpoint '" + entry.name + "' was saved with other tensors: "
                          "register the same tensors and pairs, in the same order, to resume "
                          "from it";
  const memory::RecordFingerprint& was = entry.fingerprint;
  const memory::RecordFingerprint now = Fingerprint(layout.page_bytes(), layout.tensors());
  if (ValueOf(was, "page_size") != ValueOf(now, "page_size")) {
    return Status::FailedPrecondition(why + " (its page_size is " + ValueOf(was, "page_size") +
                                      ")");
  }
  const size_t had = CountOf(was), has = layout.tensors().size();
  for (size_t i = 0; i < std::max(had, has); ++i) {
    if (i >= had || i >= has) {
      return Status::FailedPrecondition(why + " (it has " + std::to_string(had) +
                                        " tensors, this runtime " + std::to_string(has) + ")");
    }
    const std::string key = TensorKey(i);
    if (ValueOf(was, key) != ValueOf(now, key)) {
      return Status::FailedPrecondition(why + " (tensor " + std::to_string(i) + " was " +
                                        DescribeRecorded(ValueOf(was, key)) + ", now " +
                                        Describe(layout.tensors()[i]) + ")");
    }
  }
  return Status::Ok();
}

Result<std::vector<std::string>> CheckpointBook::record(const std::string& name, int64_t step,
                                                        const Layout& layout, uint64_t keep,
                                                        const std::vector<std::string>& nvme_dirs) {
  memory::CheckpointRecord next = record_;
  std::vector<Entry> gone = next.push_newest(
      {step, ManifestName(name), name, Fingerprint(layout.page_bytes(), layout.tensors())}, keep);
  next.nvme_dirs.clear();
  for (const std::string& d : nvme_dirs) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(d, ec);
    next.nvme_dirs.push_back(ec ? d : abs.lexically_normal().string());
  }
  STRATA_RETURN_IF_ERROR(write(next));
  record_ = std::move(next);
  std::vector<std::string> retired;
  for (const Entry& e : gone) retired.push_back(e.manifest);
  return retired;
}

Result<std::string> CheckpointBook::drop(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(const Entry* found, find(name));
  const std::string manifest = found->manifest;
  memory::CheckpointRecord next = record_;
  std::vector<Entry> kept;
  for (const Entry& e : record_.checkpoints) {
    if (e.name != name) kept.push_back(e);
  }
  next.set_checkpoints(std::move(kept));
  STRATA_RETURN_IF_ERROR(write(next));
  record_ = std::move(next);
  return manifest;
}

Status CheckpointBook::write(const memory::CheckpointRecord& record) const {
  return memory::WriteCheckpointRecord(dir_, kRecordFile, record, "checkpoint_dir");
}

}  // namespace strata::embed
