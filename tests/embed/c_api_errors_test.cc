// The C API's error paths: every bad use is a status and a message naming what to change.
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/embed/embed_test_util.h"

namespace strata::embed::test {
namespace {

const Options kSmall = {{"host_mem", "1M"}, {"page_size", "64K"}};

TEST(CApiOptions, UnknownKeyListsTheKnownOnes) {
  strata_options* o = nullptr;
  ASSERT_STRATA_OK(strata_options_create(&o));
  EXPECT_EQ(strata_options_set(o, "host_memory", "1G"), STRATA_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("unknown option 'host_memory'"), std::string::npos) << LastError();
  EXPECT_NE(LastError().find("host_mem"), std::string::npos);
  EXPECT_EQ(strata_options_set(o, nullptr, "1G"), STRATA_INVALID_ARGUMENT);
  strata_options_destroy(o);
}

TEST(CApiOptions, BadValuesNameTheOption) {
  struct Case {
    Options options;
    strata_status status;
    const char* message;  // a part of strata_last_error()
  };
  const Options ok = {{"host_mem", "1M"}, {"page_size", "64K"}};
  auto with = [&](const char* key, const char* value) {
    Options o = ok;
    o.push_back({key, value});
    return o;
  };
  const Case cases[] = {
      {{{"host_mem", "12X"}}, STRATA_INVALID_ARGUMENT, "host_mem"},
      {{{"page_size", "64K"}}, STRATA_INVALID_ARGUMENT, "host_mem is required"},
      {{{"host_mem", "1M"}, {"page_size", "5000"}}, STRATA_INVALID_ARGUMENT,
       "page_size: 5000 bytes is not a multiple of 4 KiB"},
      {with("device", "tpu"), STRATA_INVALID_ARGUMENT, "use \"sim\" or \"cuda\""},
      {with("log_level", "loud"), STRATA_INVALID_ARGUMENT, "debug, info, warn, error or off"},
      {with("nvme_dir", "/proc/x/y"), STRATA_IO_ERROR, "cannot create nvme_dir '/proc/x/y'"},
      {with("resume", "x"), STRATA_INVALID_ARGUMENT, "needs checkpoint_dir"},
  };
  for (const Case& c : cases) {
    strata_runtime* rt = nullptr;
    EXPECT_EQ(MakeRuntime(c.options, &rt), c.status) << c.message;
    EXPECT_NE(LastError().find(c.message), std::string::npos) << LastError();
    EXPECT_EQ(rt, nullptr);
  }
}

TEST(CApiOptions, HostBudgetBelowFivePagesIsResourceExhausted) {
  strata_runtime* rt = nullptr;
  EXPECT_EQ(MakeRuntime({{"host_mem", "256K"}, {"page_size", "64K"}}, &rt),
            STRATA_RESOURCE_EXHAUSTED);
  EXPECT_NE(LastError().find("raise host_mem to at least 320.00 KiB"), std::string::npos)
      << LastError();
}

TEST(CApiOptions, CudaWithoutGpuIsNotSupported) {
  strata_runtime* rt = nullptr;
  strata_status s = MakeRuntime({{"host_mem", "1M"}, {"page_size", "64K"}, {"device", "cuda"}}, &rt);
  if (s == STRATA_OK) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(s, STRATA_NOT_SUPPORTED) << LastError();
}

TEST(CApiRegister, BadTensorsAreRefused) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt));
  strata_tensor t = nullptr, u = nullptr;
  ASSERT_STRATA_OK(strata_register(rt, "w", 4096, STRATA_F32, STRATA_ROLE_PARAMETER, "l0", &t));
  EXPECT_EQ(strata_register(rt, "w", 4096, STRATA_F32, STRATA_ROLE_PARAMETER, "l0", &u),
            STRATA_ALREADY_EXISTS);
  EXPECT_EQ(strata_register(rt, "z", 0, STRATA_F32, STRATA_ROLE_PARAMETER, "l0", &u),
            STRATA_INVALID_ARGUMENT);
  strata_tensor big;
  ASSERT_STRATA_OK(
      strata_register(rt, "big", 100000, STRATA_F32, STRATA_ROLE_PARAMETER, "l0", &big));
  EXPECT_EQ(strata_register(rt, "", 16, STRATA_F32, STRATA_ROLE_PARAMETER, nullptr, &u),
            STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_register(rt, "r", 16, STRATA_F32, strata_role(9), nullptr, &u),
            STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_find(rt, "nope", &u), STRATA_NOT_FOUND);
  ASSERT_STRATA_OK(strata_find(rt, "w", &u));
  EXPECT_EQ(u, t);
  // A tensor larger than a page spans pages: on the host it is no one pointer.
  void* p = nullptr;
  EXPECT_EQ(strata_acquire(rt, big, STRATA_READ, STRATA_TIER_HOST, &p), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("acquire it on the device tier"), std::string::npos) << LastError();
  EXPECT_NE(LastError().find("set page_size to at least 128.00 KiB"), std::string::npos)
      << LastError();
  ASSERT_STRATA_OK(strata_acquire(rt, big, STRATA_READ, STRATA_TIER_DEVICE, &p));
  EXPECT_STRATA_OK(strata_release(rt, big));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiRegister, PairsNeedAParameterAndAGradientOfOneSize) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt));
  strata_tensor p, g, g2, h;
  ASSERT_STRATA_OK(strata_register(rt, "p", 64, STRATA_F32, STRATA_ROLE_PARAMETER, "l", &p));
  ASSERT_STRATA_OK(strata_register(rt, "g", 64, STRATA_F32, STRATA_ROLE_GRADIENT, "l", &g));
  ASSERT_STRATA_OK(strata_register(rt, "g2", 32, STRATA_F32, STRATA_ROLE_GRADIENT, "l", &g2));
  ASSERT_STRATA_OK(strata_register(rt, "h", 64, STRATA_F16, STRATA_ROLE_GRADIENT, "l", &h));
  EXPECT_EQ(strata_register_pair(rt, g, p, 0.0f), STRATA_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("'g' is not a parameter"), std::string::npos) << LastError();
  EXPECT_EQ(strata_register_pair(rt, p, g2, 0.0f), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_register_pair(rt, p, h, 0.0f), STRATA_INVALID_ARGUMENT);
  EXPECT_NE(LastError().find("float32"), std::string::npos) << LastError();
  EXPECT_EQ(strata_register_pair(rt, p, g, -1.0f), STRATA_INVALID_ARGUMENT);
  ASSERT_STRATA_OK(strata_register_pair(rt, p, g, 0.1f));
  EXPECT_EQ(strata_register_pair(rt, p, g, 0.1f), STRATA_ALREADY_EXISTS);
  strata_tensor m;
  EXPECT_STRATA_OK(strata_find(rt, "p.exp_avg_sq", &m));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiAcquire, ConflictsAndBadHandlesAreErrorsNotHangs) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt));
  strata_tensor a, b;
  ASSERT_STRATA_OK(strata_register(rt, "a", 256, STRATA_F32, STRATA_ROLE_OTHER, "g", &a));
  ASSERT_STRATA_OK(strata_register(rt, "b", 256, STRATA_F32, STRATA_ROLE_OTHER, "g", &b));
  void *p = nullptr, *q = nullptr;
  ASSERT_STRATA_OK(strata_acquire(rt, a, STRATA_WRITE, STRATA_TIER_HOST, &p));
  EXPECT_EQ(strata_register(rt, "late", 4, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &b),
            STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("sealed"), std::string::npos) << LastError();
  EXPECT_EQ(strata_acquire(rt, a, STRATA_WRITE, STRATA_TIER_HOST, &q), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("already acquired for write"), std::string::npos) << LastError();
  EXPECT_EQ(strata_acquire(rt, a, STRATA_READ, STRATA_TIER_HOST, &q), STRATA_FAILED_PRECONDITION);
  // Another tensor of the same page can be written at the same time.
  ASSERT_STRATA_OK(strata_acquire(rt, b, STRATA_WRITE, STRATA_TIER_HOST, &q));
  EXPECT_EQ(strata_runtime_close(rt), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("still acquired"), std::string::npos) << LastError();
  EXPECT_STRATA_OK(strata_release(rt, a));
  EXPECT_STRATA_OK(strata_release(rt, b));
  EXPECT_EQ(strata_release(rt, a), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("not acquired"), std::string::npos) << LastError();
  EXPECT_EQ(strata_acquire(rt, nullptr, STRATA_READ, STRATA_TIER_HOST, &q),
            STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_acquire(rt, reinterpret_cast<strata_tensor>(uintptr_t(99)), STRATA_READ,
                           STRATA_TIER_HOST, &q),
            STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_acquire(rt, a, strata_intent(7), STRATA_TIER_HOST, &q),
            STRATA_INVALID_ARGUMENT);
  // A reader and a writer of two tensors sharing a page: named, not a hang.
  ASSERT_STRATA_OK(strata_acquire(rt, a, STRATA_READ, STRATA_TIER_HOST, &p));
  EXPECT_EQ(strata_acquire(rt, b, STRATA_WRITE, STRATA_TIER_HOST, &q), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("shares a page with 'a'"), std::string::npos) << LastError();
  EXPECT_STRATA_OK(strata_release(rt, a));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiAcquire, WithoutNvmeTheStateMustFitTheHostPool) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime({{"host_mem", "320K"}, {"page_size", "64K"}}, &rt));
  strata_tensor t;
  for (int i = 0; i < 5; ++i) {
    ASSERT_STRATA_OK(strata_register(rt, ("t" + std::to_string(i)).c_str(), 4096, STRATA_F32,
                                     STRATA_ROLE_PARAMETER, ("g" + std::to_string(i)).c_str(),
                                     &t));
  }
  // The sixth group's page is one more than the pool holds: refused as it is registered.
  EXPECT_EQ(strata_register(rt, "t5", 4096, STRATA_F32, STRATA_ROLE_PARAMETER, "g5", &t),
            STRATA_RESOURCE_EXHAUSTED);
  EXPECT_NE(LastError().find("registering 't5' (4.00 KiB) would bring the registered tensors to "
                             "6 pages of 64.00 KiB (384.00 KiB), but host_mem holds 5 pages"),
            std::string::npos)
      << LastError();
  EXPECT_NE(LastError().find("raise host_mem to at least 384.00 KiB or set nvme_dir"),
            std::string::npos)
      << LastError();
  // Another tensor of a group with room in its page still fits.
  EXPECT_STRATA_OK(strata_register(rt, "t6", 4096, STRATA_F32, STRATA_ROLE_PARAMETER, "g4", &t));
  void* p;
  EXPECT_STRATA_OK(strata_acquire(rt, t, STRATA_READ, STRATA_TIER_HOST, &p));
  EXPECT_STRATA_OK(strata_release(rt, t));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiStep, NeedsReleasedTensorsAndSaneHyperparameters) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(kSmall, &rt));
  std::vector<strata_tensor> params, grads;
  RegisterLayers(rt, 1, 16, [](int) { return 0.0f; }, &params, &grads);
  const strata_tensor g = grads[0];
  strata_step_options so;
  strata_step_options_init(&so);
  so.beta1 = 1.5f;
  EXPECT_EQ(strata_step(rt, &so), STRATA_INVALID_ARGUMENT);
  strata_step_options_init(&so);
  void* x;
  ASSERT_STRATA_OK(strata_acquire(rt, g, STRATA_WRITE, STRATA_TIER_HOST, &x));
  EXPECT_EQ(strata_step(rt, &so), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("'layer0.w.grad' is still acquired"), std::string::npos)
      << LastError();
  EXPECT_STRATA_OK(strata_release(rt, g));
  EXPECT_STRATA_OK(strata_step(rt, &so));
  EXPECT_STRATA_OK(strata_step_wait(rt));
  int64_t n = 0;
  EXPECT_STRATA_OK(strata_step_count(rt, &n));
  EXPECT_EQ(n, 1);
  EXPECT_EQ(strata_checkpoint(rt, "c"), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("checkpoint_dir"), std::string::npos) << LastError();
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiRuntime, NullArgumentsAreInvalidArguments) {
  EXPECT_EQ(strata_runtime_create(nullptr, nullptr), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_step(nullptr, nullptr), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_get_stats(nullptr, nullptr), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(strata_runtime_close(nullptr), STRATA_OK);
  EXPECT_STREQ(strata_status_name(STRATA_TIMEOUT), "STRATA_TIMEOUT");
}

TEST(CApiRuntime, AStaleNvmeStoreIsRefused) {
  const std::string dir = FreshDir("stale");
  strata_runtime* rt = nullptr;
  Options o = kSmall;
  o.push_back({"nvme_dir", dir});
  ASSERT_STRATA_OK(MakeRuntime(o, &rt));
  strata_tensor t;
  ASSERT_STRATA_OK(strata_register(rt, "t", 64, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &t));
  WriteFloats(rt, t, std::vector<float>(16, 1.0f));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
  EXPECT_EQ(MakeRuntime(o, &rt), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("earlier runtime"), std::string::npos) << LastError();
}

TEST(CApiRuntime, AStoreInUseNamesItsPid) {
  const std::string dir = FreshDir("in_use");
  Options o = kSmall;
  o.push_back({"nvme_dir", dir});
  strata_runtime *owner = nullptr, *rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(o, &owner));
  strata_tensor t;
  ASSERT_STRATA_OK(strata_register(owner, "t", 64, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &t));
  WriteFloats(owner, t, std::vector<float>(16, 1.0f));  // the store is open from here on
  EXPECT_EQ(MakeRuntime(o, &rt), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("nvme_dir " + dir + " is in use by pid " +
                             std::to_string(::getpid()) + " (this process)"),
            std::string::npos)
      << LastError();
  EXPECT_NE(LastError().find("close that runtime first"), std::string::npos) << LastError();
  EXPECT_EQ(LastError().find("earlier runtime"), std::string::npos) << LastError();
  EXPECT_STRATA_OK(strata_runtime_close(owner));
  EXPECT_EQ(MakeRuntime(o, &rt), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("earlier runtime"), std::string::npos) << LastError();
}

// A resumed runtime opens its store at the first acquire; while another runtime has it open,
// that acquire fails naming the owner, and the next one tries again.
TEST(CApiRuntime, AnAcquireRetriesAStoreThatWasInUse) {
  const std::string dir = FreshDir("retry");
  Options o = kSmall;
  o.push_back({"checkpoint_dir", dir});
  strata_runtime *owner = nullptr, *rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(o, &owner));
  strata_tensor t;
  ASSERT_STRATA_OK(strata_register(owner, "t", 64, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &t));
  WriteFloats(owner, t, std::vector<float>(16, 7.0f));
  ASSERT_STRATA_OK(strata_checkpoint(owner, "c"));
  o.push_back({"resume", "c"});
  ASSERT_STRATA_OK(MakeRuntime(o, &rt));
  strata_tensor u;
  ASSERT_STRATA_OK(strata_register(rt, "t", 64, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &u));
  void* p = nullptr;
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_EQ(strata_acquire(rt, u, STRATA_READ, STRATA_TIER_HOST, &p), STRATA_FAILED_PRECONDITION);
    EXPECT_NE(LastError().find("is in use by pid " + std::to_string(::getpid())),
              std::string::npos)
        << LastError();
    EXPECT_EQ(strata_release(rt, u), STRATA_FAILED_PRECONDITION);
  }
  EXPECT_STRATA_OK(strata_runtime_close(owner));
  EXPECT_EQ(ReadFloats(rt, u, 16), std::vector<float>(16, 7.0f));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

}  // namespace
}  // namespace strata::embed::test
