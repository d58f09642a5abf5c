#include "scheduler/rank_agreement.h"

#include <xxhash.h>

#include <vector>

#include "scheduler/run_fingerprint.h"

namespace strata::scheduler {

namespace {

// The bytes of one flag's value that the ranks trade to word a difference.
constexpr size_t kValueBytes = 256;

// A path flag's part in what the ranks do together is whether it is given: the paths may differ
// between ranks (rank 0 alone writes --export, each rank its own directories).
std::string Given(const std::string& path) { return path.empty() ? "(not given)" : "(given)"; }
std::string OnOff(bool on) { return on ? "(given)" : "(not given)"; }

}  // namespace

Result<std::map<std::string, std::string>> RankSharedFlags(const TrainOptions& o,
                                                            const std::string& model, int seq,
                                                            bool paged) {
  STRATA_ASSIGN_OR_RETURN(const RunFingerprint fp,
                          MakeRunFingerprint(o, model, seq, o.budgets.page_bytes));
  std::map<std::string, std::string> flags = fp.to_map();
  // The fingerprint's rank and micro-batch rows are a rank's place in the job (the same defaults
  // here) and follow from --batch, --micro-batch and the grid, which are compared themselves.
  flags.erase("rank");
  flags.erase("micro-batch rows");
  // Every rank compares the same keys: the fingerprint's defaults it leaves out go in as values.
  flags[RecordKey(Option::kDtype)] = o.dtype;
  flags[RecordKey(Option::kSteps)] = std::to_string(o.steps);
  // --engine auto picks by other flags (a paging flag, --gpu-mem): what matters is the engine.
  flags[RecordKey(Option::kEngine)] =
      o.budgets.engine + (paged ? " (the paged engine)" : " (the in-memory engine)");
  // Checkpoints: every rank saves together (a barrier before each) and resumes from one step
  // agreed by all; an export gathers every rank's part.
  flags[RecordKey(Option::kCkptDir)] = Given(o.checkpoints.dir);
  flags[RecordKey(Option::kNvmeDir)] =
      Given(o.budgets.nvme_dirs.empty() ? "" : o.budgets.nvme_dirs[0]);
  flags[RecordKey(Option::kCkptEvery)] = std::to_string(o.checkpoints.every);
  flags[RecordKey(Option::kKeepCheckpoints)] = std::to_string(o.checkpoints.keep);
  flags[RecordKey(Option::kResume)] = OnOff(o.checkpoints.resume);
  flags[RecordKey(Option::kResumeFrom)] = std::to_string(o.checkpoints.resume_from);
  flags[RecordKey(Option::kDiscardNewer)] = OnOff(o.checkpoints.discard_newer);
  flags[RecordKey(Option::kExport)] = Given(o.outputs.export_path);
  flags[RecordKey(Option::kExportGrads)] = Given(o.outputs.export_grads_path);
  flags[RecordKey(Option::kMovementOnly)] = OnOff(o.movement_only);
  flags[RecordKey(Option::kGpuMem)] = std::to_string(o.budgets.gpu_mem);
  flags[RecordKey(Option::kHostMem)] = std::to_string(o.budgets.host_mem);
  flags[RecordKey(Option::kNvmeMem)] = std::to_string(o.budgets.nvme_mem);
  flags[RecordKey(Option::kParamsOn)] = o.budgets.params_on;
  flags[RecordKey(Option::kOptimizerOn)] = o.budgets.optimizer_on;
  flags[RecordKey(Option::kRecompute)] = o.budgets.recompute;
  flags[RecordKey(Option::kMicroBatchOrder)] = o.budgets.micro_batch_order;
  flags[RecordKey(Option::kDp)] = std::to_string(o.grid.dp);
  flags[RecordKey(Option::kTp)] = std::to_string(o.grid.tp);
  flags[RecordKey(Option::kPp)] = std::to_string(o.grid.pp);
  flags[RecordKey(Option::kSchedule)] = o.grid.schedule;
  flags[RecordKey(Option::kPpPartition)] = o.grid.pp_partition;
  flags[RecordKey(Option::kShard)] = o.grid.shard;
  flags[RecordKey(Option::kSplitOps)] = o.grid.split_ops;
  flags[RecordKey(Option::kComm)] = o.grid.comm;
  flags[RecordKey(Option::kDevice)] = o.device;
  return flags;
}

Status CheckRanksAgree(const std::map<std::string, std::string>& flags, parallel::Comm& comm) {
  // One hash per flag, in the map's (sorted) order: the same keys on every rank, since every
  // rank runs this code. Equal hashes are taken as equal values.
  std::vector<uint64_t> mine;
  std::vector<const std::pair<const std::string, std::string>*> entries;
  for (const auto& entry : flags) {
    const std::string text = entry.first + "=" + entry.second;
    mine.push_back(XXH3_64bits(text.data(), text.size()));
    entries.push_back(&entry);
  }
  // The keys first (a key only some ranks have would make the gathers' sizes differ).
  std::string keys;
  for (const auto& entry : flags) keys += entry.first + '\0';
  const uint64_t my_keys = XXH3_64bits(keys.data(), keys.size());
  std::vector<uint64_t> all_keys(size_t(comm.size()));
  STRATA_RETURN_IF_ERROR(comm.all_gather(&my_keys, all_keys.data(), sizeof my_keys).wait());
  for (int r = 1; r < comm.size(); ++r) {
    if (all_keys[size_t(r)] != all_keys[0]) {
      return Status::InvalidArgument("rank " + std::to_string(r) + " compares other flags than "
                                     "rank 0: every rank of a job must run the same strata");
    }
  }
  std::vector<uint64_t> all(mine.size() * comm.size());
  STRATA_RETURN_IF_ERROR(
      comm.all_gather(mine.data(), all.data(), mine.size() * sizeof(uint64_t)).wait());
  for (size_t f = 0; f < mine.size(); ++f) {
    for (int r = 1; r < comm.size(); ++r) {
      if (all[r * mine.size() + f] == all[f]) continue;
      // Every rank found this same difference: they trade the values, so that each words it alike
      // (and the job says it once, Note [Ending a failed job] in tools/train_ranks.h).
      const std::string flag = RecordKeyWords(entries[f]->first);
      std::vector<char> value(kValueBytes, '\0'), values(kValueBytes * size_t(comm.size()));
      entries[f]->second.copy(value.data(), kValueBytes - 1);
      STRATA_RETURN_IF_ERROR(comm.all_gather(value.data(), values.data(), kValueBytes).wait());
      auto of = [&](int rank) { return std::string(values.data() + size_t(rank) * kValueBytes); };
      return Status::InvalidArgument(
          "rank " + std::to_string(r) + " was started with another " + flag + " than rank 0 (rank " +
          "0: " + flag + " " + of(0) + "; rank " + std::to_string(r) + ": " + flag + " " + of(r) +
          "): every rank of a job needs the same model, data, optimizer, batch, budget, "
          "checkpoint and parallel flags");
    }
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
