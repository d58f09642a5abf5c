// The model registry: the one file of scheduler/ that names model families (the structure check
// allows it alone). It turns a run's model options (--arch, --model, the shape flags, --init)
// into a Model (core/nn/model.h); everything else in the runtime sees only the interface.
#pragma once

#include <memory>

#include "core/nn/model.h"
#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata {

// The one file of scheduler/ that names the families (models/): the model a run's flags choose.
// The family: --arch if given; else the --model preset's when --model is given; else --init's (a
// Hugging Face model directory, or a file with the second family's names, is that family); else
// the first. Then the preset (or --init's shape) with the shape flags over it, validated. Errors
// at fault of the option: an unknown --arch or preset (the known ones listed), a preset of
// another family than --arch, a family's shape flag given to another, the shape's own refusals,
// --init's read errors (model_registry.cc says which family is which).
Result<std::unique_ptr<Model>> ResolveModel(const ModelChoice& choice);

}  // namespace strata
