#include "scheduler/run_fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/option.h"

namespace strata::scheduler {
namespace {

// Every field with the option that sets it: the one table that ties them (to_map and
// CheckSameRun read it). The layout comes first, so that a resume under another grid is named as
// such before the micro-batch rows that follow from it. The rank and the micro-batch rows are
// set by no option: `other` names them, in the record and in messages.
struct Field {
  std::optional<Option> option;
  const char* other;
  std::string RunFingerprint::*member;

  std::string key() const { return option ? RecordKey(*option) : other; }
  std::string words() const { return option ? Mention(*option) : other; }
  bool is(Option o) const { return option == o; }
};

const Field kFields[] = {
    {Option::kDp, "", &RunFingerprint::dp},
    {Option::kTp, "", &RunFingerprint::tp},
    {Option::kPp, "", &RunFingerprint::pp},
    {std::nullopt, "rank", &RunFingerprint::rank},
    {Option::kShard, "", &RunFingerprint::shard},
    {std::nullopt, "micro-batch rows", &RunFingerprint::micro_rows},
    {Option::kModel, "", &RunFingerprint::model},
    {Option::kData, "", &RunFingerprint::data},
    {Option::kInit, "", &RunFingerprint::init},
    {Option::kLr, "", &RunFingerprint::lr},
    {Option::kMinLr, "", &RunFingerprint::min_lr},
    {Option::kWarmup, "", &RunFingerprint::warmup},
    {Option::kLrSchedule, "", &RunFingerprint::lr_schedule},
    {Option::kWeightDecay, "", &RunFingerprint::weight_decay},
    {Option::kBeta1, "", &RunFingerprint::beta1},
    {Option::kBeta2, "", &RunFingerprint::beta2},
    {Option::kEps, "", &RunFingerprint::eps},
    {Option::kGradClip, "", &RunFingerprint::grad_clip},
    {Option::kSeed, "", &RunFingerprint::seed},
    {Option::kBatch, "", &RunFingerprint::batch},
    {Option::kMicroBatch, "", &RunFingerprint::micro_batch},
    {Option::kSeq, "", &RunFingerprint::seq},
    {Option::kPageSize, "", &RunFingerprint::page_size},
    {Option::kDelayedUpdate, "", &RunFingerprint::delayed_update},
    {Option::kDtype, "", &RunFingerprint::dtype},
};

// Fields added after the first records: a record without one held its default.
bool IsDefaultOfLaterField(const Field& f, const std::string& value) {
  return (f.is(Option::kShard) && value == "none") || (f.is(Option::kDtype) && value == "fp32");
}

// The layout's fields, added on 2026-11-27: a record without them does not say (unknown, not
// compared; the CLI recognises an older rank's directory by its name, tools/resume_dirs.h).
bool IsUnknownInOlderRecords(const Field& f) {
  return f.is(Option::kDp) || f.is(Option::kTp) || f.is(Option::kPp) || !f.option;
}

int Count(const std::map<std::string, std::string>& m, Option option) {
  auto it = m.find(RecordKey(option));
  if (it == m.end()) return 0;
  int value = 0;
  const auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  return r.ec == std::errc() ? value : 0;
}

std::string Value(const std::map<std::string, std::string>& m, const std::string& key,
                  const char* absent) {
  auto it = m.find(key);
  return it == m.end() ? std::string(absent) : it->second;
}

// --shard's recorded value is the layout it produced; "none" is the option's own word.
std::string ShardWords(const std::string& value) {
  return value == "none"
             ? "none (every rank holds every block whole: " + Mention(Option::kShard) + " none)"
             : value;
}

constexpr const char* kNoOtherLayout =
    "resuming under another layout is not built yet: resume the job as it was launched";

std::string MayChange() {
  return "flags that may change on resume: " + Mention(Option::kSteps) +
         ", budgets, threads, outputs";
}

std::string FloatText(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, r.ptr);
}

// "<bytes> bytes, xxh3 <hex>" of a file, read in 1 MiB pieces.
Result<std::string> FileIdentity(const std::string& path, Option option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return AtFault(option, Status::FromErrno(errno, Mention(option) + ": cannot read " + path));
  }
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
  if (failed) {
    return AtFault(option, Status::IoError(Mention(option) + ": reading " + path + " failed"));
  }
  char text[80];
  std::snprintf(text, sizeof text, "%llu bytes, xxh3 %016llx",
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(hash));
  return std::string(text);
}

// A file's identity, or a directory's (a Hugging Face model directory given to --init): each
// regular file's name and identity, in name order.
Result<std::string> PathIdentity(const std::string& path, Option option) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return FileIdentity(path, option);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) files.push_back(entry.path().filename().string());
  }
  if (ec) {
    return AtFault(option,
                   Status::FromErrno(ec.value(), Mention(option) + ": cannot list " + path));
  }
  std::sort(files.begin(), files.end());
  std::string identity = "directory";
  for (const std::string& f : files) {
    STRATA_ASSIGN_OR_RETURN(const std::string one, FileIdentity(path + "/" + f, option));
    identity += "; " + f + ": " + one;
  }
  return identity;
}

}  // namespace

std::string RecordKey(Option option) {
  // The flag's name when the format was made: the file's key, not a message's words.
  std::string key = "--";
  for (char c : OptionKey(option)) key += c == '_' ? '-' : c;
  return key;
}

std::string RecordKeyWords(const std::string& key) {
  if (key.size() < 3 || key.compare(0, 2, "--") != 0) return key;
  std::string option_key = key.substr(2);
  for (char& c : option_key) c = c == '-' ? '_' : c;
  const std::optional<Option> option = OptionOfKey(option_key);
  return option ? Mention(*option) : key;
}

std::map<std::string, std::string> RunFingerprint::to_map() const {
  std::map<std::string, std::string> out;
  for (const Field& f : kFields) {
    if (!IsDefaultOfLaterField(f, this->*f.member)) out[f.key()] = this->*f.member;
  }
  return out;
}

std::string RunFingerprint::summary() const {
  return model + " batch " + batch + " micro " + micro_batch + " seq " + seq + " page " +
         page_size + " seed " + seed + (delayed_update == "on" ? " delayed-update" : "");
}

Result<RunFingerprint> MakeRunFingerprint(const TrainOptions& o, const std::string& model, int seq,
                                          uint64_t page_bytes, const RunLayout& layout) {
  RunFingerprint f;
  f.shard = layout.shard;
  f.dp = std::to_string(layout.dp);
  f.tp = std::to_string(layout.tp);
  f.pp = std::to_string(layout.pp);
  f.rank = std::to_string(layout.rank);
  f.micro_rows = std::to_string(layout.micro_rows > 0
                                    ? layout.micro_rows
                                    : (o.data.micro_batch > 0 ? o.data.micro_batch : o.data.batch));
  f.model = model;
  if (o.data.path == "builtin") {
    f.data = "builtin";
  } else {
    STRATA_ASSIGN_OR_RETURN(f.data, FileIdentity(o.data.path, Option::kData));
  }
  if (o.model.init_path.empty()) {
    f.init = "none";
  } else {
    STRATA_ASSIGN_OR_RETURN(f.init, PathIdentity(o.model.init_path, Option::kInit));
  }
  f.lr = FloatText(o.optimizer.lr);
  f.min_lr =
      FloatText(o.optimizer.min_lr >= 0 ? o.optimizer.min_lr
                                        : 0.1f * o.optimizer.lr);  // as LearningRateAt reads it
  f.warmup = std::to_string(o.optimizer.warmup);
  f.lr_schedule = o.optimizer.lr_schedule;
  f.weight_decay = FloatText(o.optimizer.weight_decay);
  f.beta1 = FloatText(o.optimizer.beta1);
  f.beta2 = FloatText(o.optimizer.beta2);
  f.eps = FloatText(o.optimizer.eps);
  f.grad_clip = FloatText(o.optimizer.grad_clip);
  f.seed = std::to_string(o.seed);
  f.batch = std::to_string(o.data.batch);
  f.micro_batch = std::to_string(o.data.micro_batch);
  f.seq = std::to_string(seq);
  f.page_size = std::to_string(page_bytes);
  f.delayed_update = o.optimizer.delayed_update ? "on" : "off";
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
  std::string text;
  for (const Option o : {Option::kDp, Option::kTp, Option::kPp}) {
    text += (text.empty() ? "" : " ") + Mention(o) + " " + Value(m, RecordKey(o), "1");
  }
  return text;
}

int RecordedRanks(const std::map<std::string, std::string>& recorded) {
  if (recorded.find(RecordKey(Option::kDp)) == recorded.end()) return 0;
  const int tp = recorded.count(RecordKey(Option::kTp)) ? Count(recorded, Option::kTp) : 1;
  const int pp = recorded.count(RecordKey(Option::kPp)) ? Count(recorded, Option::kPp) : 1;
  return Count(recorded, Option::kDp) * tp * pp;
}

namespace {

// The numbers among `named` (name, text) that read as integers, as a fault's numbers: a record's
// values are text, and one that is not a number ("(not recorded)") is left out.
OptionNumbers IntegerNumbers(std::initializer_list<std::pair<const char*, std::string>> named) {
  OptionNumbers numbers;
  for (const auto& [name, text] : named) {
    int64_t v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec == std::errc() && r.ptr == text.data() + text.size()) numbers.emplace_back(name, v);
  }
  return numbers;
}

// The refusal of a resume whose field `f` is `value` where the checkpoint's run had `was`.
Status Differs(const RunFingerprint& now, const std::map<std::string, std::string>& recorded,
               const Field& f, const std::string& value, const std::string& was) {
  const std::string resume = Mention(Option::kResume) + ": ";
  const std::string to_new = "; or start a new run in an empty " + Mention(Option::kCkptDir) +
                             " and " + Mention(Option::kNvmeDir);
  const std::string name = f.words();
  if (f.is(Option::kDp) || f.is(Option::kTp) || f.is(Option::kPp)) {
    const std::string rank = Value(recorded, "rank", "0");
    const int ranks = RecordedRanks(recorded);
    return AtFault(
        *f.option,
        Status::InvalidArgument(resume + name + " " + value + " differs from the checkpoint's " +
                                name + " " + was + ": it was written by rank " + rank +
                                " of a job of " + std::to_string(ranks) + " rank(s) (" +
                                RecordedGrid(recorded) + "), and this run is " +
                                RecordedGrid(now.to_map()) + "; " + kNoOtherLayout + to_new),
        IntegerNumbers({{"got", value},
                        {"recorded", was},
                        {"recorded_rank", rank},
                        {"recorded_ranks", std::to_string(ranks)}}));
  }
  if (!f.option && name == "rank") {
    return AtFault(
        Option::kCkptDir,
        Status::InvalidArgument(
            resume + "this process is rank " + value + " of the job but the checkpoint is rank " +
            was + "'s: give every rank the job's " + Mention(Option::kCkptDir) + " and " +
            Mention(Option::kNvmeDir) + " (each rank resumes from its own rank-N directory)"),
        IntegerNumbers({{"rank", value}, {"recorded_rank", was}}));
  }
  if (!f.option) {  // the micro-batch rows
    return AtFault(
        Option::kMicroBatch,
        Status::InvalidArgument(
            resume + "this run computes micro-batches of " + value + " rows (" +
            Mention(Option::kBatch) + ", " + Mention(Option::kMicroBatch) + " and " +
            Mention(Option::kDp) + ") but the checkpointed run computed micro-batches of " + was +
            " rows, whose gradients add up in another order; pass flags that give " +
            "micro-batches of " + was + " rows" + to_new),
        IntegerNumbers({{"rows", value}, {"recorded_rows", was}}));
  }
  if (f.is(Option::kShard)) {
    return AtFault(Option::kShard,
                   Status::InvalidArgument(resume + name + " lays out this run's state as " +
                                           ShardWords(value) + ", but the checkpoint's as " +
                                           ShardWords(was) + "; pass the checkpointed run's " +
                                           name + " (" + kNoOtherLayout + ")" + to_new));
  }
  return AtFault(*f.option,
                 Status::InvalidArgument(
                     resume + name + " " + value + " differs from the checkpoint's " + was + " (" +
                     MayChange() + "); pass the checkpointed run's " + name + to_new));
}

// Records before 2026-11-27 kept --min-lr's "not given" sentinel, -1: 10% of their --lr.
std::map<std::string, std::string> WithoutSentinels(std::map<std::string, std::string> recorded) {
  auto min_lr = recorded.find(RecordKey(Option::kMinLr));
  auto lr = recorded.find(RecordKey(Option::kLr));
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
  for (const Field& f : kFields) {
    const std::string& value = now.*f.member;
    auto it = recorded.find(f.key());
    if (it != recorded.end() && it->second == value) continue;
    if (it == recorded.end() && IsDefaultOfLaterField(f, value)) continue;
    if (it == recorded.end() && IsUnknownInOlderRecords(f)) continue;
    // A later field's absence is its default (an older record).
    const std::string was = it != recorded.end()   ? it->second
                            : f.is(Option::kShard) ? std::string("none")
                            : f.is(Option::kDtype) ? std::string("fp32")
                                                   : std::string("(not recorded)");
    return Differs(now, recorded, f, value, was);
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
