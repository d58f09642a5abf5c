#include "tools/output_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "scheduler/checkpoint.h"

namespace strata::tools {
namespace {

namespace fs = std::filesystem;

struct Named {
  std::string flag;
  std::string path;
};

std::optional<struct stat> StatOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string DirectoryHolding(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// The directory that will hold `out` exists and takes new files.
Status CheckDirectory(const Named& out, const std::string& dir) {
  const std::optional<struct stat> st = StatOf(dir);
  if (!st) {
    return Status::NotFound(out.flag + " " + out.path + ": directory " + dir +
                            " does not exist; create it (mkdir -p " + dir +
                            ") or give another path");
  }
  if (!S_ISDIR(st->st_mode)) {
    return Status::InvalidArgument(out.flag + " " + out.path + ": " + dir + " is not a directory");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    // FromErrno appends the reason (e.g. "Permission denied") after the message.
    return Status::FromErrno(errno, out.flag + " " + out.path + ": give a path in a writable " +
                                        "directory; " + dir + " does not take new files");
  }
  return Status::Ok();
}

// One output file: a writable place that is not a directory.
Status CheckOutputFile(const Named& out) {
  const std::optional<struct stat> st = StatOf(out.path);
  if (st && S_ISDIR(st->st_mode)) {
    return Status::InvalidArgument(out.flag + " " + out.path +
                                   " is a directory; give the path of a file in it");
  }
  if (st && !S_ISREG(st->st_mode)) {  // a device or a pipe: written in place
    if (::access(out.path.c_str(), W_OK) == 0) return Status::Ok();
    return Status::FromErrno(errno, out.flag + " " + out.path + " is not writable");
  }
  return CheckDirectory(out, DirectoryHolding(out.path));
}

// `out`, when it exists, is none of the `inputs`.
Status CheckNotAnInput(const Named& out, const std::vector<Named>& inputs) {
  const std::optional<struct stat> st = StatOf(out.path);
  if (!st) return Status::Ok();  // a file not there yet is no input
  for (const Named& in : inputs) {
    const std::optional<struct stat> in_st = StatOf(in.path);
    if (in_st && SameFile(*st, *in_st)) {
      return Status::InvalidArgument(out.flag + " " + out.path + " is the same file as " + in.flag +
                                     " " + in.path +
                                     ", which writing would destroy; give another path");
    }
  }
  return Status::Ok();
}

// The page store owns its directories: nothing else is written there.
Status CheckNotInNvmeDir(const Named& out, const std::vector<std::string>& nvme_dirs) {
  const std::optional<struct stat> dir = StatOf(DirectoryHolding(out.path));
  for (const std::string& nvme : nvme_dirs) {
    const std::optional<struct stat> nvme_st = StatOf(nvme);
    if (dir && nvme_st && SameFile(*dir, *nvme_st)) {
      return Status::InvalidArgument(out.flag + " " + out.path + " lies in --nvme-dir " + nvme +
                                     ", which belongs to the page store; write it elsewhere");
    }
  }
  return Status::Ok();
}

// Two outputs naming one file would overwrite each other.
Status CheckDistinct(const std::vector<Named>& outputs) {
  std::error_code ec;
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      const fs::path a = fs::weakly_canonical(outputs[i].path, ec);
      const fs::path b = fs::weakly_canonical(outputs[j].path, ec);
      if (a == b) {
        return Status::InvalidArgument(outputs[i].flag + " and " + outputs[j].flag + " both name " +
                                       outputs[i].path + "; give each its own file");
      }
    }
  }
  return Status::Ok();
}

// A directory flag's path: an existing writable directory, or one its writable parent can hold.
Status CheckWritableDir(const std::string& flag, const std::string& dir) {
  const Named out{flag, dir};
  const std::optional<struct stat> st = StatOf(dir);
  if (!st) return CheckDirectory(out, DirectoryHolding(fs::path(dir).lexically_normal().string()));
  if (!S_ISDIR(st->st_mode)) {
    return Status::InvalidArgument(flag + " " + dir + " is not a directory");
  }
  return CheckDirectory(out, dir);
}

}  // namespace

Status CheckTrainOutputs(const TrainOptions& o, const std::string& log_json) {
  std::vector<Named> outputs;
  const bool in_dir = !o.outputs.export_dir.empty();
  if (in_dir) STRATA_RETURN_IF_ERROR(CheckWritableDir("--export-dir", o.outputs.export_dir));
  for (const Named& n : {Named{"--log-json", log_json},
                         Named{in_dir ? "--export-dir" : "--export", o.outputs.export_path},
                         Named{"--export-grads", o.outputs.export_grads_path},
                         Named{"--trace", o.outputs.trace_path}}) {
    if (!n.path.empty()) outputs.push_back(n);
  }
  std::vector<Named> inputs;
  if (o.data.path != "builtin") inputs.push_back({"--data", o.data.path});
  if (!o.model.init_path.empty()) inputs.push_back({"--init", o.model.init_path});
  if (!o.checkpoints.dir.empty()) {
    inputs.push_back({"--ckpt-dir's record",
                      (fs::path(o.checkpoints.dir) / scheduler::kCheckpointFile).string()});
  }
  for (const Named& out : outputs) {
    // --export-dir's file: its directory is made when the weights are written.
    const bool made_later =
        in_dir && out.path == o.outputs.export_path && !StatOf(o.outputs.export_dir).has_value();
    if (!made_later) STRATA_RETURN_IF_ERROR(CheckOutputFile(out));
    STRATA_RETURN_IF_ERROR(CheckNotAnInput(out, inputs));
    STRATA_RETURN_IF_ERROR(CheckNotInNvmeDir(out, o.budgets.nvme_dirs));
  }
  STRATA_RETURN_IF_ERROR(CheckDistinct(outputs));
  if (!o.checkpoints.dir.empty()) {
    STRATA_RETURN_IF_ERROR(CheckWritableDir("--ckpt-dir", o.checkpoints.dir));
  }
  return Status::Ok();
}

}  // namespace strata::tools
