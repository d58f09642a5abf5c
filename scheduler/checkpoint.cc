#include "scheduler/checkpoint.h"

#include <cstdio>

#include "core/util/option.h"

namespace strata::scheduler {
namespace {

// memory/checkpoint_record.h says what is wrong with a record; the advice names the trainer's
// flags. The words are those the trainer said before the record was shared.
Status InTrainerTerms(const Status& s) {
  using Kind = memory::CheckpointRecordFault::Kind;
  const memory::CheckpointRecordFault* fault = DetailOf<memory::CheckpointRecordFault>(s);
  if (fault == nullptr) return s;
  switch (fault->kind) {
    case Kind::kNotARecord:
      return s.with_message(s.message() +
                            "; put back the file Strata wrote, or start a new run in an empty " +
                            Mention(Option::kCkptDir) + " and " + Mention(Option::kNvmeDir));
    case Kind::kChecksum:
      return s.with_message(s.message() + " (to resume from an older listed checkpoint use " +
                            Mention(Option::kResumeFrom) +
                            " "
                            "STEP, never an edit)");
    case Kind::kUnreadable:
      return s.with_context(Mention(Option::kCkptDir));
    case Kind::kFormat:
      return s;
  }
  return s;
}

// A record of named checkpoints is the C API's (embed/checkpoint_book.h), copied here.
Result<CheckpointRecord> OnlyNumbered(CheckpointRecord record, const std::string& path) {
  if (!record.checkpoints.empty() && !record.checkpoints[0].name.empty()) {
    return InTrainerTerms(WithDetail(
        Status::Corruption(path + " is not a Strata checkpoint record (it lists the named "
                                  "checkpoints of a C API runtime, not a training run's)"),
        memory::CheckpointRecordFault(memory::CheckpointRecordFault::Kind::kNotARecord, path)));
  }
  return record;
}

}  // namespace

std::string ManifestNameForStep(long step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08ld", step);
  return buf;
}

bool IsCheckpointManifest(const std::string& name) { return name.rfind("step-", 0) == 0; }

Result<CheckpointRecord> ParseCheckpointRecord(std::string_view text,
                                               const std::string& path_for_messages) {
  auto r = memory::ParseCheckpointRecord(text, path_for_messages);
  if (!r.ok()) return InTrainerTerms(r.status());
  return OnlyNumbered(std::move(r).value(), path_for_messages);
}

Result<std::optional<CheckpointRecord>> ReadCheckpointRecord(const std::string& dir) {
  auto r = memory::ReadCheckpointRecord(dir, kCheckpointFile);
  if (!r.ok()) return InTrainerTerms(r.status());
  if (!r->has_value()) return r;
  STRATA_ASSIGN_OR_RETURN(CheckpointRecord record,
                          OnlyNumbered(std::move(**r), dir + "/" + kCheckpointFile));
  return std::optional<CheckpointRecord>(std::move(record));
}

Status WriteCheckpointRecord(const std::string& dir, const CheckpointRecord& record) {
  return memory::WriteCheckpointRecord(dir, kCheckpointFile, record, Mention(Option::kCkptDir));
}

}  // namespace strata::scheduler
