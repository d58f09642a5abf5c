// BenchDir: a scratch directory on the disk a benchmark measures, made empty under a parent the
// user names (--dir, --nvme-dir) and removed with everything in it when the BenchDir goes.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "core/util/status.h"

namespace strata::bench {

class BenchDir {
 public:
  // `parent/strata-bench-<tag>-XXXXXX`; `flag` names the option that gave `parent`, for errors.
  static Result<std::unique_ptr<BenchDir>> Create(const std::string& parent,
                                                  const std::string& tag,
                                                  const std::string& flag) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    std::string tmpl = parent + "/strata-bench-" + tag + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return Status::FromErrno(errno, flag + ": cannot create a scratch directory " + tmpl);
    }
    return std::unique_ptr<BenchDir>(new BenchDir(std::move(tmpl)));
  }
  ~BenchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;

  const std::string& path() const { return path_; }
  // An (empty, created) subdirectory.
  std::string sub(const std::string& name) const {
    std::filesystem::create_directories(path_ + "/" + name);
    return path_ + "/" + name;
  }

 private:
  explicit BenchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace strata::bench
