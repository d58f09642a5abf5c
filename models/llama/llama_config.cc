#include "models/llama/llama_config.h"

#include <cstdio>

#include "core/nn/presets.h"
#include "core/nn/shape_limits.h"
#include "core/util/option.h"

namespace strata::models {
namespace {

// {n_layer, n_embd, n_head, n_kv_head, ffn_dim, vocab, block, theta, eps, tied}. The blocks of
// the published models are their config.json's; the context is what Strata trains at (no
// rope_scaling), the published maximum for the older models.
const NamedPreset<LlamaConfig> kPresets[] = {
    {"llama-tiny", {2, 64, 4, 2, 128, 256, 64, 10000.0, 1e-5f, false}},
    {"llama-small", {6, 384, 6, 2, 1024, 256, 256, 10000.0, 1e-5f, false}},
    {"tinyllama-1.1b", {22, 2048, 32, 4, 5632, 32000, 2048, 10000.0, 1e-5f, false}},
    {"llama3.2-1b", {16, 2048, 32, 8, 8192, 128256, 8192, 500000.0, 1e-5f, true}},
    {"llama2-7b", {32, 4096, 32, 32, 11008, 32000, 4096, 10000.0, 1e-5f, false}},
    {"llama3-8b", {32, 4096, 32, 8, 14336, 128256, 8192, 500000.0, 1e-5f, false}},
};

Status InRange(int v, int max, Option option, const char* what) {
  if (v > 0 && v <= max) return Status::Ok();
  return AtFault(option,
                 Status::InvalidArgument(Mention(option) + " " + std::to_string(v) +
                                         " is out of range: " + what + " must be between 1 and " +
                                         std::to_string(max)),
                 {{"got", v}, {"max", max}});
}

// Head and width rules, once every dimension is in range.
Status CheckHeads(const LlamaConfig& c) {
  if (c.n_embd % c.n_head != 0) {
    return AtFault(Option::kNEmbd,
                   Status::InvalidArgument(Mention(Option::kNEmbd) + " " +
                                           std::to_string(c.n_embd) + " is not divisible by " +
                                           Mention(Option::kNHead) + " " +
                                           std::to_string(c.n_head) +
                                           "; each head needs n_embd / n_head channels"),
                   {{"n_embd", c.n_embd}, {"n_head", c.n_head}});
  }
  if (c.n_head % c.n_kv_head != 0) {
    return AtFault(Option::kNKvHead,
                   Status::InvalidArgument(
                       Mention(Option::kNKvHead) + " " + std::to_string(c.n_kv_head) +
                       " does not divide " + Mention(Option::kNHead) + " " +
                       std::to_string(c.n_head) +
                       "; each key/value head serves the same number of query heads"),
                   {{"n_kv_head", c.n_kv_head}, {"n_head", c.n_head}});
  }
  if (c.head_dim() % 2 != 0) {
    return AtFault(Option::kNHead,
                   Status::InvalidArgument("the head dimension " + Mention(Option::kNEmbd) +
                                           " / " + Mention(Option::kNHead) + " = " +
                                           std::to_string(c.head_dim()) +
                                           " is odd; rotary embeddings rotate pairs of channels"),
                   {{"head_dim", c.head_dim()}, {"n_embd", c.n_embd}, {"n_head", c.n_head}});
  }
  return Status::Ok();
}

}  // namespace

Status LlamaConfig::validate() const {
  STRATA_RETURN_IF_ERROR(InRange(n_layer, kMaxLayers, Option::kNLayer, "the number of blocks"));
  STRATA_RETURN_IF_ERROR(InRange(n_head, kMaxHeads, Option::kNHead, "the number of heads"));
  STRATA_RETURN_IF_ERROR(
      InRange(n_kv_head, kMaxHeads, Option::kNKvHead, "the number of key/value heads"));
  STRATA_RETURN_IF_ERROR(InRange(n_embd, kMaxEmbd, Option::kNEmbd, "the embedding width"));
  STRATA_RETURN_IF_ERROR(InRange(ffn_dim, kLlamaMaxFfn, Option::kFfnDim, "the MLP width"));
  STRATA_RETURN_IF_ERROR(
      InRange(vocab_size, kLlamaMaxVocab, Option::kVocab, "the vocabulary size"));
  STRATA_RETURN_IF_ERROR(
      InRange(block_size, kMaxBlockSize, Option::kBlockSize, "the context length in tokens"));
  STRATA_RETURN_IF_ERROR(CheckHeads(*this));
  if (!(rope_theta > 1.0 && rope_theta <= 1e9)) {
    return AtFault(Option::kRopeTheta,
                   Status::InvalidArgument(Mention(Option::kRopeTheta) + " " +
                                           std::to_string(rope_theta) +
                                           " is out of range: the rotary base must be in (1, 1e9]"),
                   {{"got", int64_t(rope_theta)}, {"min", 1}, {"max", 1000000000}});
  }
  if (!(norm_eps > 0.0f && norm_eps < 1.0f)) {
    return AtFault(Option::kNormEps,
                   Status::InvalidArgument(Mention(Option::kNormEps) + " " +
                                           std::to_string(norm_eps) +
                                           " is out of range: RMSNorm's epsilon must be in (0, 1)"));
    // No numbers: a fault's numbers are whole (core/util/option.h), and epsilon is not.
  }
  return Status::Ok();
}

int64_t LlamaConfig::num_params() const {
  const int64_t C = n_embd, L = n_layer, F = ffn_dim, KV = int64_t(n_kv_head) * head_dim();
  const int64_t per_block = C /*input norm*/ + C * C /*q*/ + 2 * C * KV /*k, v*/ + C * C /*o*/ +
                            C /*post-attention norm*/ + 3 * C * F /*gate, up, down*/;
  const int64_t embed = int64_t(vocab_size) * C;
  return embed + L * per_block + C /*final norm*/ + (tie_embeddings ? 0 : embed);
}

std::string LlamaConfig::to_string() const {
  char buf[256];
  const double p = double(num_params());
  std::snprintf(buf, sizeof buf,
                "llama(n_layer=%d, n_embd=%d, n_head=%d, n_kv_head=%d, ffn=%d, vocab=%d, block=%d, "
                "theta=%g%s, params=%.2f%s)",
                n_layer, n_embd, n_head, n_kv_head, ffn_dim, vocab_size, block_size, rope_theta,
                tie_embeddings ? ", tied" : "", p >= 1e9 ? p / 1e9 : p / 1e6,
                p >= 1e9 ? "B" : "M");
  return buf;
}

Result<LlamaConfig> LlamaPreset(const std::string& name) {
  return FindPreset(kPresets, name, " LLaMA presets");
}

std::vector<std::string> LlamaPresetNames() { return PresetNames(kPresets); }

}  // namespace strata::models
