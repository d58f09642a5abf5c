// Every rank of a job must run the same step: the same model, data, optimizer, batch, budgets
// and parallel layout. A rank started with other flags would issue other collectives and hang or
// corrupt its peers, so the ranks compare their flags before anything is planned.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/train_options.h"

namespace strata::scheduler {

// flag -> value of what every rank must share: every flag that changes what the ranks do
// together (docs/parallel.md, "Flags every rank shares"): the run's fingerprint
// (run_fingerprint.h), the steps, the budgets, the engine that runs (`paged`, after --engine
// auto's choice) and placement flags, the parallel layout, checkpoints (--ckpt-dir and
// --nvme-dir given, --ckpt-every, --keep-checkpoints, --resume, --resume-from, --discard-newer),
// --export and --export-grads given, --movement-only. Paths are compared as given or not (each
// rank may name its own). Flags that stay within one rank may differ: --threads, --trace,
// --host-eviction, --sim-link-gbps, --comm-timeout, --log-json, --log-level. Reads --data and
// --init to hash them (IoError naming the file).
Result<std::map<std::string, std::string>> RankSharedFlags(const TrainOptions& o,
                                                            const std::string& model, int seq,
                                                            bool paged);

// Ok when every rank's `flags` equal rank 0's; else, on every rank, InvalidArgument naming the
// first flag that differs and the first rank that differs, e.g. "rank 1 was started with
// another --batch than rank 0 (this rank: 16): every rank needs the same flags". Collective.
Status CheckRanksAgree(const std::map<std::string, std::string>& flags, parallel::Comm& comm);

}  // namespace strata::scheduler
