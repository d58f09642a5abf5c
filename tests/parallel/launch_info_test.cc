// DetectLaunch: the launcher's rank and size from the environment, without starting MPI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "parallel/comm.h"

namespace strata::parallel {
namespace {

// Every variable DetectLaunch reads, cleared for the test and restored after it (ctest may run
// this binary under a launcher, whose variables must not leak into the cases).
class ScopedLaunchEnv {
 public:
  ScopedLaunchEnv() {
    for (const char* name : kNames) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      unsetenv(name);
    }
  }
  ~ScopedLaunchEnv() {
    for (const char* name : kNames) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  void set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  static constexpr const char* kNames[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                           "PMI_RANK", "PMI_SIZE", "PMIX_RANK"};
  std::map<std::string, std::string> saved_;
};

void ExpectLaunch(const LaunchInfo& info, int rank, int size, bool under_mpi) {
  EXPECT_EQ(info.rank, rank);
  EXPECT_EQ(info.size, size);
  EXPECT_EQ(info.under_mpi, under_mpi);
}

TEST(DetectLaunch, NoLauncherIsRankZeroOfOne) {
  ScopedLaunchEnv env;
  ExpectLaunch(DetectLaunch(), 0, 1, false);
}

TEST(DetectLaunch, OpenMpi) {
  ScopedLaunchEnv env;
  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  ExpectLaunch(DetectLaunch(), 3, 4, true);
}

TEST(DetectLaunch, PmiOfMpichAndIntelMpi) {
  ScopedLaunchEnv env;
  env.set("PMI_RANK", "1");
  env.set("PMI_SIZE", "2");
  ExpectLaunch(DetectLaunch(), 1, 2, true);
}

TEST(DetectLaunch, OpenMpiWinsOverPmi) {
  ScopedLaunchEnv env;
  env.set("OMPI_COMM_WORLD_RANK", "2");
  env.set("OMPI_COMM_WORLD_SIZE", "8");
  env.set("PMI_RANK", "5");
  env.set("PMI_SIZE", "6");
  ExpectLaunch(DetectLaunch(), 2, 8, true);
}

TEST(DetectLaunch, PmixRankWithoutASizeHasSizeZero) {
  ScopedLaunchEnv env;
  env.set("PMIX_RANK", "7");
  ExpectLaunch(DetectLaunch(), 7, 0, true);
}

TEST(DetectLaunch, PmixRankTakesTheSizeFromPmi) {
  ScopedLaunchEnv env;
  env.set("PMIX_RANK", "1");
  env.set("PMI_SIZE", "3");
  ExpectLaunch(DetectLaunch(), 1, 3, true);
}

TEST(DetectLaunch, ValuesThatDoNotParseMeanNoLauncher) {
  const std::pair<const char*, const char*> cases[] = {
      {"x", "4"}, {"1x", "4"}, {"", "4"},    {"-1", "4"},
      {"4", "4"}, {"0", "0"},  {"0", "two"}, {"99999999999", "4"}};
  for (const auto& [rank, size] : cases) {
    ScopedLaunchEnv env;
    env.set("OMPI_COMM_WORLD_RANK", rank);
    env.set("OMPI_COMM_WORLD_SIZE", size);
    SCOPED_TRACE(std::string("rank '") + rank + "' size '" + size + "'");
    ExpectLaunch(DetectLaunch(), 0, 1, false);
  }
}

}  // namespace
}  // namespace strata::parallel
