#include "tools/resume_dirs.h"

#include <charconv>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "scheduler/checkpoint.h"
#include "scheduler/checkpoint_store.h"
#include "scheduler/run_fingerprint.h"

namespace strata::tools {
namespace {

namespace fs = std::filesystem;

// "rank-<r>" -> r; nullopt for any other name.
std::optional<int> RankOfName(const std::string& name) {
  constexpr std::string_view kPrefix = "rank-";
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) {
    return std::nullopt;
  }
  int rank = -1;
  const char* end = name.data() + name.size();
  const auto r = std::from_chars(name.data() + kPrefix.size(), end, rank);
  if (r.ec != std::errc() || r.ptr != end || rank < 0) return std::nullopt;
  return rank;
}

std::string BaseName(const std::string& path) {
  return fs::path(path).lexically_normal().filename().string().empty()
             ? fs::path(path).lexically_normal().parent_path().filename().string()
             : fs::path(path).lexically_normal().filename().string();
}

std::string ParentOf(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.parent_path().empty() ? std::string(".") : p.parent_path().string();
}

// What one --ckpt-dir holds: its own record (a one-process run's, or one rank's directory given
// alone) and the records in its rank-<r> directories (a job's). Only records count: a job's
// ranks make their rank-<r> directories while their peers look (a new run), but write no record
// before every rank has agreed to run (scheduler/rank_agreement.h), so records are never
// another rank's work in progress.
struct Holdings {
  std::optional<scheduler::CheckpointRecord> record;
  int job_ranks = 1;   // the job that wrote `record`: 1, N (recorded or read off the names), 0 =
                       // a rank's directory of a job whose size the record does not say
  int rank = 0;        // which rank's directory `record` is, when job_ranks != 1
  int held_ranks = 0;  // the job whose rank-<r> records are here; 0: none
};

// The size of the job that wrote `record` in `dir` (its grid, or for an older record the
// rank-<r> names of its directory and its store's); 1 for a one-process run.
std::pair<int, int> JobOfRecord(const std::string& dir, const scheduler::CheckpointRecord& record) {
  const auto& fp = record.fingerprint;
  if (const int n = scheduler::RecordedRanks(fp); n > 0) {
    int rank = 0;
    if (auto it = fp.find("rank"); it != fp.end()) {
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), rank);
    }
    return {n, rank};
  }
  const std::optional<int> named = RankOfName(BaseName(dir));
  const bool store_named =
      !record.nvme_dirs.empty() && RankOfName(BaseName(record.nvme_dirs[0])) == named;
  return named && store_named ? std::pair<int, int>{0, *named} : std::pair<int, int>{1, 0};
}

Result<Holdings> ReadHoldings(const std::string& dir) {
  Holdings h;
  std::error_code ec;
  std::set<int> records;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::optional<int> r = RankOfName(e.path().filename().string());
    if (r && fs::exists(e.path() / scheduler::kCheckpointFile, ec)) records.insert(*r);
  }
  if (!records.empty()) {
    const std::string first = dir + "/rank-" + std::to_string(*records.begin());
    STRATA_ASSIGN_OR_RETURN(const auto record, scheduler::ReadCheckpointRecord(first));
    const int recorded = record ? scheduler::RecordedRanks(record->fingerprint) : 0;
    h.held_ranks = recorded > 0 ? recorded : int(records.size());
  }
  STRATA_ASSIGN_OR_RETURN(h.record, scheduler::ReadCheckpointRecord(dir));
  if (h.record) std::tie(h.job_ranks, h.rank) = JobOfRecord(dir, *h.record);
  return h;
}

std::string JobText(int ranks) {
  return ranks == 1 ? "a one-process run" : "a job of " + std::to_string(ranks) + " ranks";
}

std::string Launch(int ranks) {
  return ranks == 1 ? "strata train ... (one process, no mpirun)"
                    : "mpirun -np " + std::to_string(ranks) + " strata train ...";
}

// --ckpt-dir is one rank's directory of a job, given alone.
Status RankDirectoryAlone(const std::string& dir, const Holdings& h, bool resume) {
  const std::string parent = ParentOf(dir);
  const std::string job =
      h.job_ranks > 0
          ? JobText(h.job_ranks) + " (" + scheduler::RecordedGrid(h.record->fingerprint) + ")"
          : std::string("a job of several ranks (an older record: its grid is not recorded)");
  const std::string launch =
      h.job_ranks > 0 ? Launch(h.job_ranks) : std::string("mpirun -np N strata train ...");
  return Status::InvalidArgument(
      "--ckpt-dir " + dir + " is rank " + std::to_string(h.rank) + "'s directory of " + job +
      ", whose --ckpt-dir is " + parent + "; " +
      (resume ? "resume the job as it was launched: " + launch + " --resume --ckpt-dir " +
                    parent + " with the job's --nvme-dir (resuming one rank's state on its own, "
                    "or under another layout, is not built yet)"
              : "give an empty --ckpt-dir for a new run"));
}

// The job's directories hold another number of ranks than this job has.
Status OtherJob(const std::string& dir, int held_ranks, int ranks, bool resume) {
  const std::string what =
      held_ranks == 1 ? dir + "/" + scheduler::kCheckpointFile
                      : dir + "/rank-0 ... rank-" + std::to_string(held_ranks - 1);
  return Status::InvalidArgument(
      std::string(resume ? "--resume: " : "") + "--ckpt-dir " + dir + " was written by " +
      JobText(held_ranks) + " (" + what + "), and this is " + JobText(ranks) + "; " +
      (resume ? "resume it as it was launched: " + Launch(held_ranks) +
                    " --resume with the same flags and directories (resuming under another "
                    "layout is not built yet)"
              : "give an empty --ckpt-dir for a new run, or resume that one: " + Launch(held_ranks) +
                    " --resume"));
}

}  // namespace

Status CheckCkptDirForJob(const TrainOptions& o, int ranks) {
  const std::string& dir = o.checkpoints.dir;
  std::error_code ec;
  // No record at all: the trainer says what the --nvme-dir's store holds (a mistyped --ckpt-dir).
  if (dir.empty() || !fs::is_directory(dir, ec)) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(const Holdings h, ReadHoldings(dir));
  if (h.record && h.job_ranks != 1) return RankDirectoryAlone(dir, h, o.checkpoints.resume);
  const int held = h.record ? 1 : h.held_ranks;
  if (held > 0 && held != ranks) return OtherJob(dir, held, ranks, o.checkpoints.resume);
  if (!o.checkpoints.resume || held == 0) return Status::Ok();
  // Every rank reads rank 0's record, so that every rank words a refusal alike.
  const std::string first = ranks == 1 ? dir : dir + "/rank-0";
  STRATA_ASSIGN_OR_RETURN(const auto record, scheduler::ReadCheckpointRecord(first));
  return scheduler::CheckResumable(record, first);
}

}  // namespace strata::tools
