#include "models/gpt2/gpt_config.h"

#include <cstdio>

#include "core/nn/presets.h"
#include "core/util/option.h"

namespace strata {
namespace {

constexpr NamedPreset<GptConfig> kPresets[] = {
    {"tiny", {2, 2, 32, 256, 64}},
    {"small", {6, 6, 384, 256, 256}},
    {"gpt2", {12, 12, 768, 50257, 1024}},
    {"gpt2-medium", {24, 16, 1024, 50257, 1024}},
    {"gpt2-large", {36, 20, 1280, 50257, 1024}},
    {"gpt2-xl", {48, 25, 1600, 50257, 1024}},
};

}  // namespace

Status GptConfig::validate() const {
  // Note [Shape limits]: bounds first, so that nothing below multiplies unchecked values.
  auto in_range = [](int v, int max, Option option, const char* what) -> Status {
    if (v > 0 && v <= max) return Status::Ok();
    return AtFault(option,
                   Status::InvalidArgument(Mention(option) + " " + std::to_string(v) +
                                           " is out of range: " + what + " must be between 1 and " +
                                           std::to_string(max)),
                   {{"got", v}, {"max", max}});
  };
  STRATA_RETURN_IF_ERROR(in_range(n_layer, kMaxLayers, Option::kNLayer, "the number of blocks"));
  STRATA_RETURN_IF_ERROR(in_range(n_head, kMaxHeads, Option::kNHead, "the number of heads"));
  STRATA_RETURN_IF_ERROR(in_range(n_embd, kMaxEmbd, Option::kNEmbd, "the embedding width"));
  if (vocab_size > kMaxVocab) {
    return AtFault(
        Option::kVocab,
        Status::InvalidArgument(Mention(Option::kVocab) + " " + std::to_string(vocab_size) +
                                " is above 65536, the largest id a uint16 token file holds"),
        {{"got", vocab_size}, {"max", kMaxVocab}});
  }
  STRATA_RETURN_IF_ERROR(in_range(vocab_size, kMaxVocab, Option::kVocab, "the vocabulary size"));
  STRATA_RETURN_IF_ERROR(
      in_range(block_size, kMaxBlockSize, Option::kBlockSize, "the context length in tokens"));
  if (n_embd % n_head != 0) {
    return AtFault(Option::kNEmbd,
                   Status::InvalidArgument(Mention(Option::kNEmbd) + " " + std::to_string(n_embd) +
                                           " is not divisible by " + Mention(Option::kNHead) + " " +
                                           std::to_string(n_head) +
                                           "; each head needs n_embd / n_head channels"),
                   {{"n_embd", n_embd}, {"n_head", n_head}});
  }
  return Status::Ok();
}

int64_t GptConfig::num_params() const {
  const int64_t C = n_embd, L = n_layer;
  const int64_t per_block =
      2 * C + (C * 3 * C + 3 * C) + (C * C + C) + 2 * C + (C * 4 * C + 4 * C) + (4 * C * C + C);
  return int64_t(vocab_size) * C + int64_t(block_size) * C + L * per_block + 2 * C;
}

std::string GptConfig::to_string() const {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "gpt(n_layer=%d, n_head=%d, n_embd=%d, vocab=%d, block=%d, params=%.2fM)", n_layer,
                n_head, n_embd, vocab_size, block_size, num_params() / 1e6);
  return buf;
}

Result<GptConfig> GptPreset(const std::string& name) { return FindPreset(kPresets, name, ""); }

std::vector<std::string> GptPresetNames() { return PresetNames(kPresets); }

}  // namespace strata
