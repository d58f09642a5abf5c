#include "scheduler/model_registry.h"

#include <utility>

#include "core/io/hf_checkpoint.h"
#include "core/io/safetensors_reader.h"
#include "core/util/option.h"
#include "models/gpt2/gpt_model.h"
#include "models/gpt2/gpt_weights.h"
#include "models/llama/llama_config.h"
#include "models/llama/llama_model.h"

namespace strata {
namespace {

using enum Option;
using models::LlamaConfig;

constexpr const char* kGpt2 = "gpt2";
constexpr const char* kLlama = "llama";

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& n : names) {
    if (n == name) return true;
  }
  return false;
}

// "--model: unknown model 'x'; known: ..." listing both families' presets.
Status UnknownPreset(const std::string& name) {
  std::string known;
  for (const auto& names : {GptPresetNames(), models::LlamaPresetNames()}) {
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  }
  return AtFault(kModel, Status::InvalidArgument(Mention(kModel) + ": unknown model '" + name +
                                                 "'; known: " + known));
}

// A --init path holds a LLaMA: a Hugging Face directory whose config.json says so (or names a
// family LLaMA's reader then refuses by name), or a file with LLaMA's embedding.
Result<bool> InitHoldsLlama(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const HfCheckpoint ckpt, HfCheckpoint::Open(path));
  if (ckpt.config().has_value()) {
    const nlohmann::json& config = *ckpt.config();
    return !(config.contains("model_type") && config["model_type"] == kGpt2);
  }
  return ckpt.find("model.embed_tokens.weight") != nullptr;
}

Result<std::string> ChooseArch(const ModelChoice& m) {
  if (!m.arch.empty()) {
    if (m.arch != kGpt2 && m.arch != kLlama) return NotOneOf(kArch, "gpt2 or llama", m.arch);
    return m.arch;
  }
  if (m.preset_given) {
    if (Contains(models::LlamaPresetNames(), m.preset)) return std::string(kLlama);
    if (Contains(GptPresetNames(), m.preset)) return std::string(kGpt2);
    return UnknownPreset(m.preset);
  }
  if (!m.init_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(const bool llama, InitHoldsLlama(m.init_path));
    return std::string(llama ? kLlama : kGpt2);
  }
  return std::string(kGpt2);
}

// A preset of the other family than --arch's.
Status PresetOfArch(const ModelChoice& m, const std::string& arch,
                    const std::vector<std::string>& names) {
  if (!m.preset_given || Contains(names, m.preset)) return Status::Ok();
  if (!Contains(GptPresetNames(), m.preset) && !Contains(models::LlamaPresetNames(), m.preset)) {
    return UnknownPreset(m.preset);
  }
  return AtFault(kModel, Status::InvalidArgument(
                             Mention(kModel) + " " + m.preset + " is not a " + arch +
                             " preset, and " + Mention(kArch) + " is " + arch +
                             ": drop one of them"));
}

// --init's shape (unless --model was given) or the preset, then the shape flags; validated.
Result<GptConfig> ResolveGptConfig(const ModelChoice& m) {
  GptConfig c;
  if (!m.init_path.empty() && !m.preset_given) {
    STRATA_ASSIGN_OR_RETURN(c, ReadGptConfigFromSafetensors(m.init_path));
  } else {
    STRATA_ASSIGN_OR_RETURN(c, GptPreset(m.preset));
  }
  ApplyShapeFlags(m, c);
  STRATA_RETURN_IF_ERROR(c.validate());
  return c;
}

Result<std::unique_ptr<Model>> ResolveGpt(const ModelChoice& m) {
  for (const auto& [given, option] :
       {std::pair{m.n_kv_head.has_value(), kNKvHead}, std::pair{m.ffn_dim.has_value(), kFfnDim},
        std::pair{m.rope_theta.has_value(), kRopeTheta},
        std::pair{m.norm_eps.has_value(), kNormEps},
        std::pair{m.tie_embeddings.has_value(), kTieEmbeddings}}) {
    if (given) {
      return AtFault(option, Status::InvalidArgument(
                                 Mention(option) + " is a LLaMA flag and this model is GPT-2: " +
                                 "give " + Mention(kArch) + " llama (or a LLaMA " +
                                 Mention(kModel) + "), or drop it"));
    }
  }
  STRATA_RETURN_IF_ERROR(PresetOfArch(m, kGpt2, GptPresetNames()));
  STRATA_ASSIGN_OR_RETURN(const GptConfig c, ResolveGptConfig(m));
  return std::unique_ptr<Model>(std::make_unique<GptModel>(c));
}

// The shape of --init's LLaMA: its config.json (a Hugging Face directory).
Result<LlamaConfig> LlamaShapeOfInit(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const HfCheckpoint ckpt, HfCheckpoint::Open(path));
  if (!ckpt.config().has_value()) {
    return AtFault(kInit, Status::InvalidArgument(
                              Mention(kInit) + " " + path +
                              " is a lone safetensors file, which carries no LLaMA shape: give "
                              "the Hugging Face directory (config.json beside it) or " +
                              Mention(kModel) + " and the shape flags"));
  }
  return models::LlamaConfigFromHf(*ckpt.config(), path + "/" + kHfConfigFile);
}

Result<std::unique_ptr<Model>> ResolveLlama(const ModelChoice& m) {
  STRATA_RETURN_IF_ERROR(PresetOfArch(m, kLlama, models::LlamaPresetNames()));
  LlamaConfig c;
  if (!m.init_path.empty() && !m.preset_given) {
    STRATA_ASSIGN_OR_RETURN(c, LlamaShapeOfInit(m.init_path));
  } else {
    STRATA_ASSIGN_OR_RETURN(c, models::LlamaPreset(m.preset_given ? m.preset : "llama-small"));
  }
  ApplyShapeFlags(m, c);
  if (m.n_kv_head) c.n_kv_head = *m.n_kv_head;
  if (m.ffn_dim) c.ffn_dim = *m.ffn_dim;
  if (m.rope_theta) c.rope_theta = *m.rope_theta;
  if (m.norm_eps) c.norm_eps = *m.norm_eps;
  if (m.tie_embeddings) c.tie_embeddings = *m.tie_embeddings;
  STRATA_RETURN_IF_ERROR(c.validate());
  return std::unique_ptr<Model>(std::make_unique<models::LlamaModel>(c));
}

}  // namespace

Result<std::unique_ptr<Model>> ResolveModel(const ModelChoice& choice) {
  STRATA_ASSIGN_OR_RETURN(const std::string arch, ChooseArch(choice));
  return arch == kLlama ? ResolveLlama(choice) : ResolveGpt(choice);
}

}  // namespace strata
