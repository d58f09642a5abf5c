#include "embed/messages.h"

#include <string_view>
#include <utility>

namespace strata::embed {
namespace {

std::string InOptionTerms(std::string message) {
  static constexpr std::pair<std::string_view, std::string_view> kTerms[] = {
      {"--nvme-dir", "nvme_dir"}, {"--nvme-mem", "nvme_mem"},   {"--host-mem", "host_mem"},
      {"--gpu-mem", "gpu_mem"},   {"--page-size", "page_size"}, {"--ckpt-dir", "checkpoint_dir"},
      {"--threads", "threads"},   {"--device", "device"}};
  for (const auto& [flag, key] : kTerms) {
    for (size_t at = message.find(flag); at != std::string::npos; at = message.find(flag, at)) {
      message.replace(at, flag.size(), key);
    }
  }
  return message;
}

// The page store's "NVMe store is full: <facts>" ends, for the command line, in advice about
// `strata ckpt prune` and --resume, which do not apply to a C API runtime: the advice from its
// first "; " after the facts on is replaced by the C API's.
std::string StoreFullInCApiTerms(std::string message) {
  constexpr std::string_view kFull = "NVMe store is full";
  const size_t at = message.find(kFull);
  if (at == std::string::npos) return message;
  const size_t advice = message.find("; ", at);
  if (advice != std::string::npos) message.resize(advice);
  return message +
         "; drop checkpoints no longer needed (strata_checkpoint_drop, or the option "
         "keep_checkpoints to keep only the newest), or reopen the runtime (option resume) with "
         "a larger nvme_mem";
}

}  // namespace

std::string InCApiTerms(std::string message) {
  return InOptionTerms(StoreFullInCApiTerms(std::move(message)));
}

}  // namespace strata::embed
