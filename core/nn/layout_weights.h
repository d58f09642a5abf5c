// A WeightWriter (core/nn/model.h) of a layout's tensors under their names: one safetensors file
// of F32 tensors with the model's metadata, written block by block (core/io/safetensors.h's
// SafetensorsWriter), so that what every model exports is laid out the same way.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/nn/model.h"

namespace strata {

// Errors at fault of `export`, naming the file (the file's creation, a full disk).
Result<std::unique_ptr<WeightWriter>> CreateLayoutWeights(
    const std::string& path, const ModelLayout& layout,
    const std::map<std::string, std::string>& metadata);

}  // namespace strata
