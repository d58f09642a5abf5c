// Options by name: how the floors below the edges (core, storage, memory, parallel, scheduler)
// name a user's setting in an error, without knowing whether the user set it as a command-line
// flag (tools/: `--nvme-mem`) or as a C API option key (embed/: `nvme_mem`).
//
// Note [Options in messages]
// A message below the edges names an option by its mention, Mention(Option::kNvmeMem), which
// reads "{nvme_mem}" in the raw text. The Status also carries an OptionFault detail: the option
// at fault and the numbers that made it wrong, for code that acts on the error without reading
// its words. Each edge words the mentions once, where the message leaves the library:
//   tools/option_words.h   every mention becomes its flag ("--nvme-mem"), at main() and at each
//                          place the CLI prints a lower floor's text;
//   embed/messages.h       every mention becomes the C API's option key ("nvme_mem").
// Log lines are worded by the log formatter (core/util/log_words.h), since they
// reach the process's stderr without passing an edge. Only known keys are marks: any other
// "{...}" in a message (a path, a JSON fragment) is left as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace strata {

// Every option a lower floor names, with its stable key (the C API's option key where the
// C API has that option, else the command-line flag's name in snake_case). One list, so that
// the enum, the keys and the parser cannot drift apart.
// clang-format off
#define STRATA_OPTIONS(X) \
  X(kArch, "arch") \
  X(kBatch, "batch") \
  X(kBeta1, "beta1") \
  X(kBeta2, "beta2") \
  X(kBlockSize, "block_size") \
  X(kCkptDir, "ckpt_dir") \
  X(kCkptEvery, "ckpt_every") \
  X(kComm, "comm") \
  X(kData, "data") \
  X(kDelayedUpdate, "delayed_update") \
  X(kDevice, "device") \
  X(kDiscardNewer, "discard_newer") \
  X(kDp, "dp") \
  X(kDtype, "dtype") \
  X(kEngine, "engine") \
  X(kEps, "eps") \
  X(kExport, "export") \
  X(kExportDir, "export_dir") \
  X(kExportGrads, "export_grads") \
  X(kFfnDim, "ffn_dim") \
  X(kGds, "gds") \
  X(kGpuMem, "gpu_mem") \
  X(kGradClip, "grad_clip") \
  X(kHostEviction, "host_eviction") \
  X(kHostMem, "host_mem") \
  X(kInit, "init") \
  X(kKeep, "keep") \
  X(kKeepCheckpoints, "keep_checkpoints") \
  X(kLr, "lr") \
  X(kLrSchedule, "lr_schedule") \
  X(kMicroBatch, "micro_batch") \
  X(kMicroBatchOrder, "micro_batch_order") \
  X(kMinLr, "min_lr") \
  X(kModel, "model") \
  X(kMovementOnly, "movement_only") \
  X(kNEmbd, "n_embd") \
  X(kNHead, "n_head") \
  X(kNKvHead, "n_kv_head") \
  X(kNLayer, "n_layer") \
  X(kNormEps, "norm_eps") \
  X(kNvmeDir, "nvme_dir") \
  X(kNvmeMem, "nvme_mem") \
  X(kOptimizerOn, "optimizer_on") \
  X(kPageSize, "page_size") \
  X(kParamsOn, "params_on") \
  X(kPp, "pp") \
  X(kPpPartition, "pp_partition") \
  X(kRecompute, "recompute") \
  X(kResume, "resume") \
  X(kResumeFrom, "resume_from") \
  X(kRopeTheta, "rope_theta") \
  X(kSchedule, "schedule") \
  X(kSeed, "seed") \
  X(kSeq, "seq") \
  X(kShard, "shard") \
  X(kSimLinkGbps, "sim_link_gbps") \
  X(kSplitOps, "split_ops") \
  X(kSteps, "steps") \
  X(kThreads, "threads") \
  X(kTieEmbeddings, "tie_embeddings") \
  X(kTp, "tp") \
  X(kTrace, "trace") \
  X(kVocab, "vocab") \
  X(kWarmup, "warmup") \
  X(kWeightDecay, "weight_decay")
// clang-format on

enum class Option : uint8_t {
#define STRATA_OPTION_ENUM_(name, key) name,
  STRATA_OPTIONS(STRATA_OPTION_ENUM_)
#undef STRATA_OPTION_ENUM_
};

// "nvme_mem" for Option::kNvmeMem.
std::string_view OptionKey(Option option);
// The option whose key is `key`, or nullopt.
std::optional<Option> OptionOfKey(std::string_view key);

// How a message below the edges names `option`: "{nvme_mem}" (Note [Options in messages]).
std::string Mention(Option option);

// The words an edge gives an option: a flag, an option key.
using OptionWords = std::string (*)(Option);

// `message` with every mention worded by `words`; text that is no mention is kept as it is.
std::string WordMentions(std::string_view message, OptionWords words);

// The structured form of "this option's value is wrong": the option at fault and the numbers
// that show it (name and value: "got" 0, "need_bytes" 1 << 30, "blocks" 12). Sizes are bytes.
// A Status detail (status.h): attached by AtFault, read by DetailOf<OptionFault>(status).
// The numbers of a fault, by name ("got" 0, "need_bytes" 1 << 30).
using OptionNumbers = std::vector<std::pair<std::string, int64_t>>;

struct OptionFault {
  Option option = Option::kBatch;
  OptionNumbers numbers;

  // The number named `name`, or nullopt.
  std::optional<int64_t> number(std::string_view name) const;
};

// Shorthand for the common case: `status` at fault of `option`, with `numbers`.
inline Status AtFault(Option option, const Status& status, OptionNumbers numbers = {}) {
  return WithDetail(status, OptionFault{option, std::move(numbers)});
}

// A byte count or size as a fault's number: the largest int64_t stands for anything above it.
inline int64_t FaultNumber(uint64_t v) {
  return v > uint64_t{INT64_MAX} ? INT64_MAX : static_cast<int64_t>(v);
}

// `status` at fault of `option`, which gave `got_bytes` where `need_bytes` are needed: the numbers
// "got" and "need_bytes" (FaultNumber'd). The shape of every "too few bytes" refusal: a budget
// below what a plan needs, a size the machine cannot map.
Status ShortOfBytes(Option option, const Status& status, uint64_t got_bytes, uint64_t need_bytes);

// InvalidArgument "{option} must be <choices>, got '<got>'", at fault of `option`: the refusal
// of a value outside an option's choices ("none, all or auto").
Status NotOneOf(Option option, std::string_view choices, const std::string& got);

}  // namespace strata
