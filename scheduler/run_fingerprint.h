// RunFingerprint: what a resumed run must share with its checkpoint, one named field per flag
// that changes the arithmetic of a step (the model, the data, the optimizer and its schedule,
// the seed, the batch and its cut into micro-batches, the page size, --delayed-update, the
// initial weights, the compute dtype). Everything else may change on --resume: --steps, the budgets (--gpu-mem,
// --host-mem, --nvme-mem), --threads, the outputs (--log-json, --trace, --export, ...),
// --log-level, --ckpt-every, --keep-checkpoints, and where pages live (--params-on, ...), which
// never changes a value (Note [Canonical arithmetic] in scheduler/trainer.h).
//
// The parallel layout is part of it too (RunLayout): a checkpoint of one rank of a dp 2 job holds
// the state that rank computed with micro-batches of --batch / 2 rows; resumed by one process with
// other micro-batches it would continue with other arithmetic, so the grid, the rank and the
// micro-batch rows are recorded and compared like the flags (resume under another layout is
// refused until it is built).
//
// Values are text: floats in their shortest round-trip form ("0.001"), files as their size and
// XXH3-64 ("1048576 bytes, xxh3 0123456789abcdef") so a moved file still matches.
#pragma once

#include <map>
#include <string>

#include "core/util/option.h"
#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata::scheduler {

struct RunFingerprint {
  std::string model;           // --model (after --init's shape and --n-layer ... --block-size)
  std::string data;            // --data: "builtin" or the file's size and hash
  std::string init;  // --init: "none", or the size and hash of the file (of each file of a dir)
  std::string lr;              // --lr
  std::string min_lr;          // --min-lr
  std::string warmup;          // --warmup
  std::string lr_schedule;     // --lr-schedule
  std::string weight_decay;    // --weight-decay
  std::string beta1;           // --beta1
  std::string beta2;           // --beta2
  std::string eps;             // --eps
  std::string grad_clip;       // --grad-clip
  std::string seed;            // --seed
  std::string batch;           // --batch
  std::string micro_batch;     // --micro-batch (as given: 0 = one micro-batch of --batch)
  std::string seq;             // --seq
  std::string page_size;       // --page-size (bytes)
  std::string delayed_update;  // --delayed-update ("on" or "off")
  // --shard: "none" when every rank holds every block whole, else the ranks and each block's
  // decision (a rank's pages are its shards). Left out of to_map when "none", so records from
  // before sharding still match.
  std::string shard = "none";
  // --dtype: "fp32" or "bf16" (the GEMMs' operand rounding changes every step's values). Left
  // out of to_map when "fp32", so records from before --dtype still match.
  std::string dtype = "fp32";
  // The grid (--dp, --tp, --pp), this process's rank in it, and the rows of each micro-batch
  // it computes (--micro-batch, or --batch / --dp). Records before 2026-11-27 hold none of these:
  // there they are unknown and not compared (the CLI tells a rank's directory by its name).
  std::string dp = "1";
  std::string tp = "1";
  std::string pp = "1";
  std::string rank = "0";
  std::string micro_rows;

  // RecordKey(option) -> value, the form kept in checkpoint.json (with "rank" and
  // "micro-batch rows", which no option sets).
  std::map<std::string, std::string> to_map() const;
  // The one-line "run" text of checkpoint.json (its form since the first record format).
  std::string summary() const;
};

// Where a run's state sits in the job: what the checkpoint of one rank depends on besides flags.
struct RunLayout {
  std::string shard = "none";  // as RunFingerprint::shard
  int dp = 1, tp = 1, pp = 1;  // the grid
  int rank = 0;                // this process's rank in the job
  int micro_rows = 0;          // rows of each micro-batch this rank computes
};

// The fingerprint of a run of `o` with the resolved model (`model`: its ModelShape::description),
// seq, page size and `layout` (the
// defaults: one rank, micro-batches as --micro-batch says). Reads --data and --init to hash them
// (an errno's Status or IoError naming the file when it cannot, at fault of {data} or {init}).
Result<RunFingerprint> MakeRunFingerprint(const TrainOptions& o, const std::string& model, int seq,
                                          uint64_t page_bytes, const RunLayout& layout = {});

// The number of ranks of the job that wrote `recorded` (a checkpoint's to_map): dp * tp * pp,
// or 0 when the record does not say (an older record).
int RecordedRanks(const std::map<std::string, std::string>& recorded);
// "{dp} 2 {tp} 1 {pp} 1": the grid of a record (1 for what it does not say).
std::string RecordedGrid(const std::map<std::string, std::string>& recorded);

// The key of `option`'s field in a record (checkpoint.json, format 2): the CLI flag that set it
// when the format was made ("--lr" for Option::kLr). A file's key, frozen with the format; it is
// no wording (messages name the option by its mention, core/util/option.h).
std::string RecordKey(Option option);
// How a message names a record's `key`: the mention of the option whose key it is ("{lr}" for
// "--lr"), else the key itself ("rank").
std::string RecordKeyWords(const std::string& key);

// A short name for a fingerprint (to_map's form): 16 hex digits of XXH3-64 over its fields.
std::string FingerprintDigest(const std::map<std::string, std::string>& fields);

// Ok when `recorded` (a checkpoint's to_map) equals `now` in every field; else InvalidArgument
// naming the first option that differs and both values, e.g. "{resume}: {lr} 0.001 differs from
// the checkpoint's 0.0003 (...)", with an OptionFault for it. The layout's fields come first, in
// words ("{dp} 1 differs from the checkpoint's {dp} 2", "{shard} ... lays out ..."), at fault
// of: {dp}/{tp}/{pp} with "got", "recorded", "recorded_rank" and "recorded_ranks"; {shard};
// {ckpt_dir} for another rank's record ("rank", "recorded_rank"); {micro_batch} for micro-batches
// of other rows ("rows", "recorded_rows"). A number the record lacks is left out.
Status CheckSameRun(const RunFingerprint& now, const std::map<std::string, std::string>& recorded);

}  // namespace strata::scheduler
