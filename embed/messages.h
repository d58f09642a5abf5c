// The C API's words for the errors of the layers below (include/strata.h, "Errors").
//
// storage/ and memory/ state facts, naming options by their mentions (Note [Options in messages]
// in core/util/option.h), and some of their messages also advise in the terms of strata's
// command line (`strata ckpt`), which an embedder never sees. The C API's edge (c_api.cc) passes
// every message through InCApiTerms:
// - an option mention becomes the option key that sets it ({nvme_dir}: nvme_dir; {ckpt_dir}:
//   checkpoint_dir);
// - "NVMe store is full" keeps its facts, and its advice becomes the C API's: drop checkpoints
//   with strata_checkpoint_drop or the option keep_checkpoints, or reopen with a larger
//   nvme_mem (Note [Dropping checkpoints] in checkpoint_book.h).
#pragma once
#include <string>

namespace strata::embed {

std::string InCApiTerms(std::string message);

}  // namespace strata::embed
