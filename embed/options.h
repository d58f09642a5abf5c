// EmbedOptions: what a runtime of the C API is made from (include/strata.h, "options").
//
// The C API takes options as key/value strings, as strata's command line does; Parse turns
// them into this struct once, so every later error names the key the user set.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "core/util/status.h"

namespace strata::embed {

struct EmbedOptions {
  std::string device = "sim";
  uint64_t gpu_bytes = 256ull << 20;
  uint64_t host_bytes = 0;  // required
  std::vector<std::string> nvme_dirs;
  uint64_t nvme_bytes = 0;  // 0: sized by memory::SizeNvmeTier (embed/runtime_store.cc), >= 64 MiB
  uint64_t page_bytes = 16ull << 20;
  int threads = 0;  // 0: every core
  std::string checkpoint_dir;
  std::string resume;  // a checkpoint name in checkpoint_dir
  uint64_t keep_checkpoints = 0;  // 0: every checkpoint is kept; K: the newest K
  uint64_t stall_timeout_ms = 30'000;
  std::string log_level = "warn";  // spdlog's, process-wide
};

// The raw key/value pairs, in the order set (a key set twice keeps both values: nvme_dir).
class OptionValues {
 public:
  // InvalidArgument for an unknown key (the message lists the known ones) or an empty value.
  Status set(const std::string& key, const std::string& value);
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// Every value checked: sizes parse ("64M"), page_size is a multiple of 4K, host_mem is
// given and holds at least kMinHostPages pages, threads >= 0.
Result<EmbedOptions> ParseOptions(const OptionValues& values);

// The optimizer holds a parameter page, a gradient page and two moment pages at once, and the
// embedder at least one more.
inline constexpr uint64_t kMinHostPages = 5;

}  // namespace strata::embed
