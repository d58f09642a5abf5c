// `strata stress`: a randomized soak of the offload paths (stress/stress_scenario.h): random tiny
// configurations, each trained in memory and paged through disk faults, kills and flipped bytes,
// judged bit for bit against the in-memory run (Note [Stress outcomes] in stress/stress_judge.h).
#include "stress/stress_command.h"

#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "stress/stress_child.h"
#include "stress/stress_config.h"
#include "stress/stress_disk.h"
#include "stress/stress_rank_change.h"
#include "stress/stress_scenario.h"

namespace strata::stress {
namespace {

using Clock = std::chrono::steady_clock;

// A third of the configurations draw a disk fill (Note [Disk fills] in stress_damage.cc).
constexpr double kFillOdds = 1.0 / 3;
constexpr double kRankChangeOdds = 1.0 / 4;

struct StressFlags {
  double minutes = 1;
  uint64_t seed = 0;
  std::string nvme_dir;
  bool json = false;
  // Hidden: for tests and replays.
  long max_configs = 0;  // 0: no limit but --minutes
  long first_config = 1;
  std::string sabotage;
  double child_timeout_s = 120;
  bool keep = false;
  bool always_fill = false;  // every configuration draws a disk fill (where it can)
  bool always_rank_change = false;  // every configuration draws a rank change (with mpirun)
};

// A fresh directory for the soak's scratch files: under --nvme-dir, else $TMPDIR or /var/tmp
// (not /tmp, which may be tmpfs, where O_DIRECT is refused and the direct path goes untested).
Result<std::string> MakeScratchRoot(const std::string& parent_flag) {
  std::string parent = parent_flag;
  if (parent.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    parent = tmp != nullptr && *tmp != '\0' ? tmp : "/var/tmp";
  }
  std::string tmpl = parent + "/strata-stress-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return Status::FromErrno(errno, "--nvme-dir: cannot create a scratch directory in " + parent);
  }
  return tmpl;
}

void PrintTable(std::FILE* out, const StressCounters& n, const StressFlags& f, double elapsed_s) {
  std::fprintf(out, "strata stress: seed %" PRIu64 ", %g minute(s), %.0f s\n", f.seed, f.minutes,
               elapsed_s);
  const std::pair<const char*, long> rows[] = {
      {"configurations", n.configurations},   {"  skipped (budget)", n.skipped},
      {"faults injected", n.faults_injected}, {"  detected", n.faults_detected},
      {"  recovered", n.faults_recovered},    {"kills", n.kills},
      {"disk fills", n.disk_fills},           {"rank changes refused", n.rank_changes},
      {"resumes", n.resumes},
      {"pages verified", n.pages_verified},   {"data lost", n.data_lost},
      {"mismatches", n.mismatches},           {"failures", n.failures}};
  for (const auto& [name, value] : rows) std::fprintf(out, "  %-20s %8ld\n", name, value);
}

void PrintJson(const StressCounters& n, const StressFlags& f, double elapsed_s) {
  std::printf(
      "{\"configurations\":%ld,\"skipped\":%ld,\"faults_injected\":%ld,\"faults_detected\":%ld,"
      "\"faults_recovered\":%ld,\"kills\":%ld,\"disk_fills\":%ld,\"rank_changes\":%ld,"
      "\"resumes\":%ld,"
      "\"pages_verified\":%ld,"
      "\"data_lost\":%ld,\"mismatches\":%ld,\"failures\":%ld,\"seed\":%" PRIu64
      ",\"minutes\":%g,\"elapsed_s\":%.1f}\n",
      n.configurations, n.skipped, n.faults_injected, n.faults_detected, n.faults_recovered,
      n.kills, n.disk_fills, n.rank_changes, n.resumes, n.pages_verified, n.data_lost, n.mismatches, n.failures,
      f.seed, f.minutes, elapsed_s);
  std::fflush(stdout);
}

Status CheckFlags(StressFlags& f, const CLI::App& cmd) {
  if (!(f.minutes >= 0)) return Status::InvalidArgument("--minutes must be >= 0");
  if (f.sabotage != "" && f.sabotage != "lr" && f.sabotage != "weights") {
    return Status::InvalidArgument("--sabotage must be lr or weights");
  }
  if (f.max_configs < 0 || f.first_config < 1) {
    return Status::InvalidArgument("--max-configs must be >= 0 and --first-config >= 1");
  }
  if (cmd.count("--seed") == 0) f.seed = std::random_device()() % 1000000;
  return Status::Ok();
}

// Configurations until --minutes is up (at least one is always run) or --max-configs ran.
Status Soak(const StressFlags& f, const StressRunOptions& ro, StressCounters* n,
            std::vector<std::string>* reports) {
  for (long index = f.first_config;; ++index) {
    const bool time_up = Clock::now() >= ro.deadline && n->configurations > 0;
    if (time_up || (f.max_configs > 0 && n->configurations >= f.max_configs)) break;
    if (n->skipped > 1000 + 10 * n->configurations) {
      return Status::Internal("stress: the planner refuses nearly every drawn configuration");
    }
    STRATA_ASSIGN_OR_RETURN(StressConfigResult r,
                            RunStressConfiguration(DrawConfig(f.seed, int(index)), ro, n));
    if (r.skipped) continue;
    std::fprintf(stderr, "%s\n", r.progress.c_str());
    if (!r.passed) {
      std::fprintf(stderr, "%s  replay: strata stress --seed %" PRIu64
                   " --first-config %ld --max-configs 1\n",
                   r.report.c_str(), f.seed, index);
      reports->push_back(r.report);
    }
  }
  return Status::Ok();
}

// The chance of a disk fill per configuration: 0, said once, where this machine cannot
// loop-mount a disk of the soak's own.
double FillOdds(const StressFlags& f, const std::string& root) {
  const Status probe = ProbeLoopMount(root);
  if (!probe.ok()) {
    std::fprintf(stderr,
                 "stress: no disk fills are drawn: cannot loop-mount an ext4 image here (%s); "
                 "they need root, mkfs.ext4, losetup and a free loop device\n",
                 probe.message().c_str());
    return 0;
  }
  return f.always_fill ? 1.0 : kFillOdds;
}

// The chance of a rank-count change on resume per configuration: 0, said once, without mpirun.
double RankChangeOdds(const StressFlags& f, const std::string& mpirun) {
  if (!mpirun.empty()) return f.always_rank_change ? 1.0 : kRankChangeOdds;
  std::fprintf(stderr, "stress: no rank-count changes are drawn: no mpirun on PATH (OpenMPI)\n");
  return 0;
}

Status RunStress(StressFlags& f, const CLI::App& cmd) {
  STRATA_RETURN_IF_ERROR(CheckFlags(f, cmd));
  SetLogLevel("warn");  // the store opened to verify checkpoints would log every open
  const auto start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(const std::string root, MakeScratchRoot(f.nvme_dir));
  std::fprintf(stderr, "stress: seed %" PRIu64 ", %g minute(s), scratch %s\n", f.seed, f.minutes,
               root.c_str());
  StressRunOptions ro;
  ro.binary = SelfBinary();
  ro.root = root;
  ro.deadline = start + std::chrono::milliseconds(long(f.minutes * 60000));
  ro.sabotage = f.sabotage;
  ro.child_timeout_s = f.child_timeout_s;
  ro.fill_odds = FillOdds(f, root);
  ro.mpirun = FindMpirun();
  ro.rank_change_odds = RankChangeOdds(f, ro.mpirun);
  StressCounters n;
  std::vector<std::string> reports;
  const Status soaked = Soak(f, ro, &n, &reports);
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  PrintTable(f.json ? stderr : stdout, n, f, elapsed_s);
  if (f.json) PrintJson(n, f, elapsed_s);
  STRATA_RETURN_IF_ERROR(soaked);
  const bool failed = n.data_lost > 0 || n.mismatches > 0 || n.failures > 0;
  if (!failed && !f.keep) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  if (!failed) return Status::Ok();
  return Status::Aborted("stress: " + std::to_string(reports.size()) +
                         " configuration(s) failed (data lost " + std::to_string(n.data_lost) +
                         ", mismatches " + std::to_string(n.mismatches) + ", failures " +
                         std::to_string(n.failures) + "); replay with --seed " +
                         std::to_string(f.seed) + "; files kept in " + root);
}

}  // namespace

void AddStressCommand(CLI::App& app, Status& status) {
  auto f = std::make_shared<StressFlags>();
  CLI::App* cmd = app.add_subcommand(
      "stress",
      "Randomized soak of the offload paths: tiny random configurations (shapes, budgets,\n"
      "placements, micro-batches, recompute), each trained in memory and paged through injected\n"
      "disk faults (EIO, ENOSPC, EAGAIN, latency, short I/O), flipped bytes in checkpoints,\n"
      "SIGKILL/SIGTERM of the training process and a real disk filling up mid-run (a loop-mounted\n"
      "ext4; needs root), with --resume. Every outcome must equal the\n"
      "in-memory run bit for bit, or be the expected one-line error with the previous checkpoint\n"
      "intact. Exits 1 on any data lost, mismatch or failure.");
  cmd->add_option("--minutes", f->minutes, "Start new configurations for this long")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of the configuration sequence (default: random)");
  cmd->add_option("--nvme-dir", f->nvme_dir,
                  "Scratch space (a fresh directory is made in it; default $TMPDIR or /var/tmp)");
  cmd->add_flag("--json", f->json, "Print the summary as one JSON object on stdout");
  cmd->add_option("--max-configs", f->max_configs, "Stop after N configurations")->group("");
  cmd->add_option("--first-config", f->first_config, "Start at configuration N")->group("");
  cmd->add_option("--sabotage", f->sabotage, "Test the checker: lr or weights")->group("");
  cmd->add_option("--child-timeout", f->child_timeout_s, "Seconds before a child is a hang")
      ->group("");
  cmd->add_flag("--keep", f->keep, "Keep the scratch directory")->group("");
  cmd->add_flag("--always-fill", f->always_fill, "Every configuration draws a disk fill")
      ->group("");
  cmd->add_flag("--always-rank-change", f->always_rank_change,
                "Every configuration draws a rank-count change on resume")
      ->group("");
  cmd->callback([f, cmd, &status] { status = RunStress(*f, *cmd); });
}

}  // namespace strata::stress
