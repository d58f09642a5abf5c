// `strata ckpt list|verify|prune DIR`: the checkpoints of a --ckpt-dir and the NVMe store its
// record names (scheduler/checkpoint.h, scheduler/checkpoint_store.h). The store is opened
// through its normal open path (and lock); --nvme-dir overrides the record's dirs when the
// store moved. Output on stdout; errors as every command's (exit 1, 2 for bad flags).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "core/util/sizes.h"
#include "scheduler/checkpoint_store.h"
#include "tools/command.h"
#include "tools/option_words.h"

namespace strata::tools {
namespace {

struct CkptFlags {
  std::string dir;                     // the --ckpt-dir
  std::vector<std::string> nvme_dirs;  // --nvme-dir: where the store is now
  bool json = false;                   // list --json
  long step = -1;                      // verify --step
  int keep = 0;                        // prune --keep
  std::string log_level = "warn";
};

struct Opened {
  scheduler::CheckpointRecord record;
  std::unique_ptr<memory::NvmeTierSnapshots> store;
};

Result<Opened> OpenCkpt(const CkptFlags& f) {
  SetLogLevel(f.log_level);
  STRATA_ASSIGN_OR_RETURN(std::optional<scheduler::CheckpointRecord> record,
                          scheduler::ReadCheckpointRecord(f.dir));
  if (!record) {
    // A job of several ranks keeps one record per rank, in rank-<r>/.
    std::error_code ec;
    const bool job = std::filesystem::is_directory(f.dir + "/rank-0", ec);
    return Status::NotFound(
        f.dir + " holds no " + scheduler::kCheckpointFile +
        (job ? ": it is the --ckpt-dir of a job of several ranks, whose records are in its "
               "rank-<r> directories; pass one of them (e.g. " + f.dir + "/rank-0)"
             : std::string("; pass the --ckpt-dir of a run")));
  }
  Opened o;
  STRATA_ASSIGN_OR_RETURN(o.store, scheduler::OpenRecordStore(*record, f.dir, f.nvme_dirs));
  o.record = std::move(*record);
  return o;
}

std::string DirsText(const std::vector<std::string>& dirs) {
  std::string out;
  for (const std::string& d : dirs) out += (out.empty() ? "" : ", ") + d;
  return out;
}

Status RunList(const CkptFlags& f) {
  STRATA_ASSIGN_OR_RETURN(Opened o, OpenCkpt(f));
  STRATA_ASSIGN_OR_RETURN(std::vector<scheduler::CheckpointListing> list,
                          scheduler::ListCheckpoints(*o.store, o.record));
  const std::string digest = scheduler::FingerprintDigest(o.record.fingerprint);
  if (f.json) {
    nlohmann::json j = {{"ckpt_dir", f.dir},
                        {"store_id", o.record.store_id},
                        {"nvme_dirs", o.record.nvme_dirs},
                        {"fingerprint", o.record.fingerprint},
                        {"fingerprint_digest", digest},
                        {"checkpoints", nlohmann::json::array()}};
    for (const scheduler::CheckpointListing& l : list) {
      j["checkpoints"].push_back({{"step", l.entry.step},
                                  {"manifest", l.entry.manifest},
                                  {"present", l.present},
                                  {"pages", l.size.pages},
                                  {"bytes", l.size.bytes},
                                  {"fingerprint", digest}});
    }
    std::printf("%s\n", j.dump().c_str());
    return Status::Ok();
  }
  std::printf("%s/%s: %zu checkpoint(s), store %s in %s\n", f.dir.c_str(),
              scheduler::kCheckpointFile, list.size(), o.record.store_id.c_str(),
              DirsText(o.record.nvme_dirs).c_str());
  if (list.empty()) {
    std::printf("no checkpoint yet (its run stopped before its first, or ran without "
                "--ckpt-every)\n");
  }
  for (const scheduler::CheckpointListing& l : list) {
    if (!l.present) {
      std::printf("step %ld  %s  MISSING from the store  fingerprint %s\n", l.entry.step,
                  l.entry.manifest.c_str(), digest.c_str());
      continue;
    }
    std::printf("step %ld  %s  %llu bytes (%s, %llu pages)  fingerprint %s\n", l.entry.step,
                l.entry.manifest.c_str(), static_cast<unsigned long long>(l.size.bytes),
                FormatBytes(l.size.bytes).c_str(), static_cast<unsigned long long>(l.size.pages),
                digest.c_str());
  }
  std::string fields;
  for (const auto& [flag, value] : o.record.fingerprint) fields += " " + flag + " " + value;
  std::printf("fingerprint %s:%s\n", digest.c_str(), fields.c_str());
  return Status::Ok();
}

Status RunVerify(const CkptFlags& f) {
  STRATA_ASSIGN_OR_RETURN(Opened o, OpenCkpt(f));
  std::vector<scheduler::CheckpointEntry> which = o.record.checkpoints;
  if (f.step >= 0) {
    const scheduler::CheckpointEntry* e = o.record.find(f.step);
    if (e == nullptr) {
      return Status::InvalidArgument("--step " + std::to_string(f.step) + ": " + f.dir +
                                     " lists checkpoints of steps " + o.record.steps_text());
    }
    which = {*e};
  }
  if (which.empty()) {
    return Status::NotFound("no checkpoint to verify: " + f.dir + "/" + scheduler::kCheckpointFile +
                            " lists none (its run stopped before its first, or ran without "
                            "--ckpt-every)");
  }
  Status first;
  for (const scheduler::CheckpointEntry& e : which) {
    Status s = o.store->verify_snapshot(e.manifest);
    std::printf("step %ld  %s  %s\n", e.step, e.manifest.c_str(),
                s.ok() ? "ok" : ("DAMAGED: " + InFlagTerms(s.message())).c_str());
    if (!s.ok() && first.ok()) {
      first = Status::Corruption("checkpoint step " + std::to_string(e.step) + " (" + e.manifest +
                                 ") fails verification: " + s.message());
    }
  }
  return first;
}

Status RunPrune(const CkptFlags& f) {
  STRATA_ASSIGN_OR_RETURN(Opened o, OpenCkpt(f));
  STRATA_ASSIGN_OR_RETURN(scheduler::PruneResult r,
                          scheduler::PruneCheckpoints(*o.store, o.record, f.dir, f.keep));
  std::string dropped;
  for (const scheduler::CheckpointEntry& e : r.dropped) {
    dropped += (dropped.empty() ? "" : ", ") + std::to_string(e.step);
  }
  std::printf("kept step(s) %s; dropped %s; freed %llu bytes (%s)\n", o.record.steps_text().c_str(),
              dropped.empty() ? "none" : ("step(s) " + dropped).c_str(),
              static_cast<unsigned long long>(r.freed_bytes), FormatBytes(r.freed_bytes).c_str());
  return Status::Ok();
}

CLI::App* AddCkptSubcommand(CLI::App* ckpt, const char* name, const char* help,
                            std::shared_ptr<CkptFlags> f) {
  CLI::App* cmd = ckpt->add_subcommand(name, help);
  cmd->add_option("dir", f->dir, "The --ckpt-dir (holds checkpoint.json)")->required();
  cmd->add_option("--nvme-dir", f->nvme_dirs,
                  "The store's directories, in order, when they moved (default: the record's)");
  cmd->add_option("--log-level", f->log_level, "debug, info, warn, error or off")
      ->capture_default_str();
  return cmd;
}

}  // namespace

void AddCkptCommand(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<CkptFlags>();
  CLI::App* ckpt = app.add_subcommand(
      "ckpt", "Inspect and maintain checkpoints: list, verify, prune a --ckpt-dir");
  ckpt->require_subcommand(1);
  CLI::App* list = AddCkptSubcommand(
      ckpt, "list", "One line per kept checkpoint: step, size of its pages, fingerprint", f);
  list->add_flag("--json", f->json, "Print one JSON object instead");
  list->callback([f, &ctx] { ctx.status = RunList(*f); });
  CLI::App* verify = AddCkptSubcommand(
      ckpt, "verify", "Read every page version of the checkpoints and check their checksums", f);
  verify->add_option("--step", f->step, "Only this checkpoint (default: every listed one)");
  verify->callback([f, &ctx] { ctx.status = RunVerify(*f); });
  CLI::App* prune = AddCkptSubcommand(
      ckpt, "prune", "Keep the K newest checkpoints; delete the others' manifests", f);
  prune->add_option("--keep", f->keep, "Checkpoints to keep (at least 1)")->required();
  prune->callback([f, &ctx] { ctx.status = RunPrune(*f); });
}

}  // namespace strata::tools
