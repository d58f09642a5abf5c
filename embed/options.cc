#include "embed/options.h"

#include <algorithm>
#include <charconv>

#include "core/util/sizes.h"
#include "memory/page_plan.h"

namespace strata::embed {
namespace {

constexpr const char* kKeys[] = {"device",    "gpu_mem",          "host_mem",  "nvme_dir",
                                 "nvme_mem",  "page_size",        "threads",   "checkpoint_dir",
                                 "resume",    "keep_checkpoints", "stall_timeout_ms",
                                 "log_level"};

std::string KnownKeys() {
  std::string all;
  for (const char* k : kKeys) all += std::string(all.empty() ? "" : ", ") + k;
  return all;
}

Result<uint64_t> ParseCount(const std::string& key, const std::string& value) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return Status::InvalidArgument("option " + key + ": '" + value +
                                   "' is not a non-negative whole number");
  }
  return n;
}

Status CheckBudgets(const EmbedOptions& o) {
  if (o.host_bytes == 0) {
    return Status::InvalidArgument(
        "option host_mem is required: the pinned host pool's budget, e.g. \"1G\"");
  }
  if (o.host_bytes < kMinHostPages * o.page_bytes) {
    return Status::ResourceExhausted(
        "host_mem " + FormatBytes(o.host_bytes) + " holds fewer than " +
        std::to_string(kMinHostPages) + " pages of " + FormatBytes(o.page_bytes) +
        " (the optimizer holds four pages at once, the embedder at least one more): raise "
        "host_mem to at least " + FormatBytes(kMinHostPages * o.page_bytes) +
        " or lower page_size");
  }
  if (o.device != "sim" && o.device != "cuda") {
    return Status::InvalidArgument("option device: '" + o.device +
                                   "' is not a device; use \"sim\" or \"cuda\"");
  }
  return Status::Ok();
}

Status Apply(EmbedOptions& o, const std::string& key, const std::string& value) {
  if (key == "device") {
    o.device = value;
  } else if (key == "gpu_mem") {
    STRATA_ASSIGN_OR_RETURN(o.gpu_bytes, ParseBytes(value, "gpu_mem"));
  } else if (key == "host_mem") {
    STRATA_ASSIGN_OR_RETURN(o.host_bytes, ParseBytes(value, "host_mem"));
  } else if (key == "nvme_dir") {
    o.nvme_dirs.push_back(value);
  } else if (key == "nvme_mem") {
    STRATA_ASSIGN_OR_RETURN(o.nvme_bytes, ParseBytes(value, "nvme_mem"));
  } else if (key == "page_size") {
    STRATA_ASSIGN_OR_RETURN(o.page_bytes, ParseBytes(value, "page_size"));
    if (!memory::IsValidPageSize(o.page_bytes)) {
      return Status::InvalidArgument("option page_size: " + std::to_string(o.page_bytes) +
                                     " bytes is not a multiple of 4 KiB (4096 bytes); use e.g. "
                                     "64K, 2.25M or 16M");
    }
  } else if (key == "threads") {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, ParseCount(key, value));
    o.threads = static_cast<int>(std::min<uint64_t>(n, 1024));
  } else if (key == "checkpoint_dir") {
    o.checkpoint_dir = value;
  } else if (key == "resume") {
    o.resume = value;
  } else if (key == "keep_checkpoints") {
    STRATA_ASSIGN_OR_RETURN(o.keep_checkpoints, ParseCount(key, value));
  } else if (key == "log_level") {
    if (value != "debug" && value != "info" && value != "warn" && value != "error" &&
        value != "off") {
      return Status::InvalidArgument("option log_level: '" + value +
                                     "' is not a level; use debug, info, warn, error or off");
    }
    o.log_level = value;
  } else if (key == "stall_timeout_ms") {
    STRATA_ASSIGN_OR_RETURN(o.stall_timeout_ms, ParseCount(key, value));
  }
  return Status::Ok();
}

}  // namespace

Status OptionValues::set(const std::string& key, const std::string& value) {
  if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
    return Status::InvalidArgument("unknown option '" + key + "'; the options are " +
                                   KnownKeys());
  }
  if (value.empty()) return Status::InvalidArgument("option " + key + ": the value is empty");
  values_.emplace_back(key, value);
  return Status::Ok();
}

Result<EmbedOptions> ParseOptions(const OptionValues& values) {
  EmbedOptions o;
  for (const auto& [key, value] : values.values()) STRATA_RETURN_IF_ERROR(Apply(o, key, value));
  if (!o.resume.empty() && o.checkpoint_dir.empty()) {
    return Status::InvalidArgument("option resume='" + o.resume +
                                   "' needs checkpoint_dir, where the checkpoint is recorded");
  }
  if (o.keep_checkpoints != 0 && o.checkpoint_dir.empty()) {
    return Status::InvalidArgument("option keep_checkpoints needs checkpoint_dir, where "
                                   "checkpoints are recorded");
  }
  STRATA_RETURN_IF_ERROR(CheckBudgets(o));
  return o;
}

}  // namespace strata::embed
