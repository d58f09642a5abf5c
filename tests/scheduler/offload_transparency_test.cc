// Offload transparency (DESIGN invariant 1) and hard budgets (invariant 2): a fixed-seed run gives
// bit-identical losses and exported weights whatever the budgets, page size or placement, and no
// tier's peak exceeds its budget. The in-memory trainer is the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_layout.h"
#include "models/gpt2/gpt_model.h"
#include "scheduler/memory_plan.h"
#include "scheduler/model_registry.h"
#include "tests/scheduler/scheduler_test_util.h"

namespace strata::testing {
namespace {

// The minimal device working set of the paged run `o` (scheduler::MinimalDeviceBytes for the
// model the trainer resolves; micro-batch and --seq as the paged trainer takes them).
uint64_t MinimalDeviceBytes(const TrainOptions& o) {
  Result<std::unique_ptr<Model>> model = ResolveModel(o.model);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  if (!model.ok()) return 0;
  EXPECT_GT(o.data.seq, 0) << "the tests give --seq";
  scheduler::MemoryPlanInput in;
  in.model = model->get();
  in.layout = &(*model)->layout();
  in.micro_rows = o.data.micro_batch > 0 ? o.data.micro_batch : o.data.batch;
  in.batch = o.data.batch;
  in.seq = o.data.seq;
  in.recompute = o.budgets.recompute;
  Result<uint64_t> bytes = scheduler::MinimalDeviceBytes(in);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? *bytes : 0;
}

class OffloadTransparency : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = TinyRun(4);
    base_.optimizer.grad_clip = 2.0f;  // clips steps 1-2 (norm ~2.5), not 3-4 (~1.8, ~1.5)
  }

  TrainOutcome Reference(TrainOptions o, const std::string& tag) {
    o.budgets.engine = "memory";
    TrainOutcome r = TrainInProcess(o, dir_.path() + "/" + tag + ".safetensors");
    EXPECT_TRUE(r.status.ok()) << r.status.to_string();
    EXPECT_EQ(r.steps.size(), size_t(o.steps));
    EXPECT_FALSE(r.weights.empty());
    return r;
  }

  // Runs `o` paged and checks it against `ref` bit for bit and against its budgets.
  TrainOutcome ExpectSame(TrainOptions o, const TrainOutcome& ref, const std::string& tag) {
    o.budgets.engine = "paged";
    TrainOutcome r = TrainInProcess(o, dir_.path() + "/" + tag + ".safetensors");
    EXPECT_TRUE(r.status.ok()) << tag << ": " << r.status.to_string();
    EXPECT_EQ(r.steps.size(), ref.steps.size()) << tag;
    for (size_t i = 0; i < std::min(r.steps.size(), ref.steps.size()); ++i) {
      const StepStats &a = r.steps[i], &b = ref.steps[i];
      EXPECT_EQ(a.loss, b.loss) << tag << " step " << a.step;
      EXPECT_EQ(a.grad_norm, b.grad_norm) << tag << " step " << a.step;
      EXPECT_EQ(a.clipped, b.clipped) << tag << " step " << a.step;
      EXPECT_TRUE(a.paged);
      if (o.budgets.gpu_mem > 0) {
        EXPECT_LE(a.device_peak_bytes, o.budgets.gpu_mem) << tag;
      }
      if (o.budgets.host_mem > 0) {
        EXPECT_LE(a.host_peak_bytes, o.budgets.host_mem) << tag;
      }
      if (o.budgets.nvme_mem > 0) {
        EXPECT_LE(a.nvme_peak_bytes, o.budgets.nvme_mem) << tag;
      }
      EXPECT_GT(a.moved_bytes.h2d, 0u) << tag;
    }
    // Gradient copies may finish after their step's compute: count them over the run.
    uint64_t d2h = 0;
    for (const StepStats& a : r.steps) d2h += a.moved_bytes.d2h;
    EXPECT_GT(d2h, 0u) << tag;
    EXPECT_TRUE(r.weights == ref.weights) << tag << ": exported weights differ";
    return r;
  }

  uint64_t NvmeRead(const TrainOutcome& r) {
    uint64_t n = 0;
    for (const StepStats& s : r.steps) n += s.moved_bytes.nvme_read;
    return n;
  }

  ScratchDir dir_{"transparency"};
  TrainOptions base_;
};

TEST_F(OffloadTransparency, ConcurrentFourBudgetAndPlacementConfigs) {
  const TrainOutcome ref = Reference(base_, "ref");
  ASSERT_TRUE(ref.steps.size() == 4 && ref.steps[0].clipped && !ref.steps[3].clipped)
      << "the run should clip on some steps only";

  // 1. Everything in memory (paged engine, every budget large enough): each block's parameters
  // go to the device once per step (after their update) and its gradient comes back once.
  TrainOptions all_in_memory = base_;
  all_in_memory.budgets.page_bytes = 16384;
  const TrainOutcome in_memory = ExpectSame(all_in_memory, ref, "all_in_memory");
  const GptLayout layout = MakeGptLayout(*GptPreset("tiny"));
  uint64_t tensor_bytes = 0;
  for (const BlockSpec& b : layout.blocks) {
    for (const TensorSpec& t : b.tensors) tensor_bytes += uint64_t(t.numel) * 4;
  }
  const uint64_t token_bytes = 2ull * base_.data.batch * base_.data.seq * 4;
  for (const StepStats& s : in_memory.steps) {
    EXPECT_EQ(s.moved_bytes.h2d, tensor_bytes + token_bytes) << "step " << s.step;
    EXPECT_EQ(s.moved_bytes.nvme_read + s.moved_bytes.nvme_write, 0u);
  }

  // 2. The device budget at the minimal working set.
  TrainOptions device_min = base_;
  device_min.budgets.page_bytes = 16384;
  device_min.budgets.gpu_mem = MinimalDeviceBytes(device_min);
  ASSERT_GT(device_min.budgets.gpu_mem, 0u);
  ExpectSame(device_min, ref, "device_min");

  // 3. The optimizer's moments on NVMe, the host pool too small to cache them all.
  TrainOptions opt_nvme = base_;
  opt_nvme.budgets.page_bytes = 16384;
  opt_nvme.budgets.nvme_dirs = {dir_.sub("nvme_opt")};
  opt_nvme.budgets.nvme_mem = 4 << 20;
  opt_nvme.budgets.host_mem = 40 * 16384;
  opt_nvme.budgets.params_on = "host";
  opt_nvme.budgets.optimizer_on = "nvme";
  EXPECT_GT(NvmeRead(ExpectSame(opt_nvme, ref, "optimizer_nvme")), 0u);

  // 4. Everything on NVMe, a host pool of a few pages, the device at its minimum, 4 KiB pages.
  TrainOptions all_nvme = base_;
  all_nvme.budgets.page_bytes = 4096;
  all_nvme.budgets.nvme_dirs = {dir_.sub("nvme_all_a"), dir_.sub("nvme_all_b")};
  all_nvme.budgets.nvme_mem = 4 << 20;
  all_nvme.budgets.host_mem = 8 * 4096;
  all_nvme.budgets.params_on = "nvme";
  all_nvme.budgets.optimizer_on = "nvme";
  all_nvme.budgets.gpu_mem = MinimalDeviceBytes(all_nvme);
  EXPECT_GT(NvmeRead(ExpectSame(all_nvme, ref, "all_nvme")), 0u);
}

// An embedding far larger than a transformer block (slot size classes: two embedding-sized
// slots, the rest block-sized) at the minimal device budget, with the moments on NVMe.
TEST_F(OffloadTransparency, ConcurrentLargeVocabularyAtTheMinimalDeviceBudget) {
  TrainOptions o = base_;
  o.model.vocab_size = 4096;
  const TrainOutcome ref = Reference(o, "ref_vocab");
  o.budgets.page_bytes = 16384;
  o.budgets.gpu_mem = MinimalDeviceBytes(o);
  ExpectSame(o, ref, "vocab_device_min");
  o.budgets.nvme_dirs = {dir_.sub("nvme_vocab")};
  o.budgets.host_mem = 40 * 16384;
  o.budgets.optimizer_on = "nvme";
  ExpectSame(o, ref, "vocab_device_min_nvme");
}

TEST_F(OffloadTransparency, ConcurrentMicroBatchesAndRecompute) {
  TrainOptions o = base_;
  o.data.micro_batch = 2;
  o.model.n_layer = 4;  // so that --recompute auto can checkpoint some blocks and not others
  const TrainOutcome ref = Reference(o, "ref_mb");
  o.budgets.page_bytes = 8192;
  // Some blocks checkpointed, not all: a budget just below keeping every activation.
  o.budgets.recompute = "auto";
  TrainOptions keep_all = o;
  keep_all.budgets.recompute = "none";
  o.budgets.gpu_mem = MinimalDeviceBytes(keep_all) - 1;
  ExpectSame(o, ref, "mb_recompute_some");
  o.budgets.recompute = "all";
  o.budgets.gpu_mem = MinimalDeviceBytes(o);
  ExpectSame(o, ref, "mb_recompute_min");
  o.budgets.nvme_dirs = {dir_.sub("nvme_mb")};
  o.budgets.host_mem = 10 * 8192;
  o.budgets.params_on = "nvme";
  o.budgets.optimizer_on = "nvme";
  o.budgets.micro_batch_order = "micro-batch-major";
  const TrainOutcome mbm = ExpectSame(o, ref, "mb_recompute_nvme");
  // Layer-major (Note [Micro-batch order]): every micro-batch through a block while its
  // parameters are on the device; the block boundaries wait in host memory beside the pool,
  // which keeps its 10 pages.
  o.budgets.nvme_dirs = {dir_.sub("nvme_layer_major")};
  o.budgets.micro_batch_order = "layer-major";
  const ModelShape c = (*ResolveModel(o.model))->shape();
  const uint64_t boundaries = uint64_t(o.data.batch / o.data.micro_batch) * (c.n_layer + 1) *
                              o.data.micro_batch * o.data.seq * c.n_embd * 4;
  o.budgets.host_mem = 10 * 8192 + boundaries;
  const TrainOutcome lm = ExpectSame(o, ref, "mb_layer_major_nvme");
  // Each block's parameters load twice per step instead of twice per micro-batch.
  for (size_t i = 1; i < lm.steps.size(); ++i) {
    EXPECT_LT(lm.steps[i].moved_bytes.h2d, mbm.steps[i].moved_bytes.h2d) << "step " << i + 1;
  }
  EXPECT_LT(NvmeRead(lm), NvmeRead(mbm));
}

TEST_F(OffloadTransparency, ConcurrentUpdatesDuringBackwardWithoutClipping) {
  TrainOptions o = base_;
  o.optimizer.grad_clip = 0;
  const TrainOutcome ref = Reference(o, "ref_noclip");
  o.budgets.page_bytes = 16384;
  o.budgets.nvme_dirs = {dir_.sub("nvme_noclip")};
  o.budgets.host_mem = 10 * 16384;
  o.budgets.params_on = "nvme";
  o.budgets.optimizer_on = "nvme";
  ExpectSame(o, ref, "noclip_nvme");
  o.budgets.nvme_dirs.clear();
  o.budgets.host_mem = 0;
  o.budgets.params_on = "device";
  o.budgets.optimizer_on = "auto";
  ExpectSame(o, ref, "noclip_params_on_device");
  // With NVMe: the parameters' host master copy pinned (the pool holds everything), then passing
  // through a pool of 10 pages with the moments.
  o.budgets.nvme_dirs = {dir_.sub("nvme_noclip_device")};
  o.budgets.optimizer_on = "nvme";
  ExpectSame(o, ref, "noclip_params_on_device_master_pinned");
  o.budgets.nvme_dirs = {dir_.sub("nvme_noclip_device_small")};
  o.budgets.host_mem = 10 * 16384;
  ExpectSame(o, ref, "noclip_params_on_device_master_on_nvme");
}

// --delayed-update is not the exact trajectory (step 2 computes with the initial parameters),
// but it is deterministic: the same bits for any budget or placement.
TEST_F(OffloadTransparency, ConcurrentDelayedUpdateIsDeterministicAcrossBudgets) {
  TrainOptions o = base_;
  o.steps = 6;
  const TrainOutcome exact = Reference(o, "ref_exact6");
  o.optimizer.delayed_update = true;
  o.budgets.page_bytes = 16384;
  o.budgets.engine = "paged";
  const TrainOutcome a = TrainInProcess(o, dir_.path() + "/delayed_a.safetensors");
  ASSERT_TRUE(a.status.ok()) << a.status.to_string();
  ASSERT_EQ(a.steps.size(), 6u);
  EXPECT_EQ(a.steps[0].loss, exact.steps[0].loss);
  EXPECT_NE(a.steps[1].loss, exact.steps[1].loss);
  EXPECT_LT(a.steps[5].loss, a.steps[0].loss);
  o.budgets.page_bytes = 4096;
  o.budgets.nvme_dirs = {dir_.sub("nvme_delayed")};
  o.budgets.host_mem = 10 * 4096;
  o.budgets.params_on = "nvme";
  o.budgets.optimizer_on = "nvme";
  o.budgets.gpu_mem = MinimalDeviceBytes(o);
  const TrainOutcome b = TrainInProcess(o, dir_.path() + "/delayed_b.safetensors");
  ASSERT_TRUE(b.status.ok()) << b.status.to_string();
  ASSERT_EQ(b.steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(a.steps[i].loss, b.steps[i].loss) << "step " << i + 1;
  EXPECT_TRUE(a.weights == b.weights);
}

// The host pool's eviction changes what moves, never a value: Belady over the access plan
// learned from step 2 (set from step 4 on: Note [Host access plan]) and LRU give the in-memory
// run's bits, everything on NVMe in a pool of a few pages.
TEST_F(OffloadTransparency, ConcurrentHostEvictionPoliciesGiveTheSameBits) {
  base_.steps = 6;
  const TrainOutcome ref = Reference(base_, "ref6");
  for (const char* policy : {"belady", "lru"}) {
    TrainOptions o = base_;
    o.budgets.page_bytes = 4096;
    o.budgets.nvme_dirs = {dir_.sub(std::string("nvme_") + policy)};
    o.budgets.nvme_mem = 4 << 20;
    o.budgets.host_mem = 10 * 4096;
    o.budgets.params_on = "nvme";
    o.budgets.optimizer_on = "nvme";
    o.budgets.host_eviction = policy;
    EXPECT_GT(NvmeRead(ExpectSame(o, ref, policy)), 0u);
  }
  TrainOptions bad = base_;
  bad.budgets.engine = "paged";
  bad.budgets.host_eviction = "fifo";
  auto t = CreateTrainer(bad);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("{host_eviction}"), std::string::npos);
}

// A LLaMA (issue 33) through the same paged engine as GPT-2, untied and tied: every budget,
// placement, micro-batch order and recompute gives the in-memory trainer's bits.
class OffloadTransparencyLlama : public OffloadTransparency,
                                 public ::testing::WithParamInterface<bool> {};

TEST_P(OffloadTransparencyLlama, ConcurrentEveryBudgetOrderAndRecompute) {
  TrainOptions o = base_;
  o.model.preset = "llama-tiny";
  o.model.preset_given = true;
  o.model.tie_embeddings = GetParam();
  o.data.micro_batch = 2;
  const std::string tag = GetParam() ? "llama_tied" : "llama";
  const TrainOutcome ref = Reference(o, tag + "_ref");
  ASSERT_TRUE(ref.steps.size() == 4);
  o.budgets.page_bytes = 8192;
  ExpectSame(o, ref, tag + "_all_in_memory");
  o.budgets.recompute = "all";
  o.budgets.gpu_mem = MinimalDeviceBytes(o);
  ASSERT_GT(o.budgets.gpu_mem, 0u);
  ExpectSame(o, ref, tag + "_recompute_min");
  o.budgets.nvme_dirs = {dir_.sub(tag + "_nvme")};
  o.budgets.host_mem = 12 * 8192;
  o.budgets.params_on = "nvme";
  o.budgets.optimizer_on = "nvme";
  o.budgets.micro_batch_order = "micro-batch-major";
  EXPECT_GT(NvmeRead(ExpectSame(o, ref, tag + "_nvme_micro_batch_major")), 0u);
  o.budgets.nvme_dirs = {dir_.sub(tag + "_nvme_layer_major")};
  o.budgets.micro_batch_order = "layer-major";
  const ModelShape shape = (*ResolveModel(o.model))->shape();
  const uint64_t boundaries = uint64_t(o.data.batch / o.data.micro_batch) * (shape.n_layer + 1) *
                              o.data.micro_batch * o.data.seq * shape.n_embd * 4;
  o.budgets.host_mem = 12 * 8192 + boundaries;  // the boundaries beside the pool's pages
  EXPECT_GT(NvmeRead(ExpectSame(o, ref, tag + "_nvme_layer_major")), 0u);
  // Some layers checkpointed, not all.
  TrainOptions some = base_;
  some.model.preset = "llama-tiny";
  some.model.preset_given = true;
  some.model.tie_embeddings = GetParam();
  some.model.n_layer = 4;
  const TrainOutcome ref4 = Reference(some, tag + "_ref4");
  some.budgets.page_bytes = 8192;
  some.budgets.recompute = "auto";
  TrainOptions keep_all = some;
  keep_all.budgets.recompute = "none";
  some.budgets.gpu_mem = MinimalDeviceBytes(keep_all) - 1;
  ExpectSame(some, ref4, tag + "_recompute_some");
}

INSTANTIATE_TEST_SUITE_P(Tied, OffloadTransparencyLlama, ::testing::Bool());

}  // namespace
}  // namespace strata::testing
