// Helpers for the C API tests: a runtime from key/value options, status checks that print
// strata_last_error(), and float tensors.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "strata.h"
#include "tests/common/scratch_dir.h"

namespace strata::embed::test {

#define EXPECT_STRATA_OK(expr)                                                \
  do {                                                                        \
    strata_status s_ = (expr);                                                \
    EXPECT_EQ(s_, STRATA_OK) << #expr << ": " << strata_last_error();         \
  } while (0)
#define ASSERT_STRATA_OK(expr)                                                \
  do {                                                                        \
    strata_status s_ = (expr);                                                \
    ASSERT_EQ(s_, STRATA_OK) << #expr << ": " << strata_last_error();         \
  } while (0)

using Options = std::vector<std::pair<std::string, std::string>>;

// Creates a runtime; returns the status and leaves *out null on failure.
inline strata_status MakeRuntime(const Options& kv, strata_runtime** out) {
  strata_options* o = nullptr;
  strata_status s = strata_options_create(&o);
  for (const auto& [k, v] : kv) {
    if (s == STRATA_OK) s = strata_options_set(o, k.c_str(), v.c_str());
  }
  if (s == STRATA_OK) s = strata_runtime_create(o, out);
  strata_options_destroy(o);
  return s;
}

inline std::string LastError() { return strata_last_error(); }

// The directories FreshDir made in this test binary, removed with everything in them when it
// exits. A test may reopen a FreshDir by name after its runtime is gone (resume tests do), so
// they outlive the test that made them; a crash leaves them, and the next FreshDir of the same
// name and pid starts them over. (The function-local static is test-only state.)
class FreshDirs {
 public:
  ~FreshDirs() {
    std::error_code ec;
    for (const auto& d : dirs_) std::filesystem::remove_all(d, ec);
  }
  void add(const std::filesystem::path& d) { dirs_.push_back(d); }

 private:
  std::vector<std::filesystem::path> dirs_;
};

// A fresh empty directory on a real disk (test_support::ScratchRoot, never tmpfs), removed when
// the test binary exits.
inline std::string FreshDir(const std::string& name) {
  static FreshDirs made;
  const std::filesystem::path dir = std::filesystem::path(test_support::ScratchRoot()) /
                                    ("strata_embed_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  made.add(dir);
  return dir.string();
}

// Acquires `t` on the host, copies its floats out, releases it.
inline std::vector<float> ReadFloats(strata_runtime* rt, strata_tensor t, size_t n,
                                     strata_tier tier = STRATA_TIER_HOST) {
  void* p = nullptr;
  std::vector<float> out(n);
  if (strata_acquire(rt, t, STRATA_READ, tier, &p) != STRATA_OK) {
    ADD_FAILURE() << "acquire: " << strata_last_error();
    return out;
  }
  std::memcpy(out.data(), p, n * sizeof(float));
  EXPECT_EQ(strata_release(rt, t), STRATA_OK) << strata_last_error();
  return out;
}

inline void WriteFloats(strata_runtime* rt, strata_tensor t, const std::vector<float>& v,
                        strata_tier tier = STRATA_TIER_HOST) {
  void* p = nullptr;
  ASSERT_EQ(strata_acquire(rt, t, STRATA_OVERWRITE, tier, &p), STRATA_OK)
      << strata_last_error();
  std::memcpy(p, v.data(), v.size() * sizeof(float));
  ASSERT_EQ(strata_release(rt, t), STRATA_OK) << strata_last_error();
}

// Registers `layers` groups "layer<l>", each with a float32 parameter "layer<l>.w" of `floats`
// and its gradient "layer<l>.w.grad", paired with weight decay decay(l).
template <typename Decay>
void RegisterLayers(strata_runtime* rt, int layers, size_t floats, Decay decay,
                    std::vector<strata_tensor>* params, std::vector<strata_tensor>* grads) {
  for (int l = 0; l < layers; ++l) {
    const std::string g = "layer" + std::to_string(l);
    strata_tensor p, d;
    ASSERT_STRATA_OK(strata_register(rt, (g + ".w").c_str(), floats * 4, STRATA_F32,
                                     STRATA_ROLE_PARAMETER, g.c_str(), &p));
    ASSERT_STRATA_OK(strata_register(rt, (g + ".w.grad").c_str(), floats * 4, STRATA_F32,
                                     STRATA_ROLE_GRADIENT, g.c_str(), &d));
    ASSERT_STRATA_OK(strata_register_pair(rt, p, d, decay(l)));
    params->push_back(p);
    grads->push_back(d);
  }
}

}  // namespace strata::embed::test
