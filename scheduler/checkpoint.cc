#include "scheduler/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace strata::scheduler {
namespace {

Status FsyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path + " to fsync it");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno(err, "fsync " + path);
  return Status::Ok();
}

}  // namespace

std::string ManifestNameForStep(long step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08ld", step);
  return buf;
}

Result<std::optional<CheckpointRecord>> ReadCheckpointRecord(const std::string& dir) {
  const std::string path = dir + "/" + kCheckpointFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<CheckpointRecord>();
  std::ifstream in(path);
  if (!in) return Status::FromErrno(errno, "--ckpt-dir: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    const auto j = nlohmann::json::parse(ss.str());
    CheckpointRecord r;
    r.step = j.at("step").get<long>();
    r.manifest = j.at("manifest").get<std::string>();
    r.run = j.at("run").get<std::string>();
    return std::optional<CheckpointRecord>(r);
  } catch (const std::exception& e) {
    return Status::Corruption(path + " is not a Strata checkpoint record (" + e.what() +
                              "); restore it or start without --resume in an empty --ckpt-dir");
  }
}

Status WriteCheckpointRecord(const std::string& dir, const CheckpointRecord& record) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("--ckpt-dir: cannot create " + dir + ": " + ec.message());
  const std::string path = dir + "/" + kCheckpointFile, tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Status::FromErrno(errno, "--ckpt-dir: cannot write " + tmp);
    out << nlohmann::json{{"step", record.step}, {"manifest", record.manifest}, {"run", record.run}}
               .dump()
        << "\n";
    out.flush();
    if (!out) return Status::FromErrno(errno, "--ckpt-dir: writing " + tmp);
  }
  STRATA_RETURN_IF_ERROR(FsyncPath(tmp, false));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FromErrno(errno, "--ckpt-dir: renaming " + tmp + " to " + path);
  }
  return FsyncPath(dir, true);
}

}  // namespace strata::scheduler
