// LlamaConfigFromHf (llama_config.h): a Hugging Face config.json read as a LlamaConfig, refusing
// what Strata's LLaMA does not compute rather than training something else silently.
#include <algorithm>
#include <optional>

#include "core/nn/shape_limits.h"
#include "core/util/option.h"
#include "models/llama/llama_config.h"

namespace strata::models {
namespace {

using nlohmann::json;

Status InitFault(Status s) { return AtFault(Option::kInit, std::move(s)); }

Status NotImplemented(const std::string& path, const std::string& key, const std::string& what) {
  return InitFault(Status::NotSupported(path + ": " + key + " " + what +
                                        " is not implemented by Strata's LLaMA (Hugging Face "
                                        "LlamaForCausalLM without it); remove the key only if "
                                        "the checkpoint was trained without it"));
}

// An integer key (required unless `fallback` is given).
Result<int> IntKey(const json& c, const char* key, const std::string& path,
                   std::optional<int> fallback = std::nullopt) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) {
    if (fallback) return *fallback;
    return InitFault(Status::Corruption(path + " has no \"" + key + "\"; a LLaMA config.json "
                                        "needs it"));
  }
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 ||
      it->get<int64_t>() > int64_t{1} << 30) {
    return InitFault(Status::Corruption(path + ": \"" + key + "\" is " + it->dump() +
                                        ", not a positive integer"));
  }
  return int(it->get<int64_t>());
}

Result<double> NumberKey(const json& c, const char* key, const std::string& path,
                         double fallback) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) return fallback;
  if (!it->is_number()) {
    return InitFault(Status::Corruption(path + ": \"" + key + "\" is " + it->dump() +
                                        ", not a number"));
  }
  return it->get<double>();
}

// What Strata's LLaMA does not compute, named by its key.
Status CheckImplemented(const json& c, const std::string& path) {
  if (const auto t = c.find("model_type"); t != c.end() && *t != "llama") {
    return NotImplemented(path, "model_type", t->dump());
  }
  if (const auto r = c.find("rope_scaling"); r != c.end() && !r->is_null()) {
    return NotImplemented(path, "rope_scaling", r->dump());
  }
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (const auto b = c.find(bias); b != c.end() && *b == true) {
      return NotImplemented(path, bias, "true");
    }
  }
  if (const auto a = c.find("hidden_act"); a != c.end() && *a != "silu") {
    return NotImplemented(path, "hidden_act", a->dump());
  }
  return Status::Ok();
}

}  // namespace

Result<LlamaConfig> LlamaConfigFromHf(const json& c, const std::string& path) {
  STRATA_RETURN_IF_ERROR(CheckImplemented(c, path));
  LlamaConfig out;
  STRATA_ASSIGN_OR_RETURN(out.n_embd, IntKey(c, "hidden_size", path));
  STRATA_ASSIGN_OR_RETURN(out.ffn_dim, IntKey(c, "intermediate_size", path));
  STRATA_ASSIGN_OR_RETURN(out.n_head, IntKey(c, "num_attention_heads", path));
  STRATA_ASSIGN_OR_RETURN(out.n_kv_head, IntKey(c, "num_key_value_heads", path, out.n_head));
  STRATA_ASSIGN_OR_RETURN(out.n_layer, IntKey(c, "num_hidden_layers", path));
  STRATA_ASSIGN_OR_RETURN(out.vocab_size, IntKey(c, "vocab_size", path));
  // LLaMA has no position table: the context bounds --seq only, so a published maximum above
  // what Strata trains at (Note [Shape limits]) is read as that limit.
  STRATA_ASSIGN_OR_RETURN(const int context, IntKey(c, "max_position_embeddings", path));
  out.block_size = std::min(context, kMaxBlockSize);
  STRATA_ASSIGN_OR_RETURN(out.rope_theta, NumberKey(c, "rope_theta", path, 10000.0));
  STRATA_ASSIGN_OR_RETURN(const double eps, NumberKey(c, "rms_norm_eps", path, 1e-6));
  out.norm_eps = float(eps);
  if (const auto t = c.find("tie_word_embeddings"); t != c.end() && !t->is_null()) {
    if (!t->is_boolean()) {
      return InitFault(Status::Corruption(path + ": \"tie_word_embeddings\" is " + t->dump() +
                                          ", not true or false"));
    }
    out.tie_embeddings = t->get<bool>();
  }
  if (const auto h = c.find("head_dim"); h != c.end() && !h->is_null() && out.n_head > 0 &&
                                         (*h != out.n_embd / out.n_head)) {
    return NotImplemented(path, "head_dim", h->dump() + " (not hidden_size / num_attention_heads)");
  }
  STRATA_RETURN_IF_ERROR(out.validate().with_context(path));
  return out;
}

}  // namespace strata::models
