#include "stress/stress_rank_change.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "stress/stress_child.h"

namespace strata::stress {

std::string FindMpirun() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/mpirun";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<RankChangeRun> ResumeUnderTwoRanks(const std::string& mpirun, const std::string& binary,
                                          const std::vector<std::string>& paged_args,
                                          const std::string& ckpt_dir,
                                          const std::vector<std::string>& nvme_dirs,
                                          const std::string& output_path, double timeout_s) {
  std::vector<std::string> args = {"--allow-run-as-root", "--oversubscribe", "--timeout",
                                   std::to_string(int(timeout_s)), "-np", "2", binary};
  args.insert(args.end(), paged_args.begin(), paged_args.end());
  for (const char* a : {"--dp", "2", "--resume"}) args.push_back(a);
  RankChangeRun r;
  r.command = CommandLine(mpirun, args);
  STRATA_ASSIGN_OR_RETURN(ChildRun run,
                          RunChild(mpirun, args, "", output_path, StopPlan{}, timeout_s + 10));
  std::vector<std::string> dirs = nvme_dirs;
  dirs.push_back(ckpt_dir);
  bool made = false;
  std::error_code ec;
  for (const std::string& d : dirs) made = made || std::filesystem::exists(d + "/rank-0", ec);
  r.outcome = run.how.exited ? "exit " + std::to_string(run.how.code) : "ended by a signal";
  r.problem = RankChangeProblem(run.how, run.output, made);
  return r;
}

}  // namespace strata::stress
