#include "scheduler/run_fingerprint.h"

#include <xxhash.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::scheduler {
namespace {

// Every field with its flag: the one table that ties them (to_map and CheckSameRun read it). The
// layout comes first, so that a resume under another grid is named as such before the
// micro-batch rows that follow from it.
constexpr std::pair<const char*, std::string RunFingerprint::*> kFields[] = {
    {"--dp", &RunFingerprint::dp},
    {"--tp", &RunFingerprint::tp},
    {"--pp", &RunFingerprint::pp},
    {"rank", &RunFingerprint::rank},
    {"--shard", &RunFingerprint::shard},
    {"micro-batch rows", &RunFingerprint::micro_rows},
    {"--model", &RunFingerprint::model},
    {"--data", &RunFingerprint::data},
    {"--init", &RunFingerprint::init},
    {"--lr", &RunFingerprint::lr},
    {"--min-lr", &RunFingerprint::min_lr},
    {"--warmup", &RunFingerprint::warmup},
    {"--lr-schedule", &RunFingerprint::lr_schedule},
    {"--weight-decay", &RunFingerprint::weight_decay},
    {"--beta1", &RunFingerprint::beta1},
    {"--beta2", &RunFingerprint::beta2},
    {"--eps", &RunFingerprint::eps},
    {"--grad-clip", &RunFingerprint::grad_clip},
    {"--seed", &RunFingerprint::seed},
    {"--batch", &RunFingerprint::batch},
    {"--micro-batch", &RunFingerprint::micro_batch},
    {"--seq", &RunFingerprint::seq},
    {"--page-size", &RunFingerprint::page_size},
    {"--delayed-update", &RunFingerprint::delayed_update},
    {"--dtype", &RunFingerprint::dtype},
};

// Fields added after the first records: a record without one held its default.
bool IsDefaultOfLaterField(const std::string& flag, const std::string& value) {
  return (flag == "--shard" && value == "none") || (flag == "--dtype" && value == "fp32");
}

// The layout's fields, added on 2026-11-27: a record without them does not say (unknown, not
// compared; the CLI recognises an older rank's directory by its name, tools/resume_dirs.h).
bool IsUnknownInOlderRecords(const std::string& flag) {
  return flag == "--dp" || flag == "--tp" || flag == "--pp" || flag == "rank" ||
         flag == "micro-batch rows";
}

int Count(const std::map<std::string, std::string>& m, const char* flag) {
  auto it = m.find(flag);
  if (it == m.end()) return 0;
  int value = 0;
  const auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  return r.ec == std::errc() ? value : 0;
}

std::string Value(const std::map<std::string, std::string>& m, const char* flag,
                  const char* absent) {
  auto it = m.find(flag);
  return it == m.end() ? std::string(absent) : it->second;
}

// --shard's recorded value is the layout it produced; "none" is the flag's own word.
std::string ShardWords(const std::string& value) {
  return value == "none" ? "none (every rank holds every block whole: --shard none)" : value;
}

constexpr const char* kNoOtherLayout =
    "resuming under another layout is not built yet: resume the job as it was launched";

constexpr const char* kMayChange =
    "flags that may change on resume: --steps, budgets, threads, outputs";

std::string FloatText(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, r.ptr);
}

// "<bytes> bytes, xxh3 <hex>" of a file, read in 1 MiB pieces.
Result<std::string> FileIdentity(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno(errno, std::string(flag) + ": cannot read " + path);
  XXH3_state_t* state = XXH3_createState();
  STRATA_CHECK(state != nullptr);
  XXH3_64bits_reset(state);
  std::vector<char> buf(1 << 20);
  uint64_t bytes = 0;
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    XXH3_64bits_update(state, buf.data(), size_t(n));
    bytes += uint64_t(n);
  }
  const bool failed = in.bad();
  const uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  if (failed) return Status::IoError(std::string(flag) + ": reading " + path + " failed");
  char text[80];
  std::snprintf(text, sizeof text, "%llu bytes, xxh3 %016llx",
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(hash));
  return std::string(text);
}

}  // namespace

std::map<std::string, std::string> RunFingerprint::to_map() const {
  std::map<std::string, std::string> out;
  for (const auto& [flag, field] : kFields) {
    if (!IsDefaultOfLaterField(flag, this->*field)) out[flag] = this->*field;
  }
  return out;
}

std::string RunFingerprint::summary() const {
  return model + " batch " + batch + " micro " + micro_batch + " seq " + seq + " page " +
         page_size + " seed " + seed + (delayed_update == "on" ? " delayed-update" : "");
}

Result<RunFingerprint> MakeRunFingerprint(const TrainOptions& o, const GptConfig& config, int seq,
                                          uint64_t page_bytes, const RunLayout& layout) {
  RunFingerprint f;
  f.shard = layout.shard;
  f.dp = std::to_string(layout.dp);
  f.tp = std::to_string(layout.tp);
  f.pp = std::to_string(layout.pp);
  f.rank = std::to_string(layout.rank);
  f.micro_rows = std::to_string(layout.micro_rows > 0 ? layout.micro_rows
                                                      : (o.micro_batch > 0 ? o.micro_batch
                                                                           : o.batch));
  f.model = config.to_string();
  if (o.data == "builtin") {
    f.data = "builtin";
  } else {
    STRATA_ASSIGN_OR_RETURN(f.data, FileIdentity(o.data, "--data"));
  }
  if (o.init_path.empty()) {
    f.init = "none";
  } else {
    STRATA_ASSIGN_OR_RETURN(f.init, FileIdentity(o.init_path, "--init"));
  }
  f.lr = FloatText(o.lr);
  f.min_lr = FloatText(o.min_lr >= 0 ? o.min_lr : 0.1f * o.lr);  // as LearningRateAt reads it
  f.warmup = std::to_string(o.warmup);
  f.lr_schedule = o.lr_schedule;
  f.weight_decay = FloatText(o.weight_decay);
  f.beta1 = FloatText(o.beta1);
  f.beta2 = FloatText(o.beta2);
  f.eps = FloatText(o.eps);
  f.grad_clip = FloatText(o.grad_clip);
  f.seed = std::to_string(o.seed);
  f.batch = std::to_string(o.batch);
  f.micro_batch = std::to_string(o.micro_batch);
  f.seq = std::to_string(seq);
  f.page_size = std::to_string(page_bytes);
  f.delayed_update = o.delayed_update ? "on" : "off";
  f.dtype = o.dtype;
  return f;
}

std::string FingerprintDigest(const std::map<std::string, std::string>& fields) {
  std::string text;
  for (const auto& [flag, value] : fields) text += flag + '\0' + value + '\0';
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  return hex;
}

std::string RecordedGrid(const std::map<std::string, std::string>& m) {
  return "--dp " + Value(m, "--dp", "1") + " --tp " + Value(m, "--tp", "1") + " --pp " +
         Value(m, "--pp", "1");
}

int RecordedRanks(const std::map<std::string, std::string>& recorded) {
  if (recorded.find("--dp") == recorded.end()) return 0;
  const int tp = recorded.count("--tp") ? Count(recorded, "--tp") : 1;
  const int pp = recorded.count("--pp") ? Count(recorded, "--pp") : 1;
  return Count(recorded, "--dp") * tp * pp;
}

namespace {

// The refusal of a resume whose `flag` is `value` where the checkpoint's run had `was`.
Status Differs(const RunFingerprint& now, const std::map<std::string, std::string>& recorded,
               const std::string& flag, const std::string& value, const std::string& was) {
  const std::string to_new = "; or start a new run in an empty --ckpt-dir and --nvme-dir";
  if (flag == "--dp" || flag == "--tp" || flag == "--pp") {
    return Status::InvalidArgument(
        "--resume: " + flag + " " + value + " differs from the checkpoint's " + flag + " " + was +
        ": it was written by rank " + Value(recorded, "rank", "0") + " of a job of " +
        std::to_string(RecordedRanks(recorded)) + " rank(s) (" + RecordedGrid(recorded) +
        "), and this run is " + RecordedGrid(now.to_map()) + "; " + kNoOtherLayout + to_new);
  }
  if (flag == "rank") {
    return Status::InvalidArgument("--resume: this process is rank " + value +
                                   " of the job but the checkpoint is rank " + was +
                                   "'s: give every rank the job's --ckpt-dir and --nvme-dir "
                                   "(each rank resumes from its own rank-N directory)");
  }
  if (flag == "micro-batch rows") {
    return Status::InvalidArgument(
        "--resume: this run computes micro-batches of " + value + " rows (--batch, --micro-batch "
        "and --dp) but the checkpointed run computed micro-batches of " + was + " rows, whose "
        "gradients add up in another order; pass flags that give micro-batches of " + was +
        " rows" + to_new);
  }
  if (flag == "--shard") {
    return Status::InvalidArgument("--resume: --shard lays out this run's state as " +
                                   ShardWords(value) + ", but the checkpoint's as " +
                                   ShardWords(was) + "; pass the checkpointed run's --shard (" +
                                   kNoOtherLayout + ")" + to_new);
  }
  return Status::InvalidArgument("--resume: " + flag + " " + value +
                                 " differs from the checkpoint's " + was + " (" + kMayChange +
                                 "); pass the checkpointed run's " + flag + to_new);
}

// Records before 2026-11-27 kept --min-lr's "not given" sentinel, -1: 10% of their --lr.
std::map<std::string, std::string> WithoutSentinels(std::map<std::string, std::string> recorded) {
  auto min_lr = recorded.find("--min-lr");
  auto lr = recorded.find("--lr");
  if (min_lr != recorded.end() && min_lr->second == "-1" && lr != recorded.end()) {
    float value = 0;
    std::from_chars(lr->second.data(), lr->second.data() + lr->second.size(), value);
    min_lr->second = FloatText(0.1f * value);
  }
  return recorded;
}

}  // namespace

Status CheckSameRun(const RunFingerprint& now,
                    const std::map<std::string, std::string>& recorded_as_written) {
  const std::map<std::string, std::string> recorded = WithoutSentinels(recorded_as_written);
  for (const auto& [flag, field] : kFields) {
    const std::string& value = now.*field;
    auto it = recorded.find(flag);
    if (it != recorded.end() && it->second == value) continue;
    if (it == recorded.end() && IsDefaultOfLaterField(flag, value)) continue;
    if (it == recorded.end() && IsUnknownInOlderRecords(flag)) continue;
    // A later field's absence is its default (an older record).
    const std::string_view name = flag;
    const std::string was = it != recorded.end() ? it->second
                            : name == "--shard"  ? std::string("none")
                            : name == "--dtype"  ? std::string("fp32")
                                                 : std::string("(not recorded)");
    return Differs(now, recorded, flag, value, was);
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
