// The C API's handles (Note [Handle table] in embed/handles.h): a closed runtime's handle, a
// tensor handle of another runtime or of a closed one, and values that are no handle are
// INVALID_ARGUMENT naming the handle: never another runtime's tensor, never a crash.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/embed/embed_test_util.h"

namespace strata::embed::test {
namespace {

const Options kSmall = {{"host_mem", "1M"}, {"page_size", "64K"}};

strata_tensor RegisterFloats(strata_runtime* rt, const char* name, float value) {
  strata_tensor t = nullptr;
  EXPECT_STRATA_OK(strata_register(rt, name, 64, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &t));
  WriteFloats(rt, t, std::vector<float>(16, value));
  return t;
}

bool Says(const std::string& part) { return LastError().find(part) != std::string::npos; }

TEST(CApiHandles, ATensorOfAnotherRuntimeIsRefused) {
  strata_runtime *rt1 = nullptr, *rt2 = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt1));
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt2));
  const strata_tensor a = RegisterFloats(rt1, "a", 1.0f);
  const strata_tensor b = RegisterFloats(rt2, "b", 2.0f);
  // Both are their runtime's tensor 0: an index alone would make `a` mean rt2's `b`.
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(strata_acquire(rt2, a, STRATA_WRITE, STRATA_TIER_HOST, &p), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("strata_acquire: tensor handle 0x")) << LastError();
  EXPECT_TRUE(Says("belongs to another runtime")) << LastError();
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(strata_release(rt2, a), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_prefetch(rt2, a), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_discard(rt2, a), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("strata_discard: tensor handle")) << LastError();
  // Each runtime's tensor is untouched, and its own handle works.
  EXPECT_EQ(ReadFloats(rt2, b, 16), std::vector<float>(16, 2.0f));
  EXPECT_EQ(ReadFloats(rt1, a, 16), std::vector<float>(16, 1.0f));
  EXPECT_STRATA_OK(strata_runtime_close(rt1));
  EXPECT_STRATA_OK(strata_runtime_close(rt2));
}

TEST(CApiHandles, APairOfAnotherRuntimesTensorsIsRefused) {
  strata_runtime *rt1 = nullptr, *rt2 = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt1));
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt2));
  strata_tensor p1, g1, p2, g2;
  ASSERT_STRATA_OK(strata_register(rt1, "p", 64, STRATA_F32, STRATA_ROLE_PARAMETER, "l", &p1));
  ASSERT_STRATA_OK(strata_register(rt1, "g", 64, STRATA_F32, STRATA_ROLE_GRADIENT, "l", &g1));
  ASSERT_STRATA_OK(strata_register(rt2, "p", 64, STRATA_F32, STRATA_ROLE_PARAMETER, "l", &p2));
  ASSERT_STRATA_OK(strata_register(rt2, "g", 64, STRATA_F32, STRATA_ROLE_GRADIENT, "l", &g2));
  EXPECT_EQ(strata_register_pair(rt2, p1, g1, 0.0f), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("strata_register_pair: param: tensor handle")) << LastError();
  EXPECT_EQ(strata_register_pair(rt2, p2, g1, 0.0f), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("strata_register_pair: grad: tensor handle")) << LastError();
  EXPECT_STRATA_OK(strata_register_pair(rt2, p2, g2, 0.0f));
  EXPECT_STRATA_OK(strata_runtime_close(rt1));
  EXPECT_STRATA_OK(strata_runtime_close(rt2));
}

TEST(CApiHandles, CallsOnAClosedRuntimeAreErrorsNotCrashes) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt));
  const strata_tensor t = RegisterFloats(rt, "t", 1.0f);
  ASSERT_STRATA_OK(strata_runtime_close(rt));
  void* p = nullptr;
  EXPECT_EQ(strata_acquire(rt, t, STRATA_READ, STRATA_TIER_HOST, &p), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("strata_acquire: runtime handle 0x")) << LastError();
  EXPECT_TRUE(Says("was closed")) << LastError();
  strata_tensor u = nullptr;
  EXPECT_EQ(strata_register(rt, "u", 4, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &u),
            STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_find(rt, "t", &u), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_release(rt, t), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_step_wait(rt), STRATA_INVALID_ARGUMENT);
  strata_stats stats;
  EXPECT_EQ(strata_get_stats(rt, &stats), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_checkpoint(rt, "c"), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_runtime_close(rt), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("strata_runtime_close: runtime handle")) << LastError();
  EXPECT_TRUE(Says("was closed")) << LastError();
}

TEST(CApiHandles, ATensorOfAClosedRuntimeIsRefusedByANewOne) {
  strata_runtime* old_rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &old_rt));
  const strata_tensor stale = RegisterFloats(old_rt, "old", 1.0f);
  ASSERT_STRATA_OK(strata_runtime_close(old_rt));
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt));
  const strata_tensor fresh = RegisterFloats(rt, "new", 2.0f);
  void* p = nullptr;
  EXPECT_EQ(strata_acquire(rt, stale, STRATA_WRITE, STRATA_TIER_HOST, &p), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("belongs to a runtime that was closed")) << LastError();
  EXPECT_EQ(ReadFloats(rt, fresh, 16), std::vector<float>(16, 2.0f));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiHandles, MadeUpValuesAreNotHandles) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt));
  const strata_tensor t = RegisterFloats(rt, "t", 1.0f);
  void* p = nullptr;
  // 1 was tensor 0's handle when handles were index + 1.
  EXPECT_EQ(strata_acquire(rt, reinterpret_cast<strata_tensor>(uintptr_t(1)), STRATA_READ,
                           STRATA_TIER_HOST, &p),
            STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("0x1 is not a tensor handle")) << LastError();
  EXPECT_EQ(strata_acquire(rt, nullptr, STRATA_READ, STRATA_TIER_HOST, &p),
            STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("the tensor handle is NULL")) << LastError();
  // A runtime handle as a tensor, a tensor handle as a runtime, a made-up runtime.
  EXPECT_EQ(strata_release(rt, reinterpret_cast<strata_tensor>(rt)), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_step_wait(reinterpret_cast<strata_runtime*>(t)), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("is not a runtime handle")) << LastError();
  EXPECT_EQ(strata_step_wait(reinterpret_cast<strata_runtime*>(uintptr_t(0x1234))),
            STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("strata_step_wait: 0x1234 is not a runtime handle")) << LastError();
  // A tensor handle of this runtime's id but an index beyond its tensors.
  const auto beyond = reinterpret_cast<strata_tensor>(reinterpret_cast<uintptr_t>(t) + 5);
  EXPECT_EQ(strata_release(rt, beyond), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(Says("1 tensors are registered")) << LastError();
  EXPECT_EQ(ReadFloats(rt, t, 16), std::vector<float>(16, 1.0f));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

// Runtimes are created and closed on four threads while their tensor handles are offered to a
// shared runtime, which refuses each and keeps serving its own (the handle table under TSan).
TEST(CApiHandlesConcurrent, RuntimesComeAndGoWhileOthersCheckHandles) {
  strata_runtime* shared = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &shared));
  const strata_tensor own = RegisterFloats(shared, "own", 3.0f);
  std::atomic<int> refused{0}, served{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        strata_runtime* rt = nullptr;
        if (MakeRuntime(kSmall, &rt) != STRATA_OK) {
          ADD_FAILURE() << LastError();
          return;
        }
        strata_tensor mine = nullptr;
        EXPECT_EQ(strata_register(rt, "x", 64, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &mine),
                  STRATA_OK);
        void* p = nullptr;
        if (strata_acquire(shared, mine, STRATA_READ, STRATA_TIER_HOST, &p) ==
            STRATA_INVALID_ARGUMENT) {
          ++refused;
        }
        if (strata_acquire(shared, own, STRATA_READ, STRATA_TIER_HOST, &p) == STRATA_OK) {
          served += static_cast<float*>(p)[0] == 3.0f;
          EXPECT_EQ(strata_release(shared, own), STRATA_OK) << LastError();
        }
        EXPECT_EQ(strata_runtime_close(rt), STRATA_OK) << LastError();
        EXPECT_EQ(strata_prefetch(rt, mine), STRATA_INVALID_ARGUMENT);
        EXPECT_EQ(strata_prefetch(shared, mine), STRATA_INVALID_ARGUMENT);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(refused.load(), 20);
  EXPECT_EQ(served.load(), 20);
  EXPECT_STRATA_OK(strata_runtime_close(shared));
}

}  // namespace
}  // namespace strata::embed::test
