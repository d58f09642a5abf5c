#include "core/nn/layout_weights.h"

#include <utility>
#include <vector>

#include "core/io/safetensors.h"
#include "core/util/option.h"

namespace strata {
namespace {

Status ExportFault(const std::string& path, const Status& s) {
  return AtFault(Option::kExport, s.with_context(Mention(Option::kExport) + " " + path));
}

class LayoutWeightWriter final : public WeightWriter {
 public:
  LayoutWeightWriter(std::string path, const ModelLayout& layout, SafetensorsWriter file)
      : path_(std::move(path)), layout_(layout), file_(std::move(file)) {}

  Status write_block(int block, const float* values) override {
    for (const TensorSpec& t : layout_.blocks[block].tensors) {
      Status s = file_.write(t.name, values + t.offset);
      if (!s.ok()) return ExportFault(path_, s);
    }
    return Status::Ok();
  }

  Status commit() override {
    Status s = file_.commit();
    return s.ok() ? s : ExportFault(path_, s);
  }

 private:
  std::string path_;
  const ModelLayout& layout_;
  SafetensorsWriter file_;
};

}  // namespace

Result<std::unique_ptr<WeightWriter>> CreateLayoutWeights(
    const std::string& path, const ModelLayout& layout,
    const std::map<std::string, std::string>& metadata) {
  std::vector<TensorView> shapes;
  for (const BlockSpec& b : layout.blocks) {
    for (const TensorSpec& t : b.tensors) shapes.push_back({t.name, t.shape, nullptr});
  }
  Result<SafetensorsWriter> file = SafetensorsWriter::Create(path, shapes, metadata);
  if (!file.ok()) return ExportFault(path, file.status());
  return std::unique_ptr<WeightWriter>(
      std::make_unique<LayoutWeightWriter>(path, layout, std::move(*file)));
}

}  // namespace strata
