// The default suite's side of fuzzing: runs a target's entry function (fuzz_targets.h) over
// every file of its seed corpus (tests/fuzz/corpus/<target>/) and its regression inputs
// (tests/fuzz/regressions/<target>/, one file per crash a fuzzer found, kept with its fix).
// A file that crashes fails the test by crashing it; a seed named ok_* must be accepted.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace strata::fuzz {

inline std::vector<std::filesystem::path> FuzzInputs(const std::string& kind,
                                                     const std::string& target) {
  const std::filesystem::path dir =
      std::filesystem::path(STRATA_SOURCE_DIR) / "tests/fuzz" / kind / target;
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs `entry` over the target's seeds and regressions; returns how many files it ran.
template <typename Entry>
size_t RunFuzzInputs(const std::string& target, Entry entry) {
  size_t ran = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    for (const std::filesystem::path& file : FuzzInputs(kind, target)) {
      SCOPED_TRACE(file.string());
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      const bool accepted = entry(std::string_view(bytes));
      if (file.filename().string().starts_with("ok_")) {
        EXPECT_TRUE(accepted) << "the seed " << file << " should be accepted";
      }
      ++ran;
    }
  }
  EXPECT_FALSE(FuzzInputs("corpus", target).empty())
      << "no seed corpus in tests/fuzz/corpus/" << target;
  return ran;
}

}  // namespace strata::fuzz
