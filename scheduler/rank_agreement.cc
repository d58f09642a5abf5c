#include "scheduler/rank_agreement.h"

#include <xxhash.h>

#include <vector>

#include "scheduler/run_fingerprint.h"

namespace strata::scheduler {

Result<std::map<std::string, std::string>> RankSharedFlags(const TrainOptions& o,
                                                            const GptConfig& config, int seq) {
  STRATA_ASSIGN_OR_RETURN(const RunFingerprint fp, MakeRunFingerprint(o, config, seq, o.page_bytes));
  std::map<std::string, std::string> flags = fp.to_map();
  flags["--steps"] = std::to_string(o.steps);
  flags["--engine"] = o.engine;
  flags["--gpu-mem"] = std::to_string(o.gpu_mem);
  flags["--host-mem"] = std::to_string(o.host_mem);
  flags["--nvme-mem"] = std::to_string(o.nvme_mem);
  flags["--params-on"] = o.params_on;
  flags["--optimizer-on"] = o.optimizer_on;
  flags["--recompute"] = o.recompute;
  flags["--micro-batch-order"] = o.micro_batch_order;
  flags["--dp"] = std::to_string(o.dp);
  flags["--tp"] = std::to_string(o.tp);
  flags["--pp"] = std::to_string(o.pp);
  flags["--schedule"] = o.schedule;
  flags["--pp-partition"] = o.pp_partition;
  flags["--shard"] = o.shard;
  flags["--split-ops"] = o.split_ops;
  flags["--comm"] = o.comm;
  flags["--device"] = o.device;
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
  std::vector<uint64_t> all(mine.size() * comm.size());
  STRATA_RETURN_IF_ERROR(
      comm.all_gather(mine.data(), all.data(), mine.size() * sizeof(uint64_t)).wait());
  for (size_t f = 0; f < mine.size(); ++f) {
    for (int r = 1; r < comm.size(); ++r) {
      if (all[r * mine.size() + f] == all[f]) continue;
      const std::string& flag = entries[f]->first;
      return Status::InvalidArgument(
          "rank " + std::to_string(r) + " was started with another " + flag + " than rank 0 (" +
          "this rank, " + std::to_string(comm.rank()) + ": " + flag + " " + entries[f]->second +
          "): every rank of a job needs the same model, data, optimizer, batch, budget and "
          "parallel flags");
    }
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
