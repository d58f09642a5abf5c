// RankSharedFlags (scheduler/rank_agreement.h): every flag that changes what the ranks of a job do
// together is among the values they compare, so that a rank given another value of any of them is
// refused naming it. Each flag is changed alone here; its entry must differ and be the first that
// does (the one the refusal names: a derived value, such as --min-lr's default from --lr, sorts
// after it). tests/tools/train_rank_flags_test.cc runs a 2-rank job for a few of them end to end.
#include "scheduler/rank_agreement.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/gpt2/gpt_config.h"

namespace strata::scheduler {
namespace {

struct Change {
  std::string flag;                      // the entry that must differ
  std::function<void(TrainOptions&)> apply;
  bool paged = true;                     // the engine --engine auto would pick afterwards
};

std::map<std::string, std::string> Shared(const TrainOptions& o, bool paged) {
  GptConfig c;
  auto flags = RankSharedFlags(o, c.to_string(), 64, paged);
  EXPECT_TRUE(flags.ok()) << flags.status().to_string();
  return flags.ok() ? *flags : std::map<std::string, std::string>{};
}

TEST(RankAgreement, EverySharedFlagIsCompared) {
  const std::vector<Change> changes = {
      {"--lr", [](TrainOptions& o) { o.optimizer.lr = 1e-3f; }},
      {"--min-lr", [](TrainOptions& o) { o.optimizer.min_lr = 1e-5f; }},
      {"--warmup", [](TrainOptions& o) { o.optimizer.warmup = 2; }},
      {"--lr-schedule", [](TrainOptions& o) { o.optimizer.lr_schedule = "cosine"; }},
      {"--weight-decay", [](TrainOptions& o) { o.optimizer.weight_decay = 0; }},
      {"--beta1", [](TrainOptions& o) { o.optimizer.beta1 = 0.8f; }},
      {"--beta2", [](TrainOptions& o) { o.optimizer.beta2 = 0.9f; }},
      {"--eps", [](TrainOptions& o) { o.optimizer.eps = 1e-6f; }},
      {"--grad-clip", [](TrainOptions& o) { o.optimizer.grad_clip = 0; }},
      {"--seed", [](TrainOptions& o) { o.seed = 7; }},
      {"--batch", [](TrainOptions& o) { o.data.batch = 16; }},
      {"--micro-batch", [](TrainOptions& o) { o.data.micro_batch = 2; }},
      {"--page-size", [](TrainOptions& o) { o.budgets.page_bytes = 1 << 20; }},
      {"--delayed-update", [](TrainOptions& o) { o.optimizer.delayed_update = true; }},
      {"--dtype", [](TrainOptions& o) { o.dtype = "bf16"; }},
      {"--steps", [](TrainOptions& o) { o.steps = 30; }},
      {"--engine", [](TrainOptions& o) { (void)o; }, /*paged=*/false},
      {"--gpu-mem", [](TrainOptions& o) { o.budgets.gpu_mem = 64 << 20; }},
      {"--host-mem", [](TrainOptions& o) { o.budgets.host_mem = 64 << 20; }},
      {"--nvme-mem", [](TrainOptions& o) { o.budgets.nvme_mem = 1ull << 30; }},
      {"--params-on", [](TrainOptions& o) { o.budgets.params_on = "nvme"; }},
      {"--optimizer-on", [](TrainOptions& o) { o.budgets.optimizer_on = "nvme"; }},
      {"--recompute", [](TrainOptions& o) { o.budgets.recompute = "all"; }},
      {"--micro-batch-order", [](TrainOptions& o) { o.budgets.micro_batch_order = "layer-major"; }},
      {"--dp", [](TrainOptions& o) { o.grid.dp = 2; }},
      {"--tp", [](TrainOptions& o) { o.grid.tp = 2; }},
      {"--pp", [](TrainOptions& o) { o.grid.pp = 2; }},
      {"--schedule", [](TrainOptions& o) { o.grid.schedule = "gpipe"; }},
      {"--pp-partition", [](TrainOptions& o) { o.grid.pp_partition = "auto"; }},
      {"--shard", [](TrainOptions& o) { o.grid.shard = "all"; }},
      {"--split-ops", [](TrainOptions& o) { o.grid.split_ops = "2"; }},
      {"--comm", [](TrainOptions& o) { o.grid.comm = "nccl"; }},
      {"--device", [](TrainOptions& o) { o.device = "cuda"; }},
      {"--ckpt-dir", [](TrainOptions& o) { o.checkpoints.dir.clear(); }},
      {"--nvme-dir", [](TrainOptions& o) { o.budgets.nvme_dirs.clear(); }},
      {"--ckpt-every", [](TrainOptions& o) { o.checkpoints.every = 2; }},
      {"--keep-checkpoints", [](TrainOptions& o) { o.checkpoints.keep = 3; }},
      {"--resume", [](TrainOptions& o) { o.checkpoints.resume = true; }},
      {"--resume-from", [](TrainOptions& o) { o.checkpoints.resume_from = 4; }},
      {"--discard-newer", [](TrainOptions& o) { o.checkpoints.discard_newer = true; }},
      {"--export", [](TrainOptions& o) { o.outputs.export_path = "w.safetensors"; }},
      {"--export-grads", [](TrainOptions& o) { o.outputs.export_grads_path = "g.safetensors"; }},
      {"--movement-only", [](TrainOptions& o) { o.movement_only = true; }},
  };
  TrainOptions base;
  base.checkpoints.dir = "ckpt";
  base.budgets.nvme_dirs = {"nvme"};
  const auto want = Shared(base, true);
  for (const Change& c : changes) {
    SCOPED_TRACE(c.flag);
    TrainOptions o = base;
    c.apply(o);
    const auto got = Shared(o, c.paged);
    ASSERT_EQ(got.size(), want.size()) << "every rank must compare the same keys";
    ASSERT_TRUE(got.count(c.flag)) << "not compared";
    EXPECT_NE(got.at(c.flag), want.at(c.flag));
    for (const auto& [flag, value] : got) {
      if (value == want.at(flag)) continue;
      EXPECT_EQ(flag, c.flag) << "a refusal would name " << flag << " first";
      break;
    }
  }
  // The model comes from the resolved config (--model, the shape flags, --init's shape).
  GptConfig other;
  other.n_layer += 1;
  auto flags = RankSharedFlags(base, other.to_string(), 64, true);
  ASSERT_TRUE(flags.ok());
  EXPECT_NE(flags->at("--model"), want.at("--model"));
}

// What stays within one rank may differ: each rank names its own paths, threads, trace and logs.
TEST(RankAgreement, FlagsThatStayWithinARankAreNotCompared) {
  TrainOptions base;
  base.checkpoints.dir = "ckpt";
  base.budgets.nvme_dirs = {"nvme"};
  base.outputs.export_path = "w.safetensors";
  const auto want = Shared(base, true);
  TrainOptions o = base;
  o.checkpoints.dir = "/elsewhere/ckpt";
  o.budgets.nvme_dirs = {"/elsewhere/nvme0", "/elsewhere/nvme1"};
  o.outputs.export_path = "/elsewhere/w.safetensors";
  o.threads = 3;
  o.outputs.trace_path = "t.json";
  o.budgets.host_eviction = "lru";
  o.sim_link_gbps = 12;
  o.grid.comm_timeout_s = 30;
  EXPECT_EQ(Shared(o, true), want);
}

}  // namespace
}  // namespace strata::scheduler
