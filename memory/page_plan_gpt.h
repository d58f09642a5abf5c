// GptTensorEntries: the GPT's model state (core/nn/gpt_layout.h) as page-plan input. One entry
// per (tensor, role), in block order; the tied head uses the embedding's wte, so it adds no
// tensor. Pure function.
#pragma once

#include <span>
#include <vector>

#include "core/nn/gpt_layout.h"
#include "memory/page_plan.h"

namespace strata::memory {

inline constexpr Role kGptTrainingRoles[] = {Role::kParam, Role::kGrad, Role::kAdamM, Role::kAdamV};

// Roles default to every role the AdamW training state has: param, grad, adam_m, adam_v.
std::vector<TensorEntry> GptTensorEntries(
    const GptLayout& layout,
    std::span<const Role> roles = std::span<const Role>(kGptTrainingRoles));

}  // namespace strata::memory
