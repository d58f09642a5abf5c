// The built-in demo corpus (`--data builtin`): English-like short stories generated on the spot
// by a small grammar, so a first run needs no download and no data file.
//
// What it is for: a byte-level GPT (vocab 256) trained on it should show a loss that falls
// visibly from ~5.5 (uniform over 256 bytes) within the first hundred steps, as it learns the
// character set, then words, then the story templates, without collapsing to zero at once:
// names, places, objects and the order of events vary from story to story.
//
// Contract:
// - Deterministic: the same (bytes, seed) gives the same text on every machine and build
//   (the generator is a fixed 64-bit PRNG, no std:: distributions).
// - Exactly `bytes` bytes, each printable ASCII (0x20..0x7e) or '\n'. The text is cut at
//   `bytes`, so the last story may stop mid-word.
// - Thread-safe: pure functions, no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/data/token_dataset.h"

namespace strata {

inline constexpr size_t kDefaultBuiltinCorpusBytes = size_t{1} << 20;
inline constexpr uint64_t kBuiltinCorpusSeed = 0x5354524154413031ull;  // "STRATA01"
// The name under which the corpus appears in messages and logs.
inline constexpr const char* kBuiltinCorpusName = "builtin corpus";

// Generates `bytes` bytes of stories.
std::string GenerateBuiltinCorpus(size_t bytes = kDefaultBuiltinCorpusBytes,
                                  uint64_t seed = kBuiltinCorpusSeed);

// The corpus as a byte-level dataset (vocab 256), named kBuiltinCorpusName.
TokenDataset BuiltinCorpusDataset(size_t bytes = kDefaultBuiltinCorpusBytes,
                                  uint64_t seed = kBuiltinCorpusSeed);

}  // namespace strata
