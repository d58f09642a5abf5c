// Every flag that changes what the ranks of a job do together is compared across ranks before
// anything is planned (scheduler/rank_agreement.h, docs/parallel.md "Flags every rank shares"):
// each is given differently to rank 1 of a 2-rank job, which must be refused with exit 2 naming
// it, the job ending in order (Note [Ending a failed job] in tools/train_ranks.h). Before
// 2026-11-27, --ckpt-every 2 against 0 ran two steps and died with MPI_ERR_TRUNCATE, exit 15.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

struct Mutation {
  std::string flag;                  // what the refusal must name
  std::vector<std::string> rank0;    // added to rank 0's flags
  std::vector<std::string> rank1;    // added to rank 1's instead
};

std::vector<std::string> Base(const std::string& dir, bool resume) {
  std::vector<std::string> a = {"train",   "--model",     "tiny", "--batch",    "8",
                                "--seq",   "32",          "--steps", resume ? "4" : "2",
                                "--dp",    "2",           "--threads", "1", "--page-size", "64K",
                                "--nvme-dir", dir + "/nvme", "--ckpt-dir", dir + "/ckpt"};
  if (resume) a.insert(a.end(), {"--ckpt-every", "1", "--resume"});
  return a;
}

// `args` with each "--flag value" of `changes` set (replacing the value when the flag is there)
// and each bare "--flag" added.
std::vector<std::string> Changed(std::vector<std::string> args,
                                 const std::vector<std::string>& changes) {
  for (size_t i = 0; i < changes.size(); ++i) {
    const bool valued = i + 1 < changes.size() && changes[i + 1].rfind("--", 0) != 0;
    auto at = std::find(args.begin(), args.end(), changes[i]);
    if (valued && at != args.end()) {
      *(at + 1) = changes[i + 1];
    } else {
      args.push_back(changes[i]);
      if (valued) args.push_back(changes[i + 1]);
    }
    if (valued) ++i;
  }
  return args;
}

void ExpectRefusedNaming(const std::string& dir, const Mutation& m, bool resume) {
  const std::vector<std::string> a = Changed(Base(dir, resume), m.rank0);
  const std::vector<std::string> b = Changed(Base(dir, resume), m.rank1);
  const RunResult r = RunMpi({a, b}, 1, dir);
  EXPECT_EQ(r.exit_code, 2) << m.flag << ": " << r.err;
  EXPECT_NE(r.err.find("rank 1 was started with another " + m.flag + " than rank 0"),
            std::string::npos)
      << m.flag << ": " << r.err;
  EXPECT_EQ(CountOf(r.err, "strata: error:"), 1u) << m.flag << ": " << r.err;
  EXPECT_EQ(r.err.find("MPI_ABORT"), std::string::npos) << m.flag << ": " << r.err;
}

TEST(TrainRankFlags, EachSharedFlagGivenDifferentlyToOneRankIsRefusedNamingIt) {
  if (!kHaveMpirun) GTEST_SKIP() << "mpirun was not found at configure time";
  ScratchDir scratch("train_rank_flags");
  const std::string& dir = scratch.path();
  const std::vector<Mutation> fresh = {
      {"--ckpt-every", {}, {"--ckpt-every", "2"}},
      {"--ckpt-every", {"--ckpt-every", "1"}, {"--ckpt-every", "2"}},
      {"--keep-checkpoints", {}, {"--keep-checkpoints", "3"}},
      {"--export", {}, {"--export", dir + "/w.safetensors"}},
      {"--export-grads", {}, {"--export-grads", dir + "/g.safetensors"}},
      {"--movement-only", {}, {"--movement-only"}},
      {"--steps", {}, {"--steps", "3"}},
      {"--dtype", {}, {"--dtype", "bf16"}},
      {"--shard", {}, {"--shard", "all"}},
      {"--recompute", {}, {"--recompute", "all"}},
  };
  for (const Mutation& m : fresh) ExpectRefusedNaming(dir, m, /*resume=*/false);

  // The resume flags, over a job with checkpoints (a resume must have one to continue).
  ScratchDir ckpt("train_rank_flags_ckpt");
  const std::string& d2 = ckpt.path();
  RunResult saved = RunMpi({Changed(Base(d2, false), {"--ckpt-every", "1"})}, 2, d2);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  const std::vector<Mutation> resumed = {
      {"--resume-from", {}, {"--resume-from", "2"}},
      {"--discard-newer", {"--resume-from", "1"}, {"--resume-from", "1", "--discard-newer"}},
  };
  for (const Mutation& m : resumed) ExpectRefusedNaming(d2, m, /*resume=*/true);
  // --resume on one rank only: the other starts a new run over the job's checkpoints.
  std::vector<std::string> b = Base(d2, true);
  b.erase(std::find(b.begin(), b.end(), "--resume"));
  const RunResult r = RunMpi({Base(d2, true), b}, 1, d2);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("rank 1 was started with another --resume than rank 0"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace strata::testing
