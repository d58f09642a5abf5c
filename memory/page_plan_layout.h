// LayoutTensorEntries: a model's state (core/nn/model_layout.h, any model) as page-plan input.
// One entry per (tensor, role), in block order; a tied head reads a tensor of the embedding
// block, so it adds no tensor. Pure function.
#pragma once

#include <span>
#include <vector>

#include "core/nn/model_layout.h"
#include "memory/page_plan.h"

namespace strata::memory {

inline constexpr Role kTrainingRoles[] = {Role::kParam, Role::kGrad, Role::kAdamM, Role::kAdamV};

// Roles default to every role the AdamW training state has: param, grad, adam_m, adam_v.
std::vector<TensorEntry> LayoutTensorEntries(
    const ModelLayout& layout, std::span<const Role> roles = std::span<const Role>(kTrainingRoles));

}  // namespace strata::memory
