#include "embed/messages.h"

#include <string_view>
#include <utility>

#include "core/util/option.h"

namespace strata::embed {
namespace {

// The C API's key for an option the layers below mention (Note [Options in messages] in
// core/util/option.h): the shared key, but for the checkpoint directory, which the C API
// calls checkpoint_dir. An option the C API lacks keeps its key, which names it as well.
std::string OptionKeyWords(Option option) {
  if (option == Option::kCkptDir) return "checkpoint_dir";
  return std::string(OptionKey(option));
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
  return StoreFullInCApiTerms(WordMentions(message, OptionKeyWords));
}

}  // namespace strata::embed
