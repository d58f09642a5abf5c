// The learned access order (embed/access_order.h): foreseen from the second iteration on; a
// changed order costs only the changed tensors their prefetch, and never changes a result.
#include <gtest/gtest.h>

#include "tests/embed/embed_test_util.h"

namespace strata::embed::test {
namespace {

constexpr int kLayers = 12;
constexpr size_t kFloats = 3000;

struct Net {
  strata_runtime* rt = nullptr;
  std::vector<strata_tensor> params, grads;
  strata_stats last{};

  explicit Net(const std::string& nvme) { build(nvme); }

  void build(const std::string& nvme) {
    ASSERT_STRATA_OK(MakeRuntime(
        {{"host_mem", "640K"}, {"page_size", "64K"}, {"nvme_dir", nvme}}, &rt));
    RegisterLayers(rt, kLayers, kFloats, [](int) { return 0.01f; }, &params, &grads);
    for (int l = 0; l < kLayers; ++l) {
      WriteFloats(rt, params[l], std::vector<float>(kFloats, 0.1f * float(l)));
    }
  }

  // Reads the parameters in `order`, writes every gradient backwards, steps; returns the
  // (predicted, unpredicted) acquires of the iteration.
  std::pair<uint64_t, uint64_t> iterate(const std::vector<int>& order, int step) {
    for (int l : order) ReadFloats(rt, params[l], 4);
    for (int l = kLayers - 1; l >= 0; --l) {
      WriteFloats(rt, grads[l], std::vector<float>(kFloats, float(step + 1) * 0.01f * float(l)));
    }
    strata_step_options so;
    strata_step_options_init(&so);
    so.max_grad_norm = 1.0f;
    so.discard_grads = 1;
    EXPECT_STRATA_OK(strata_step(rt, &so));
    strata_stats now{};
    EXPECT_STRATA_OK(strata_get_stats(rt, &now));
    const std::pair<uint64_t, uint64_t> delta = {now.predicted_acquires - last.predicted_acquires,
                                                 now.unpredicted_acquires - last.unpredicted_acquires};
    last = now;
    return delta;
  }
};

std::vector<int> InOrder() {
  std::vector<int> o(kLayers);
  for (int l = 0; l < kLayers; ++l) o[l] = l;
  return o;
}

TEST(AccessOrder, AChangedOrderCostsOnlyTheChangedTensorsTheirPrefetch) {
  Net steady(FreshDir("order_steady")), changed(FreshDir("order_changed"));
  const int acquires = 2 * kLayers;
  std::vector<int> moved = InOrder();  // layer 9 read first: a branch taken once
  moved.erase(moved.begin() + 9);
  moved.insert(moved.begin(), 9);
  for (int step = 0; step < 8; ++step) {
    steady.iterate(InOrder(), step);
    const auto [predicted, unpredicted] = changed.iterate(step == 5 ? moved : InOrder(), step);
    if (step == 0) {
      EXPECT_EQ(predicted, 0u) << "nothing is known in the first iteration";
    }
    if (step >= 2 && step != 5 && step != 6) {
      EXPECT_EQ(unpredicted, 0u) << "step " << step << ": the same order as the last one";
      EXPECT_EQ(predicted, uint64_t(acquires));
    }
    if (step == 5) {
      EXPECT_EQ(unpredicted, 1u) << "only layer 9 moved";
      EXPECT_EQ(predicted, uint64_t(acquires - 1));
    }
  }
  for (int l = 0; l < kLayers; ++l) {
    EXPECT_EQ(ReadFloats(steady.rt, steady.params[l], kFloats),
              ReadFloats(changed.rt, changed.params[l], kFloats))
        << "layer " << l << ": the order of acquires must not change a result";
  }
  strata_stats s{};
  EXPECT_STRATA_OK(strata_get_stats(changed.rt, &s));
  EXPECT_GT(s.prefetches, 0u);
  EXPECT_LE(s.host_peak_bytes, s.host_budget_bytes);
  EXPECT_STRATA_OK(strata_runtime_close(steady.rt));
  EXPECT_STRATA_OK(strata_runtime_close(changed.rt));
}

// A tied weight and a backward: layer 0 is read again after the last layer, then every layer
// again in reverse. From the second iteration on, every acquire is foreseen, the repeated ones
// too (their pages are pinned when the window passes their next position).
TEST(AccessOrder, RepeatedAcquiresAreForeseen) {
  Net net(FreshDir("order_repeated"));
  std::vector<int> order = InOrder();
  order.push_back(0);
  for (int l = kLayers - 1; l >= 0; --l) order.push_back(l);
  const uint64_t acquires = order.size() + kLayers;  // and a gradient per layer
  for (int step = 0; step < 5; ++step) {
    const auto [predicted, unpredicted] = net.iterate(order, step);
    if (step >= 2) {
      EXPECT_EQ(unpredicted, 0u) << "step " << step;
      EXPECT_EQ(predicted, acquires) << "step " << step;
    }
  }
  EXPECT_STRATA_OK(strata_runtime_close(net.rt));
}

}  // namespace
}  // namespace strata::embed::test
