#include "models/gpt2/gpt_weights.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/io/safetensors.h"
#include "core/io/safetensors_reader.h"
#include "core/nn/layout_weights.h"
#include "core/util/log.h"
#include "core/util/option.h"

namespace strata {
namespace {

const char* kMetaKeys[] = {"n_layer", "n_head", "n_embd", "vocab_size", "block_size"};

// A Hugging Face model directory's weights (what --export-dir writes); a file as it is.
std::string WeightsFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) ? path + "/model.safetensors" : path;
}

// The file's tensor for a layout name: "transformer.x" or its unprefixed form "x". Only the
// header is read (SafetensorsReader): the tensors are read one at a time, never the whole file.
const SafetensorsEntry* Find(const SafetensorsReader& f, const std::string& name) {
  if (const SafetensorsEntry* e = f.find(name)) return e;
  const std::string prefix = "transformer.";
  if (name.rfind(prefix, 0) == 0) return f.find(name.substr(prefix.size()));
  return nullptr;
}

// The file behind `given` (a file, or a Hugging Face directory's weights), its header read.
Result<SafetensorsReader> OpenWeights(const std::string& given) {
  Result<SafetensorsReader> f = SafetensorsReader::Open(WeightsFile(given));
  if (!f.ok()) return AtFault(Option::kInit, f.status().with_context(Mention(Option::kInit)));
  return f;
}

Result<int> ParseMetaInt(const std::string& path, const std::string& key, const std::string& v) {
  try {
    size_t used = 0;
    const int x = std::stoi(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  return Status::Corruption(path + ": __metadata__ " + key + " = '" + v + "' is not an integer");
}

// Buffers and the tied head that Import skips: not part of the model's state.
bool Ignored(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".attn.bias") || ends_with(".attn.masked_bias") || name == "lm_head.weight";
}

// The shape `c` (from __metadata__ or inferred) must not ask for more than the file holds: what
// is sized from it (the layout, the trainer's state) can then never exceed what the file's own
// tensors justify, whatever the metadata says.
Status CheckShapeAgainstTensors(const std::string& path, const SafetensorsReader& f,
                                const GptConfig& c) {
  uint64_t tensors = 0, numel = 0;
  for (const SafetensorsEntry& e : f.header().entries) {
    if (Ignored(e.name)) continue;
    ++tensors;
    numel += e.numel;
  }
  const uint64_t want_tensors = 4 + 12 * uint64_t(c.n_layer);
  const uint64_t want_numel = uint64_t(c.num_params());
  if (tensors >= want_tensors && numel >= want_numel) return Status::Ok();
  return AtFault(
      Option::kInit,
      Status::Corruption(Mention(Option::kInit) + " " + path + ": its model shape " +
                         c.to_string() + " needs " + std::to_string(want_tensors) + " tensors of " +
                         std::to_string(want_numel) + " values, but the file holds " +
                         std::to_string(tensors) + " tensors of " + std::to_string(numel) +
                         "; its __metadata__ does not describe its tensors (the file "
                         "is damaged or was edited); export it again"),
      {{"tensors", int64_t(tensors)},
       {"need_tensors", int64_t(want_tensors)},
       {"values", int64_t(numel)},
       {"need_values", int64_t(want_numel)}});
}

}  // namespace

Result<std::unique_ptr<WeightWriter>> CreateGptWeights(const std::string& path,
                                                       const GptLayout& layout) {
  const GptConfig& c = layout.config;
  return CreateLayoutWeights(path, layout,
                             {{"n_layer", std::to_string(c.n_layer)},
                              {"n_head", std::to_string(c.n_head)},
                              {"n_embd", std::to_string(c.n_embd)},
                              {"vocab_size", std::to_string(c.vocab_size)},
                              {"block_size", std::to_string(c.block_size)},
                              {"format", "strata-gpt2"}});
}

Status ExportGptSafetensors(const std::string& path, const GptLayout& layout, const float* values) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<WeightWriter> writer, CreateGptWeights(path, layout));
  for (int b = 0; b < layout.num_blocks(); ++b) {
    STRATA_RETURN_IF_ERROR(writer->write_block(b, values + layout.block_offset[b]));
  }
  return writer->commit();
}

Result<GptConfig> ReadGptConfigFromSafetensors(const std::string& given) {
  const std::string path = WeightsFile(given);
  STRATA_ASSIGN_OR_RETURN(const SafetensorsReader f, OpenWeights(given));
  GptConfig c;
  int* fields[] = {&c.n_layer, &c.n_head, &c.n_embd, &c.vocab_size, &c.block_size};
  bool all_meta = true;
  for (int i = 0; i < 5; ++i) {
    auto it = f.header().metadata.find(kMetaKeys[i]);
    if (it == f.header().metadata.end()) {
      all_meta = false;
      break;
    }
    STRATA_ASSIGN_OR_RETURN(*fields[i], ParseMetaInt(path, kMetaKeys[i], it->second));
  }
  if (!all_meta) {
    // A Hugging Face file: infer the shape from the tensors.
    const SafetensorsEntry* wte = Find(f, "transformer.wte.weight");
    const SafetensorsEntry* wpe = Find(f, "transformer.wpe.weight");
    if (!wte || !wpe || wte->shape.size() != 2 || wpe->shape.size() != 2) {
      return AtFault(Option::kInit,
                     Status::Corruption(Mention(Option::kInit) + " " + path +
                                        ": no model shape in __metadata__ and no 2-D "
                                        "transformer.wte.weight / transformer.wpe.weight to infer "
                                        "it from"));
    }
    c.vocab_size = int(wte->shape[0]);
    c.n_embd = int(wte->shape[1]);
    c.block_size = int(wpe->shape[0]);
    c.n_layer = 0;
    while (Find(f, "transformer.h." + std::to_string(c.n_layer) + ".ln_1.weight")) ++c.n_layer;
    c.n_head = c.n_embd % 64 == 0 ? c.n_embd / 64 : 1;
  }
  Status valid = c.validate();
  if (!valid.ok()) {
    // The file is at fault, by the numbers of the shape's own refusal ("got", "max").
    const OptionFault* shape = DetailOf<OptionFault>(valid);
    return AtFault(Option::kInit,
                   Status::Corruption(Mention(Option::kInit) + " " + path +
                                      ": bad model shape: " + valid.message()),
                   shape != nullptr ? shape->numbers : OptionFault{}.numbers);
  }
  STRATA_RETURN_IF_ERROR(CheckShapeAgainstTensors(path, f, c));
  return c;
}

namespace {

// Block `b`'s tensors from `f` into `values` (the block's floats, padding zeroed).
Status ReadGptBlock(const SafetensorsReader& f, const std::string& path, const GptLayout& layout,
                    int b, float* values) {
  std::memset(values, 0, sizeof(float) * size_t(layout.blocks[b].numel));
  for (const auto& t : layout.blocks[b].tensors) {
    const SafetensorsEntry* src = Find(f, t.name);
    if (!src) {
      return AtFault(Option::kInit,
                     Status::Corruption(Mention(Option::kInit) + " " + path + ": tensor " + t.name +
                                        " " + ShapeString(t.shape) +
                                        " is missing; the file holds another "
                                        "model or was not written for GPT-2"));
    }
    if (src->shape != t.shape) {
      // The file is what the user asked for; the model's shape is what to change.
      return AtFault(
          Option::kModel,
          Status::InvalidArgument(Mention(Option::kInit) + " " + path + ": tensor " + t.name +
                                  " has shape " + ShapeString(src->shape) +
                                  " but the model needs " + ShapeString(t.shape) + "; drop " +
                                  Mention(Option::kModel) + " and the shape flags (" +
                                  Mention(Option::kNLayer) + ", " + Mention(Option::kNHead) + ", " +
                                  Mention(Option::kNEmbd) + ", " + Mention(Option::kVocab) + ", " +
                                  Mention(Option::kBlockSize) + ") to take the file's shape"),
          {{"values", int64_t(src->numel)}, {"need_values", int64_t(t.numel)}});
    }
    Status read = f.read(*src, 0, src->numel, values + t.offset);
    if (!read.ok()) return AtFault(Option::kInit, read.with_context(Mention(Option::kInit)));
  }
  return Status::Ok();
}

}  // namespace

Status ImportGptSafetensors(const std::string& given, const GptLayout& layout, float* values) {
  STRATA_ASSIGN_OR_RETURN(const SafetensorsReader f, OpenWeights(given));
  for (int b = 0; b < layout.num_blocks(); ++b) {
    STRATA_RETURN_IF_ERROR(
        ReadGptBlock(f, WeightsFile(given), layout, b, values + layout.block_offset[b]));
  }
  return Status::Ok();
}

namespace {

// Tensor by tensor from the file, as the blocks are asked for.
class GptWeightReader final : public WeightReader {
 public:
  GptWeightReader(const GptLayout& layout, SafetensorsReader file, std::string path)
      : layout_(layout), file_(std::move(file)), path_(std::move(path)) {}
  Status read_block(int block, float* values) override {
    STRATA_RETURN_IF_ERROR(ReadGptBlock(file_, path_, layout_, block, values));
    tensors_ += int64_t(layout_.blocks[block].tensors.size());
    return Status::Ok();
  }
  std::string summary() const override {
    return Mention(Option::kInit) + ": loaded " + std::to_string(tensors_) + " tensors (" +
           std::to_string(layout_.total_numel) + " parameters) of " + layout_.config.to_string() +
           " from " + path_;
  }

 private:
  const GptLayout& layout_;
  SafetensorsReader file_;
  std::string path_;
  int64_t tensors_ = 0;
};

}  // namespace

Result<std::unique_ptr<WeightReader>> OpenGptWeights(const std::string& path,
                                                     const GptLayout& layout) {
  STRATA_ASSIGN_OR_RETURN(SafetensorsReader f, OpenWeights(path));
  return std::unique_ptr<WeightReader>(
      std::make_unique<GptWeightReader>(layout, std::move(f), WeightsFile(path)));
}

}  // namespace strata
