#include "core/util/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace strata {

Status FsyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path + " to fsync it");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::FromErrno(err, "fsync " + path);
  return Status::Ok();
}

Status WriteFileDurably(const std::string& dir, const std::string& name, const std::string& text,
                        const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(what + ": cannot create " + dir + ": " + ec.message());
  const std::string path = dir + "/" + name, tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Status::FromErrno(errno, what + ": cannot write " + tmp);
    out << text;
    out.flush();
    if (!out) return Status::FromErrno(errno, what + ": writing " + tmp);
  }
  STRATA_RETURN_IF_ERROR(FsyncPath(tmp, false));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FromErrno(errno, what + ": renaming " + tmp + " to " + path);
  }
  return FsyncPath(dir, true);
}

}  // namespace strata
