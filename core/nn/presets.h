// A model family's named presets: the lookup and the unknown-name refusal every family shares.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/util/option.h"
#include "core/util/status.h"

namespace strata {

template <typename Config>
struct NamedPreset {
  const char* name;
  Config config;
};

// The preset named `name`; else InvalidArgument at fault of {model} listing the known ones after
// "known<what>: " (what: "" or " LLaMA presets").
template <typename Config, size_t N>
Result<Config> FindPreset(const NamedPreset<Config> (&presets)[N], const std::string& name,
                          const char* what) {
  for (const auto& p : presets) {
    if (name == p.name) return p.config;
  }
  std::string known;
  for (const auto& p : presets) known += (known.empty() ? "" : ", ") + std::string(p.name);
  return AtFault(Option::kModel,
                 Status::InvalidArgument(Mention(Option::kModel) + ": unknown model '" + name +
                                         "'; known" + what + ": " + known));
}

template <typename Config, size_t N>
std::vector<std::string> PresetNames(const NamedPreset<Config> (&presets)[N]) {
  std::vector<std::string> names;
  for (const auto& p : presets) names.push_back(p.name);
  return names;
}

}  // namespace strata
