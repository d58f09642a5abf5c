// A disk that fails mid-run (storage/fault_injector.h), with the moments on NVMe, parameters on
// NVMe (clipping) or on the device (no clipping: the uploads after each update run on the refresh
// stream during backward, Note [Eager refresh]): no crash, no hang, and never a finished run
// whose results differ from a run without the fault.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "storage/fault_injector.h"
#include "tests/scheduler/scheduler_test_util.h"

namespace strata::testing {
namespace {

struct Case {
  const char* name;
  const char* params_on;
  float grad_clip;
};
constexpr Case kCases[] = {{"nvme_params_clip", "nvme", 1.0f},
                           {"device_params_noclip", "device", 0.0f}};

TrainOptions FailingRun(const Case& c, const std::string& dir, storage::FaultInjector* faults) {
  TrainOptions o = TinyRun(6);
  o.budgets.engine = "paged";
  o.budgets.page_bytes = 16384;
  o.budgets.nvme_dirs = {dir};
  o.budgets.host_mem = 12 * 16384;
  o.budgets.params_on = c.params_on;
  o.budgets.optimizer_on = "nvme";
  o.optimizer.grad_clip = c.grad_clip;
  o.nvme_faults = faults;
  return o;
}

// Every write fails from step 3 on (a full disk): the run stops with that error.
TEST(DiskFailureConcurrent, AFullDiskStopsTheRunWithItsError) {
  ScratchDir dir("disk_full");
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    storage::FaultInjector faults;
    auto trainer = CreateTrainer(FailingRun(c, dir.sub(c.name), &faults));
    ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
    long reported = 0;
    const Status st = (*trainer)->run([&](const StepStats& s) {
      reported = s.step;
      if (s.step == 2) faults.enospc_after_bytes(0);
    });
    EXPECT_GE(faults.injected(), 1u) << "no write after step 2";
    ASSERT_FALSE(st.ok()) << "writes failed unnoticed; " << reported << " steps reported";
    EXPECT_LT(reported, 6) << st.to_string();
    EXPECT_NE(st.to_string().find("No space left on device"), std::string::npos) << st.to_string();
  }
}

// One request fails (EIO) at a seeded point of step 3 or later: the run either stops with the
// error or absorbs it (a failed prefetch is retried by the acquire that needs the page) with the
// same losses and weights as a run without faults — never silently different results.
TEST(DiskFailureConcurrent, OneFailedRequestStopsTheRunOrChangesNothing) {
  ScratchDir dir("disk_eio");
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const TrainOutcome ref = TrainInProcess(FailingRun(c, dir.sub(std::string(c.name) + "_ref"),
                                                       nullptr),
                                            dir.path() + "/" + c.name + "_ref.safetensors");
    ASSERT_TRUE(ref.status.ok()) << ref.status.to_string();
    for (int n : {1, 7, 25, 60}) {
      SCOPED_TRACE("request " + std::to_string(n));
      storage::FaultInjector faults;
      TrainOptions o = FailingRun(c, dir.sub(std::string(c.name) + "_" + std::to_string(n)),
                                  &faults);
      o.outputs.export_path = dir.path() + "/" + c.name + "_" + std::to_string(n) + ".safetensors";
      auto trainer = CreateTrainer(o);
      ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
      std::vector<StepStats> steps;
      const Status st = (*trainer)->run([&](const StepStats& s) {
        steps.push_back(s);
        if (s.step == 2) faults.fail_nth_request(n, EIO);
      });
      trainer->reset();
      EXPECT_GE(faults.injected(), 1u);
      if (!st.ok()) {
        EXPECT_NE(st.to_string().find("Input/output error"), std::string::npos) << st.to_string();
        continue;
      }
      ASSERT_EQ(steps.size(), ref.steps.size());
      for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].loss, ref.steps[i].loss);
      EXPECT_EQ(ReadFileBytes(o.outputs.export_path), ref.weights);
    }
  }
}

// With a checkpoint after every step, one failed request (the n-th after step 2 is reported), then
// --resume without the fault: whatever the failure left recorded resumes to the losses and weights
// of the run without faults. A checkpoint queued behind an update that failed must not be recorded:
// it would hold that step half-updated (before Engine::enqueue_after_updates skipped it, 16 of the
// requests 1-40 resumed to other losses in one case or both, among them the four tried here).
// STRATA_DISK_CKPT_REQUESTS=N tries every request from 1 to N instead (it also runs under TSan,
// so the default stays short).
TEST(DiskFailureConcurrent, TheCheckpointAFailureLeavesResumesExactly) {
  ScratchDir dir("disk_ckpt");
  const char* env = std::getenv("STRATA_DISK_CKPT_REQUESTS");
  std::vector<int> requests = {1, 4, 7, 12};
  if (env != nullptr) {
    requests.clear();
    for (int n = 1; n <= std::atoi(env); ++n) requests.push_back(n);
  }
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const TrainOutcome ref =
        TrainInProcess(FailingRun(c, dir.sub(std::string(c.name) + "_ref"), nullptr),
                       dir.path() + "/" + c.name + "_ref.safetensors");
    ASSERT_TRUE(ref.status.ok()) << ref.status.to_string();
    for (int n : requests) {
      SCOPED_TRACE("request " + std::to_string(n));
      const std::string tag = std::string(c.name) + "_ckpt_" + std::to_string(n);
      storage::FaultInjector faults;
      TrainOptions o = FailingRun(c, dir.sub(tag + "_nvme"), &faults);
      o.checkpoints.dir = dir.path() + "/" + tag + "_ckpt";
      o.checkpoints.every = 1;
      {
        auto trainer = CreateTrainer(o);
        ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
        const Status st = (*trainer)->run([&](const StepStats& s) {
          if (s.step == 2) faults.fail_nth_request(n, EIO);
        });
        EXPECT_GE(faults.injected(), 1u);
        if (!st.ok()) {
          EXPECT_NE(st.to_string().find("Input/output error"), std::string::npos) << st.to_string();
        }
      }
      o.nvme_faults = nullptr;
      o.checkpoints.resume = true;
      const TrainOutcome b = TrainInProcess(o, dir.path() + "/" + tag + ".safetensors");
      ASSERT_TRUE(b.status.ok()) << b.status.to_string();
      for (const StepStats& s : b.steps) {
        EXPECT_EQ(s.loss, ref.steps[s.step - 1].loss) << "step " << s.step;
      }
      EXPECT_TRUE(b.weights == ref.weights) << "the resumed run ends with other weights";
    }
  }
}

}  // namespace
}  // namespace strata::testing
