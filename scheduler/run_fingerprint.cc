#include "scheduler/run_fingerprint.h"

#include <xxhash.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <utility>
#include <vector>

namespace strata::scheduler {
namespace {

// Every field with its flag: the one table that ties them (to_map and CheckSameRun read it).
constexpr std::pair<const char*, std::string RunFingerprint::*> kFields[] = {
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
    {"--shard", &RunFingerprint::shard},
    {"--dtype", &RunFingerprint::dtype},
};

// Fields added after the first records: a record without one held its default.
bool IsDefaultOfLaterField(const std::string& flag, const std::string& value) {
  return (flag == "--shard" && value == "none") || (flag == "--dtype" && value == "fp32");
}

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
                                          uint64_t page_bytes, const std::string& shard) {
  RunFingerprint f;
  f.shard = shard;
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
  f.min_lr = FloatText(o.min_lr);
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

Status CheckSameRun(const RunFingerprint& now, const std::map<std::string, std::string>& recorded) {
  for (const auto& [flag, field] : kFields) {
    const std::string& value = now.*field;
    auto it = recorded.find(flag);
    if (it != recorded.end() && it->second == value) continue;
    if (it == recorded.end() && IsDefaultOfLaterField(flag, value)) continue;
    const std::string was = it == recorded.end() ? "(not recorded)" : it->second;
    return Status::InvalidArgument(std::string("--resume: ") + flag + " " + value +
                                   " differs from the checkpoint's " + was + " (" + kMayChange +
                                   "); pass the checkpointed run's " + flag +
                                   ", or start a new run in an empty --ckpt-dir and --nvme-dir");
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
