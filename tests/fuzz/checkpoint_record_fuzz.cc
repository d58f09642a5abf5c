// Fuzz target checkpoint_record (see fuzz_targets.h).
#include <string>

#include "core/util/check.h"
#include "scheduler/checkpoint.h"
#include "tests/fuzz/fuzz_targets.h"

namespace strata::fuzz {

bool FuzzCheckpointRecord(std::string_view bytes) {
  Result<scheduler::CheckpointRecord> parsed = scheduler::ParseCheckpointRecord(bytes, "fuzz");
  if (!parsed.ok()) {
    STRATA_CHECK(parsed.status().message().find("fuzz") != std::string::npos)
        << "the error does not name the file: " << parsed.status().message();
    return false;
  }
  STRATA_CHECK_LE(parsed->checkpoints.size(), bytes.size()) << "more entries than bytes";
  if (parsed->format != scheduler::kCheckpointFormat) return true;
  // A record as Strata writes it parses back to itself, with a valid checksum.
  const std::string json = scheduler::CheckpointRecordJson(*parsed);
  Result<scheduler::CheckpointRecord> again = scheduler::ParseCheckpointRecord(json, "fuzz");
  STRATA_CHECK(again.ok()) << "a re-encoded record does not parse: " << again.status().to_string()
                           << "\n" << json;
  STRATA_CHECK(again->checkpoints == parsed->checkpoints && again->step == parsed->step &&
               again->manifest == parsed->manifest && again->run == parsed->run &&
               again->store_id == parsed->store_id && again->nvme_dirs == parsed->nvme_dirs &&
               again->fingerprint == parsed->fingerprint)
      << "the record does not round-trip:\n" << json;
  return true;
}

}  // namespace strata::fuzz
