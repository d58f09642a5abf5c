// Sizes are checked up front (Note [Sizes up front] in embed/layout.h): at strata_register,
// against the element size, the page count limit and what the tiers could ever hold; at a
// device acquire, against the host pool and gpu_mem. Each refusal is immediate and gives the
// numbers. Every absurd registration here is ASSERTed refused: were it accepted, the acquire
// after it would allocate per-page tables for it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>

#include "tests/embed/embed_test_util.h"

namespace strata::embed::test {
namespace {

bool Says(const std::string& part) { return LastError().find(part) != std::string::npos; }

strata_status Register(strata_runtime* rt, const char* name, uint64_t bytes,
                       strata_dtype dtype = STRATA_F32, const char* group = nullptr) {
  strata_tensor t = nullptr;
  return strata_register(rt, name, bytes, dtype, STRATA_ROLE_OTHER, group, &t);
}

// The runtime still works after a refusal: a small tensor registers, seals and reads zeros.
void ExpectStillUsable(strata_runtime* rt) {
  strata_tensor t = nullptr;
  ASSERT_STRATA_OK(strata_register(rt, "small", 64, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &t));
  EXPECT_EQ(ReadFloats(rt, t, 16), std::vector<float>(16, 0.0f));
}

TEST(CApiSizes, BytesMustBeWholeElementsOfTheDtype) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime({{"host_mem", "1M"}, {"page_size", "64K"}}, &rt));
  EXPECT_EQ(Register(rt, "f32", 6, STRATA_F32), STRATA_INVALID_ARGUMENT);
  EXPECT_TRUE(
      Says("tensor 'f32' is 6 bytes, not a whole number of STRATA_F32 elements (4 bytes "
           "each)"))
      << LastError();
  EXPECT_EQ(Register(rt, "f16", 3, STRATA_F16), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(Register(rt, "bf16", 5, STRATA_BF16), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(Register(rt, "f64", 12, STRATA_F64), STRATA_INVALID_ARGUMENT);
  EXPECT_EQ(Register(rt, "i64", 4, STRATA_I64), STRATA_INVALID_ARGUMENT);
  EXPECT_STRATA_OK(Register(rt, "u8", 3, STRATA_U8));
  EXPECT_STRATA_OK(Register(rt, "f64ok", 16, STRATA_F64));
  EXPECT_STRATA_OK(Register(rt, "i32", 12, STRATA_I32));
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiSizes, PagesBeyondTheLimitAreRefusedAtRegistration) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime({{"host_mem", "80M"}, {"nvme_dir", FreshDir("sizes_limit")}}, &rt));
  // 1e15 bytes of 16 MiB pages: 59604645 pages.
  ASSERT_EQ(Register(rt, "b", 1000000000000000ull), STRATA_INVALID_ARGUMENT) << LastError();
  EXPECT_TRUE(
      Says("registering 'b' (931322.57 GiB) would bring the registered tensors to "
           "59604645 pages of 16.00 MiB (931322.58 GiB)"))
      << LastError();
  EXPECT_TRUE(Says("above the 4194304 pages a runtime may have")) << LastError();
  EXPECT_TRUE(Says("raise page_size")) << LastError();
  ASSERT_EQ(Register(rt, "max", UINT64_MAX, STRATA_U8), STRATA_INVALID_ARGUMENT) << LastError();
  EXPECT_TRUE(Says("above the 8 EiB a tensor may have")) << LastError();
  ASSERT_EQ(Register(rt, "max4", UINT64_MAX - 3, STRATA_F32), STRATA_INVALID_ARGUMENT);
  // The refused names were not taken.
  strata_tensor t;
  EXPECT_EQ(strata_find(rt, "b", &t), STRATA_NOT_FOUND);
  ExpectStillUsable(rt);
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiSizes, StateBeyondWhatTheTiersCouldHoldIsRefusedAtRegistration) {
  const uint64_t kHuge = 1000000000000000ull;  // 931323 pages of 1 GiB: under the page limit
  struct Case {
    Options options;
    const char* message;
  };
  const std::string nvme = FreshDir("sizes_tiers");
  const Options base = {{"host_mem", "5G"}, {"page_size", "1G"}};
  auto with = [&](Options extra) {
    Options o = base;
    o.insert(o.end(), extra.begin(), extra.end());
    return o;
  };
  const Case cases[] = {
      {base,
       "host_mem holds 5 pages of 1.00 GiB (5.00 GiB) and there is no NVMe tier: raise "
       "host_mem to at least 931323.00 GiB or set nvme_dir"},
      {with({{"nvme_dir", nvme}, {"nvme_mem", "1T"}}),
       "and nvme_mem 1024.00 GiB: raise nvme_mem to at least 931318.00 GiB"},
      {with({{"nvme_dir", nvme}}), "the filesystems of the NVMe tier's directories are"},
  };
  for (const Case& c : cases) {
    strata_runtime* rt = nullptr;
    ASSERT_STRATA_OK(MakeRuntime(c.options, &rt));
    ASSERT_EQ(Register(rt, "huge", kHuge), STRATA_RESOURCE_EXHAUSTED) << LastError();
    EXPECT_TRUE(
        Says("registering 'huge' (931322.57 GiB) would bring the registered tensors to "
             "931323 pages of 1.00 GiB (931323.00 GiB)"))
        << LastError();
    EXPECT_TRUE(Says(c.message)) << LastError();
    EXPECT_STRATA_OK(strata_runtime_close(rt));
  }
}

// A pair registers its two moments: both fit, or neither is registered.
TEST(CApiSizes, APairsMomentsAreCheckedTogether) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime({{"host_mem", "320K"}, {"page_size", "64K"}}, &rt));
  strata_tensor p, g;
  ASSERT_STRATA_OK(strata_register(rt, "p", 128 << 10, STRATA_F32, STRATA_ROLE_PARAMETER, "l", &p));
  ASSERT_STRATA_OK(strata_register(rt, "g", 128 << 10, STRATA_F32, STRATA_ROLE_GRADIENT, "l", &g));
  EXPECT_EQ(strata_register_pair(rt, p, g, 0.0f), STRATA_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(
      Says("registering the moments of 'p' (p.exp_avg, p.exp_avg_sq) (256.00 KiB) would "
           "bring the registered tensors to 8 pages of 64.00 KiB (512.00 KiB), but "
           "host_mem holds 5 pages"))
      << LastError();
  strata_tensor m;
  EXPECT_EQ(strata_find(rt, "p.exp_avg", &m), STRATA_NOT_FOUND);
  EXPECT_EQ(strata_find(rt, "p.exp_avg_sq", &m), STRATA_NOT_FOUND);
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

// The pages counted at registration are the pages the layout has once sealed: a host pool of
// exactly that many pages takes every tensor, one page less refuses the last one that needs it.
TEST(CApiSizes, CountedPagesAreTheLayoutsPages) {
  std::mt19937 rng(29);
  for (int round = 0; round < 8; ++round) {
    struct Tensor {
      std::string name, group;
      uint64_t bytes;
      strata_role role;
    };
    std::vector<Tensor> tensors;
    for (int i = 0; i < 30; ++i) {
      const uint64_t floats = std::uniform_int_distribution<uint64_t>(1, 5000)(rng);
      tensors.push_back({"t" + std::to_string(i), "g" + std::to_string(rng() % 4), floats * 4,
                         strata_role(rng() % 4)});
    }
    auto build = [&](uint64_t host_pages, strata_runtime** rt) {
      ASSERT_STRATA_OK(
          MakeRuntime({{"host_mem", std::to_string(host_pages * 4096)}, {"page_size", "4K"}}, rt));
    };
    auto register_all = [&](strata_runtime* rt) {
      for (const Tensor& t : tensors) {
        strata_tensor h;
        const strata_status s =
            strata_register(rt, t.name.c_str(), t.bytes, STRATA_F32, t.role, t.group.c_str(), &h);
        if (s != STRATA_OK) return s;
      }
      return STRATA_OK;
    };
    strata_runtime* rt = nullptr;
    build(4096, &rt);
    ASSERT_STRATA_OK(register_all(rt));
    strata_tensor first;
    ASSERT_STRATA_OK(strata_find(rt, "t0", &first));
    ASSERT_STRATA_OK(strata_prefetch(rt, first));  // seals
    strata_stats s{};
    ASSERT_STRATA_OK(strata_get_stats(rt, &s));
    ASSERT_STRATA_OK(strata_runtime_close(rt));
    const uint64_t pages = s.pages;
    ASSERT_GT(pages, 5u);
    build(pages, &rt);
    EXPECT_STRATA_OK(register_all(rt));
    ASSERT_STRATA_OK(strata_runtime_close(rt));
    build(pages - 1, &rt);
    EXPECT_EQ(register_all(rt), STRATA_RESOURCE_EXHAUSTED) << "round " << round;
    EXPECT_TRUE(Says(std::to_string(pages) + " pages of 4.00 KiB")) << LastError();
    ASSERT_STRATA_OK(strata_runtime_close(rt));
  }
}

// The host pool holds 5 pages; the tensor spans 8, all of which a device acquire pins at once.
TEST(CApiSizes, ADeviceAcquireLargerThanTheHostPoolFailsAtOnce) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime({{"host_mem", "320K"},
                                {"page_size", "64K"},
                                {"nvme_dir", FreshDir("sizes_pool")},
                                {"stall_timeout_ms", "10000"}},
                               &rt));
  strata_tensor big;
  ASSERT_STRATA_OK(
      strata_register(rt, "big", 512 << 10, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &big));
  void* p = nullptr;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(strata_acquire(rt, big, STRATA_READ, STRATA_TIER_DEVICE, &p),
            STRATA_RESOURCE_EXHAUSTED);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0) << "waited for a stall instead of refusing";
  EXPECT_TRUE(
      Says("strata_acquire: tensor 'big' (512.00 KiB) on the device tier needs its 8 "
           "pages of 64.00 KiB pinned in the host pool at once, but host_mem 320.00 KiB "
           "holds 5: raise host_mem to at least 512.00 KiB"))
      << LastError();
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

TEST(CApiSizes, ADeviceAcquireLargerThanGpuMemFailsAtOnce) {
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(
      MakeRuntime({{"host_mem", "1M"}, {"page_size", "64K"}, {"gpu_mem", "64K"}}, &rt));
  strata_tensor big;
  ASSERT_STRATA_OK(
      strata_register(rt, "big", 128 << 10, STRATA_F32, STRATA_ROLE_OTHER, nullptr, &big));
  void* p = nullptr;
  EXPECT_EQ(strata_acquire(rt, big, STRATA_OVERWRITE, STRATA_TIER_DEVICE, &p),
            STRATA_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(
      Says("tensor 'big' (128.00 KiB) on the device tier is larger than the device "
           "budget, gpu_mem 64.00 KiB: raise gpu_mem to at least 128.00 KiB"))
      << LastError();
  strata_stats s{};
  ASSERT_STRATA_OK(strata_get_stats(rt, &s));
  EXPECT_EQ(s.host_misses, 0u) << "pages were loaded for an acquire that could never succeed";
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

// Issue 32, item 7 for the C API: unset, nvme_mem is what the tier stores (Note [NVMe capacity]
// in memory/nvme_capacity.h), no longer 2x or 4x the registered pages. 40 pairs of 1 MiB pages
// (parameter, gradient and AdamW's two moments: 160 pages, 40 of them gradients), a host pool
// of 5 pages: one version of every page plus the 5 the pool can stage; with a checkpoint_dir
// and keep_checkpoints 3, one checkpoint's pages and a gradient's next version each, then two
// more checkpoints.
TEST(CApiSizes, DefaultNvmeCapacityIsWhatTheTierStores) {
  constexpr uint64_t kMiB = 1ull << 20;
  auto budget = [](Options extra) {
    Options o = {{"host_mem", "5M"}, {"page_size", "1M"}};
    o.insert(o.end(), extra.begin(), extra.end());
    strata_runtime* rt = nullptr;
    EXPECT_STRATA_OK(MakeRuntime(o, &rt));
    std::vector<strata_tensor> params, grads;
    RegisterLayers(rt, 40, kMiB / 4, [](int) { return 0.0f; }, &params, &grads);
    ReadFloats(rt, params[0], 1);  // seals the layout: the store opens
    strata_stats st{};
    EXPECT_STRATA_OK(strata_get_stats(rt, &st));
    EXPECT_EQ(st.pages, 160u);
    EXPECT_STRATA_OK(strata_runtime_close(rt));
    return st.nvme_budget_bytes;
  };
  EXPECT_EQ(budget({{"nvme_dir", FreshDir("default_nvme")}}), (160 + 5) * kMiB);
  const std::string dir = FreshDir("default_nvme_ckpt");
  EXPECT_EQ(budget({{"nvme_dir", dir + "/nvme"},
                    {"checkpoint_dir", dir + "/ckpt"},
                    {"keep_checkpoints", "3"}}),
            (160 + 5 + (160 + 40) + 2 * 160) * kMiB);
}

}  // namespace
}  // namespace strata::embed::test
