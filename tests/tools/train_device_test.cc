// `strata train --device sim|cuda`: sim trains exactly as without the flag; cuda without a usable
// GPU fails before training with one line naming --device and exit code 1 (with one, a single
// rank trains, and several ranks need NCCL); an unknown device is a usage error (exit code 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

class TrainDevice : public ::testing::Test {
 protected:
  RunResult Train(std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", "--model", "tiny", "--steps",   "2", "--batch",
                                     "2",     "--seq",   "32",   "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunStrata(args, dir_);
  }

  // Exactly one line on stderr, "strata: error: ..." mentioning every fragment.
  static void ExpectExactlyOneLine(const RunResult& r, const std::vector<std::string>& fragments) {
    ASSERT_NE(r.exit_code, -1) << "crashed: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("strata: error: ", 0), 0u) << r.err;
    for (const auto& frag : fragments) {
      EXPECT_NE(r.err.find(frag), std::string::npos) << "missing '" << frag << "' in: " << r.err;
    }
  }

  ScratchDir scratch_{"device"};
  const std::string dir_ = scratch_.path();
};

TEST_F(TrainDevice, CudaWithoutAGpuIsOneLineAndExitCode1) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a CUDA GPU is present; this tests its absence";
  // Both engines: the check runs before the paged engine plans (and logs) anything.
  for (const char* engine : {"memory", "paged"}) {
    auto r = Train({"--device", "cuda", "--engine", engine});
    EXPECT_EQ(r.exit_code, 1) << engine << ": " << r.err;
    ExpectExactlyOneLine(r, {"--device", "--device sim"});
  }
}

// With a GPU, one rank trains on it with either engine (the gpu label compares it with sim).
TEST_F(TrainDevice, CudaWithAGpuTrainsOneRank) {
  if (CudaDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA GPU: CudaDeviceCount() is 0; training on cuda runs on a GPU machine";
  }
  for (const char* engine : {"memory", "paged"}) {
    auto r = Train({"--device", "cuda", "--engine", engine});
    EXPECT_EQ(r.exit_code, 0) << engine << ": " << r.err;
    EXPECT_NE(r.err.find("done: 2 steps"), std::string::npos) << engine << ": " << r.err;
  }
}

// With a GPU, a job of several ranks on cuda runs data parallelism over NCCL (gpu_train_nccl_dp2
// checks it on two GPUs); over MPI, whose collectives take host memory, it is refused with the
// way out. One GPU is enough for the refusal: it comes before any rank touches the GPU's data.
TEST_F(TrainDevice, CudaWithAGpuRefusesSeveralRanksOverMpi) {
  if (CudaDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA GPU: CudaDeviceCount() is 0; training on cuda runs on a GPU machine";
  }
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  RunResult r = RunMpi({{"train", "--model", "tiny", "--steps", "1", "--batch", "2", "--seq",
                         "32", "--device", "cuda", "--comm", "mpi"}},
                       2, dir_);
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("use --comm nccl"), std::string::npos) << r.err;
}

// GPUDirect Storage: off and auto train as without the flag (this build has no cuFile path); on
// needs the cuda device and is refused with the reason rather than silently bounced via the host.
TEST_F(TrainDevice, GdsOnIsRefusedWithTheReasonOffAndAutoTrain) {
  auto sim_on = Train({"--gds", "on"});
  EXPECT_EQ(sim_on.exit_code, 2) << sim_on.err;
  ExpectExactlyOneLine(sim_on, {"--gds on", "--device cuda"});
  auto cuda_on = Train({"--device", "cuda", "--gds", "on"});
  EXPECT_EQ(cuda_on.exit_code, 1) << cuda_on.err;
  ExpectExactlyOneLine(cuda_on, {"--gds on", "cuFile", "--gds auto or off"});
  for (const char* mode : {"off", "auto"}) {
    auto r = Train({"--gds", mode});
    EXPECT_EQ(r.exit_code, 0) << mode << ": " << r.err;
  }
  auto bad = Train({"--gds", "maybe"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST_F(TrainDevice, UnknownDeviceIsAUsageError) {
  auto r = Train({"--device", "tpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ExpectExactlyOneLine(r, {"--device", "tpu"});
}

TEST_F(TrainDevice, SimLinkNeedsTheSimDevice) {
  auto r = Train({"--device", "cuda", "--sim-link-gbps", "12"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  ExpectExactlyOneLine(r, {"--sim-link-gbps", "--device sim"});
}

TEST_F(TrainDevice, SimTrainsAsBefore) {
  const std::string with = dir_ + "/with.jsonl", without = dir_ + "/without.jsonl";
  auto a = Train({"--device", "sim", "--log-json", with});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto b = Train({"--log-json", without});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(a.err.find("done: 2 steps"), std::string::npos) << a.err;
  // Same losses, bit for bit (the JSON prints each with enough digits to read back exactly).
  auto losses = [](const std::string& jsonl) {
    std::vector<std::string> out;
    for (size_t pos = jsonl.find("\"loss\":"); pos != std::string::npos;
         pos = jsonl.find("\"loss\":", pos + 1)) {
      out.push_back(jsonl.substr(pos, jsonl.find(',', pos) - pos));
    }
    return out;
  };
  const auto la = losses(ReadWholeFile(with)), lb = losses(ReadWholeFile(without));
  EXPECT_EQ(la.size(), 2u);
  EXPECT_EQ(la, lb);
}

}  // namespace
}  // namespace strata::testing
