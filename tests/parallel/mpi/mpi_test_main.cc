// main() of strata_parallel_mpi_tests, which runs under mpirun (tests/parallel/tests.cmake):
// every rank runs every test, in the same order. Rank 0 prints gtest's usual output; the other
// ranks print only their failures, prefixed with their rank, so the log stays readable. A
// failure on any rank makes that rank exit 1, and mpirun then exits non-zero. With
// `--abort-scenario` it runs no tests but RunAbortScenario below.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "mpi_test_util.h"
#include "parallel/comm.h"

namespace strata::parallel::testing_mpi {
namespace {

std::unique_ptr<Comm>& WorldSlot() {
  static std::unique_ptr<Comm> world;
  return world;
}

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
};

// `--abort-scenario`: the last rank calls Comm::abort(kAbortCode) while the others wait in a
// barrier it never joins. The job must end with that code long before the barrier's 60 s
// timeout (tests/parallel/expect_exit.sh checks both). Returns only if abort did not work.
constexpr int kAbortCode = 7;

int RunAbortScenario(Comm& world) {
  if (world.rank() == world.size() - 1) {
    std::fprintf(stderr, "[rank %d] aborting the job with code %d\n", world.rank(), kAbortCode);
    world.abort(kAbortCode);
  }
  const strata::Status s = world.barrier();
  std::fprintf(stderr, "[rank %d] the barrier returned (%s): abort did not end this rank\n",
               world.rank(), s.to_string().c_str());
  return 1;
}

}  // namespace

Comm& World() { return *WorldSlot(); }

}  // namespace strata::parallel::testing_mpi

int main(int argc, char** argv) {
  using namespace strata::parallel;
  ::testing::InitGoogleTest(&argc, argv);
  const LaunchInfo launch = DetectLaunch();
  if (launch.rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    // gtest's listener API hands over raw pointers: Release gives the printer back to us,
    // Append takes ownership of ours.
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new testing_mpi::RankFailurePrinter(launch.rank));
  }
  auto world = CreateComm({.backend = CommBackend::kMpi, .timeout_s = 60});
  if (!world.ok()) {
    std::fprintf(stderr, "[rank %d] cannot create the MPI comm: %s\n", launch.rank,
                 world.status().to_string().c_str());
    return 1;
  }
  testing_mpi::WorldSlot() = std::move(world).value();
  if (argc > 1 && std::strcmp(argv[1], "--abort-scenario") == 0) {
    return testing_mpi::RunAbortScenario(testing_mpi::World());
  }
  const int failed = RUN_ALL_TESTS();
  testing_mpi::WorldSlot().reset();  // the last MPI comm: MPI_Finalize
  return failed;
}
