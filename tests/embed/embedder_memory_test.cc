// The memory a process holds for loading libstrata.so, beyond the budgets it gives Strata
// (docs/embedding.md, "Memory beyond the budgets"). The embed tests link strata_embed
// statically, so this runs a separate C program, embedder_memory_probe.c, linked against
// libstrata.so as an embedder's is: a 1 MiB host pool, 1 MiB of device budget, NVMe, three
// iterations with a step each and a device-tier acquire. Its peak RSS is taken by wait4 over its
// whole life, exit included; its own lines give RSS and VmHWM after each stage.
//
// Until libstrata dlopened cuBLAS (Note [cuBLAS loaded on first use] in
// core/device/cuda_blas.h), the probe peaked at 231 MiB on a 2-core machine: 164 MiB right at
// load (150 of it cuBLASLt's), 172 MiB after its steps, and 60 MiB more in cuBLAS's exit
// handlers. Now 21 MiB. What grows with cores (the OpenBLAS and TBB pools, ~5 MiB more at 64
// cores) leaves the bound room on a large machine.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "tests/embed/embed_test_util.h"

#ifndef STRATA_EMBEDDER_MEMORY_PROBE
#error "tests.cmake defines STRATA_EMBEDDER_MEMORY_PROBE, the probe's path"
#endif

namespace strata::embed::test {
namespace {

constexpr long kBeyondBudgetsKib = 64 << 10;  // the promise: 64 MiB beyond the budgets

// GCC defines __SANITIZE_*__; clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct ProbeRun {
  int exit_code = -1;
  std::string output;
  // As the probe printed them: "<stage>.rss_kib", "<stage>.hwm_kib", "budget_kib",
  // "cublas_mapped" and "life_peak_kib", its peak RSS over its whole life, exit included
  // (cuBLAS's exit handlers alone used to add 60 MiB after the last stage).
  std::map<std::string, long> values;
};

// Parses one line of the probe's (embedder_memory_probe.c) into `values`.
void ParseLine(const std::string& line, std::map<std::string, long>* values) {
  std::istringstream in(line);
  std::string key, stage;
  long value = 0;
  in >> key;
  if (key == "stage") {
    in >> stage;
    for (std::string field; in >> field >> value;) (*values)[stage + "." + field] = value;
  } else if (in >> value) {
    (*values)[key] = value;
  }
}

// Runs the probe (--life: it measures a child of its own) on a fresh NVMe directory.
ProbeRun RunProbe() {
  ProbeRun run;
  const std::string nvme_dir = FreshDir("memory_probe");
  const std::string command =
      std::string(STRATA_EMBEDDER_MEMORY_PROBE) + " --life " + nvme_dir + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) ParseLine(line, &run.values);
  std::filesystem::remove_all(nvme_dir);
  return run;
}

class EmbedderMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kSanitized) {
      GTEST_SKIP() << "a sanitizer's shadow memory and quarantine are in every RSS: the bound "
                      "holds for unsanitized builds";
    }
    run_ = RunProbe();
    ASSERT_EQ(run_.exit_code, 0) << STRATA_EMBEDDER_MEMORY_PROBE << " failed:\n" << run_.output;
    ASSERT_GT(run_.values["budget_kib"], 0) << run_.output;
    ASSERT_GT(run_.values["life_peak_kib"], 0) << run_.output;
  }
  ProbeRun run_;
};

TEST_F(EmbedderMemory, PeakRssBeyondTheBudgetsIsUnder64MiB) {
  const long beyond_kib = run_.values["life_peak_kib"] - run_.values["budget_kib"];
  RecordProperty("peak_kib", std::to_string(run_.values["life_peak_kib"]));
  RecordProperty("beyond_budgets_kib", std::to_string(beyond_kib));
  EXPECT_LT(beyond_kib, kBeyondBudgetsKib)
      << "peak RSS " << run_.values["life_peak_kib"] / 1024 << " MiB is " << beyond_kib / 1024
      << " MiB beyond the budgets (host_mem + gpu_mem = " << run_.values["budget_kib"] / 1024
      << " MiB); docs/embedding.md lists what a process holds beyond them. Per stage:\n"
      << run_.output;
}

TEST_F(EmbedderMemory, TheSimDeviceNeverMapsCublas) {
  // cuBLAS alone was 150 MiB at load; only a cuda device loads it (core/device/cuda_blas.h).
  EXPECT_EQ(run_.values["cublas_mapped"], 0)
      << "libcublas is mapped into a process that used only the sim device:\n"
      << run_.output;
}

}  // namespace
}  // namespace strata::embed::test
