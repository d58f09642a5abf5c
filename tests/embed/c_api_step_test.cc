// The C API at work: AdamW over pairs (bit-identical whatever the budgets, equal to the kernel on
// contiguous arrays), its overlap with acquires, discard, the device tier, threads, and
// checkpoints that resume exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "core/kernels/adamw.h"
#include "core/kernels/norms.h"
#include "tests/embed/embed_test_util.h"

namespace strata::embed::test {
namespace {

constexpr int kLayers = 12;
constexpr size_t kFloats = 3000;  // 12000 bytes: 5 per 64 KiB page

float Grad(int step, int layer, size_t i) {
  return std::sin(0.01f * float(i) + 0.7f * float(layer) + 1.3f * float(step)) * 0.5f;
}

float Init(int layer, size_t i) { return std::cos(0.003f * float(i * (layer + 1))); }

// A toy model: kLayers groups, one paired parameter each.
struct Model {
  strata_runtime* rt = nullptr;
  std::vector<strata_tensor> params, grads;
  strata_tier tier = STRATA_TIER_HOST;  // the device tier for pages smaller than a tensor

  void build(const Options& options, bool write_init = true) {
    ASSERT_STRATA_OK(MakeRuntime(options, &rt));
    RegisterLayers(rt, kLayers, kFloats, [](int l) { return l % 2 ? 0.1f : 0.0f; }, &params,
                   &grads);
    if (!write_init) return;
    for (int l = 0; l < kLayers; ++l) {
      std::vector<float> w(kFloats);
      for (size_t i = 0; i < kFloats; ++i) w[i] = Init(l, i);
      WriteFloats(rt, params[l], w, tier);
    }
  }

  // One iteration: read every parameter (forward), write every gradient, step.
  void iterate(int step, bool discard_grads = true, float clip = 0.5f) {
    for (int l = 0; l < kLayers; ++l) ReadFloats(rt, params[l], 4, tier);
    for (int l = kLayers - 1; l >= 0; --l) {
      std::vector<float> g(kFloats);
      for (size_t i = 0; i < kFloats; ++i) g[i] = Grad(step, l, i);
      WriteFloats(rt, grads[l], g, tier);
    }
    strata_step_options so;
    strata_step_options_init(&so);
    so.lr = 0.01f;
    so.max_grad_norm = clip;
    so.discard_grads = discard_grads;
    ASSERT_STRATA_OK(strata_step(rt, &so));
  }

  std::vector<std::vector<float>> weights() {
    std::vector<std::vector<float>> w;
    for (int l = 0; l < kLayers; ++l) w.push_back(ReadFloats(rt, params[l], kFloats, tier));
    return w;
  }

  strata_stats stats() {
    strata_stats s{};
    EXPECT_STRATA_OK(strata_get_stats(rt, &s));
    return s;
  }

  void close() { EXPECT_STRATA_OK(strata_runtime_close(rt)); }
};

// The same steps on contiguous arrays with the kernel itself.
std::vector<std::vector<float>> Reference(int steps, float clip) {
  std::vector<std::vector<float>> w(kLayers, std::vector<float>(kFloats)), m = w, v = w, g = w;
  for (int l = 0; l < kLayers; ++l) {
    for (size_t i = 0; i < kFloats; ++i) w[l][i] = Init(l, i);
  }
  for (int s = 0; s < steps; ++s) {
    double total = 0;
    for (int l = 0; l < kLayers; ++l) {
      for (size_t i = 0; i < kFloats; ++i) g[l][i] = Grad(s, l, i);
      total += kernels::sum_of_squares(g[l].data(), long(kFloats));
    }
    const float scale = kernels::clip_coefficient(std::sqrt(total), clip);
    for (int l = 0; l < kLayers; ++l) {
      kernels::AdamWParams hp{0.01f, 0.9f, 0.999f, 1e-8f, l % 2 ? 0.1f : 0.0f, s + 1};
      kernels::adamw_update(w[l].data(), g[l].data(), m[l].data(), v[l].data(), long(kFloats),
                            hp, scale);
    }
  }
  return w;
}

TEST(CApiStep, BitIdenticalToTheKernelWhateverTheBudgets) {
  const auto want = Reference(5, 0.5f);
  const std::string nvme = FreshDir("step_nvme");
  const std::vector<Options> budgets = {
      {{"host_mem", "8M"}, {"page_size", "64K"}},
      {{"host_mem", "320K"}, {"page_size", "64K"}, {"nvme_dir", nvme}},
      {{"host_mem", "160K"}, {"page_size", "32K"}, {"nvme_dir", nvme + "/b"}, {"threads", "1"}},
      // 8 KiB pages: every tensor spans pages (acquired on the device tier, updated in chunks).
      {{"host_mem", "40K"}, {"page_size", "8K"}, {"nvme_dir", nvme + "/c"}},
      // 12 KiB pages, no power of two: one 12000-byte tensor each, as strata.torch sizes them.
      {{"host_mem", "72K"}, {"page_size", "12K"}, {"nvme_dir", nvme + "/d"}}};
  for (const Options& o : budgets) {
    Model model;
    if (o[1].second == "8K") model.tier = STRATA_TIER_DEVICE;
    model.build(o);
    for (int s = 0; s < 5; ++s) model.iterate(s);
    EXPECT_EQ(model.weights(), want) << "host_mem " << o[0].second;
    EXPECT_STRATA_OK(strata_step_wait(model.rt));
    const strata_stats st = model.stats();
    EXPECT_LE(st.host_peak_bytes, st.host_budget_bytes);
    if (o.size() > 2) {
      EXPECT_GT(st.nvme_write_bytes, 0u) << "the state should overflow to NVMe";
    }
    EXPECT_EQ(st.steps, 5u);
    EXPECT_EQ(st.norm_page_reads, 0u) << "every gradient was measured at its release";
    model.close();
  }
}

TEST(CApiStepConcurrent, AnAcquireWaitsForItsParametersUpdate) {
  Model model;
  model.build({{"host_mem", "8M"}, {"page_size", "64K"}});
  model.iterate(0, true, 0.0f);  // no wait: the read below must see the update
  const auto after = ReadFloats(model.rt, model.params[0], kFloats);
  std::vector<float> init(kFloats);
  for (size_t i = 0; i < kFloats; ++i) init[i] = Init(0, i);
  EXPECT_NE(after, init);
  EXPECT_STRATA_OK(strata_step_wait(model.rt));
  EXPECT_EQ(after, ReadFloats(model.rt, model.params[0], kFloats));
  double norm = -1;
  EXPECT_STRATA_OK(strata_last_grad_norm(model.rt, &norm));
  EXPECT_EQ(norm, 0.0) << "the norm is computed only when clipping";
  model.close();
}

TEST(CApiStepConcurrent, StepsAndWaitsFromSeveralThreadsAreSerialised) {
  Model model;
  model.build({{"host_mem", "8M"}, {"page_size", "64K"}});
  strata_step_options so;
  strata_step_options_init(&so);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        EXPECT_STRATA_OK(strata_step(model.rt, &so));
        EXPECT_STRATA_OK(strata_step_wait(model.rt));
        int64_t n = 0;
        EXPECT_STRATA_OK(strata_step_count(model.rt, &n));
      }
    });
  }
  for (auto& th : threads) th.join();
  int64_t n = 0;
  EXPECT_STRATA_OK(strata_step_count(model.rt, &n));
  EXPECT_EQ(n, 15);
  model.close();
}

TEST(CApiStep, DiscardedGradientsReadAsZeros) {
  Model model;
  model.build({{"host_mem", "320K"}, {"page_size", "64K"}, {"nvme_dir", FreshDir("discard")}});
  model.iterate(0, /*discard_grads=*/false);
  EXPECT_STRATA_OK(strata_step_wait(model.rt));
  EXPECT_NE(ReadFloats(model.rt, model.grads[3], 8), std::vector<float>(8, 0.0f));
  // One gradient of a shared page: zeroed lazily; all of a page: dropped.
  EXPECT_STRATA_OK(strata_discard(model.rt, model.grads[3]));
  EXPECT_EQ(ReadFloats(model.rt, model.grads[3], kFloats), std::vector<float>(kFloats, 0.0f));
  EXPECT_NE(ReadFloats(model.rt, model.grads[4], 8), std::vector<float>(8, 0.0f));
  for (strata_tensor g : model.grads) EXPECT_STRATA_OK(strata_discard(model.rt, g));
  for (strata_tensor g : model.grads) {
    EXPECT_EQ(ReadFloats(model.rt, g, kFloats), std::vector<float>(kFloats, 0.0f));
  }
  model.close();
}

TEST(CApiDevice, DeviceCopiesRoundTripUnderTheGpuBudget) {
  Model model;
  model.build({{"host_mem", "8M"}, {"page_size", "64K"}, {"gpu_mem", "64K"}});
  void* d = nullptr;
  ASSERT_STRATA_OK(strata_acquire(model.rt, model.params[1], STRATA_WRITE, STRATA_TIER_DEVICE, &d));
  static_cast<float*>(d)[5] = 42.0f;
  void* d2 = nullptr;
  EXPECT_EQ(strata_acquire(model.rt, model.params[1], STRATA_READ, STRATA_TIER_HOST, &d2),
            STRATA_FAILED_PRECONDITION);
  ASSERT_STRATA_OK(strata_release(model.rt, model.params[1]));
  EXPECT_EQ(ReadFloats(model.rt, model.params[1], 6)[5], 42.0f);
  const strata_stats s = model.stats();
  EXPECT_EQ(s.host_to_device_bytes, kFloats * 4);
  EXPECT_EQ(s.device_to_host_bytes, kFloats * 4);
  EXPECT_EQ(s.device_bytes, 0u);
  // Six device copies of 12000 bytes do not fit a 64 KiB budget.
  std::vector<void*> held(6);
  strata_status last = STRATA_OK;
  int got = 0;
  for (int l = 0; l < 6 && last == STRATA_OK; ++l) {
    last = strata_acquire(model.rt, model.params[l], STRATA_READ, STRATA_TIER_DEVICE, &held[l]);
    got += last == STRATA_OK;
  }
  EXPECT_EQ(last, STRATA_RESOURCE_EXHAUSTED);
  EXPECT_NE(LastError().find("raise gpu_mem"), std::string::npos) << LastError();
  for (int l = 0; l < got; ++l) EXPECT_STRATA_OK(strata_release(model.rt, model.params[l]));
  model.close();
}

TEST(CApiThreads, ConcurrentAcquiresFromManyThreadsKeepEveryByte) {
  Model model;
  model.build({{"host_mem", "320K"}, {"page_size", "64K"}, {"nvme_dir", FreshDir("threads")}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (int l = t; l < kLayers; l += 4) {
          void* p = nullptr;
          ASSERT_STRATA_OK(strata_acquire(model.rt, model.grads[l], STRATA_WRITE,
                                          STRATA_TIER_HOST, &p));
          static_cast<float*>(p)[round] += float(l);
          ASSERT_STRATA_OK(strata_release(model.rt, model.grads[l]));
          ReadFloats(model.rt, model.params[(l + round) % kLayers], 16);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int l = 0; l < kLayers; ++l) {
    const auto g = ReadFloats(model.rt, model.grads[l], 20);
    EXPECT_EQ(g, std::vector<float>(20, float(l))) << "layer " << l;
  }
  model.close();
}

TEST(CApiCheckpoint, AResumedRuntimeContinuesBitForBit) {
  const std::string dir = FreshDir("ckpt");
  const Options o = {{"host_mem", "320K"}, {"page_size", "64K"}, {"checkpoint_dir", dir}};
  std::vector<std::vector<float>> uninterrupted;
  {
    Model model;
    model.build(o);
    for (int s = 0; s < 3; ++s) model.iterate(s);
    ASSERT_STRATA_OK(strata_checkpoint(model.rt, "step-3"));
    for (int s = 3; s < 5; ++s) model.iterate(s);
    uninterrupted = model.weights();
    model.close();
  }
  Options resume = o;
  resume.push_back({"resume", "step-3"});
  Model model;
  model.build(resume, /*write_init=*/false);
  int64_t step = 0;
  EXPECT_STRATA_OK(strata_step_count(model.rt, &step));
  EXPECT_EQ(step, 3);
  for (int s = 3; s < 5; ++s) model.iterate(s);
  EXPECT_EQ(model.weights(), uninterrupted);
  model.close();

  Options missing = o;
  missing.push_back({"resume", "step-9"});
  strata_runtime* rt = nullptr;
  EXPECT_EQ(MakeRuntime(missing, &rt), STRATA_NOT_FOUND);
  EXPECT_NE(LastError().find("it has: step-3"), std::string::npos) << LastError();
}

// Note [Norms at release]: a gradient restored from a checkpoint was never released here, so
// the clipping norm reads its pages; the norm is the same bits either way.
TEST(CApiCheckpoint, TheNormOfRestoredGradientsIsReadAndEqual) {
  const std::string dir = FreshDir("ckpt_norm");
  const Options o = {{"host_mem", "320K"}, {"page_size", "64K"}, {"checkpoint_dir", dir}};
  double before = 0, after = 0;
  {
    Model model;
    model.build(o);
    model.iterate(0, /*discard_grads=*/false);
    ASSERT_STRATA_OK(strata_step_wait(model.rt));
    EXPECT_STRATA_OK(strata_last_grad_norm(model.rt, &before));
    EXPECT_EQ(model.stats().norm_page_reads, 0u);
    ASSERT_STRATA_OK(strata_checkpoint(model.rt, "grads"));
    model.close();
  }
  Options resume = o;
  resume.push_back({"resume", "grads"});
  Model model;
  model.build(resume, /*write_init=*/false);
  strata_step_options so;
  strata_step_options_init(&so);
  so.max_grad_norm = 0.5f;
  ASSERT_STRATA_OK(strata_step(model.rt, &so));
  ASSERT_STRATA_OK(strata_step_wait(model.rt));
  EXPECT_STRATA_OK(strata_last_grad_norm(model.rt, &after));
  EXPECT_GT(before, 0.0);
  EXPECT_EQ(after, before);
  EXPECT_GT(model.stats().norm_page_reads, 0u);
  model.close();
}

TEST(CApiCheckpoint, OtherRegistrationsCannotResume) {
  const std::string dir = FreshDir("ckpt_layout");
  const Options o = {{"host_mem", "320K"}, {"page_size", "64K"}, {"checkpoint_dir", dir}};
  Model model;
  model.build(o);
  ASSERT_STRATA_OK(strata_checkpoint(model.rt, "a"));
  EXPECT_EQ(strata_checkpoint(model.rt, "bad name"), STRATA_INVALID_ARGUMENT);
  model.close();
  Options resume = o;
  resume.push_back({"resume", "a"});
  strata_runtime* rt = nullptr;
  ASSERT_STRATA_OK(MakeRuntime(resume, &rt));
  strata_tensor t;
  ASSERT_STRATA_OK(strata_register(rt, "other", 64, STRATA_F32, STRATA_ROLE_PARAMETER, "x", &t));
  void* p;
  EXPECT_EQ(strata_acquire(rt, t, STRATA_READ, STRATA_TIER_HOST, &p), STRATA_FAILED_PRECONDITION);
  EXPECT_NE(LastError().find("same order"), std::string::npos) << LastError();
  EXPECT_STRATA_OK(strata_runtime_close(rt));
}

}  // namespace
}  // namespace strata::embed::test
