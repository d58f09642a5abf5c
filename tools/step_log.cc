#include "tools/step_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "tools/json_number.h"

namespace strata::tools {
namespace {

// Writes all of `text` to `fd`, retrying short writes and EINTR.
Status WriteAll(int fd, const std::string& text, const std::string& what) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, what);
    if (n == 0) return Status::IoError(what + ": wrote nothing; is the disk full?");
    done += size_t(n);
  }
  return Status::Ok();
}

// The step of a line this tool wrote ({"step":N,...}), or -1 for anything else.
long StepOfLine(const std::string& line) {
  const std::string prefix = "{\"step\":";
  if (line.rfind(prefix, 0) != 0) return -1;
  char* end = nullptr;
  const long step = std::strtol(line.c_str() + prefix.size(), &end, 10);
  return end != nullptr && *end == ',' ? step : -1;
}

// Keeps the complete lines of steps 1 .. start_step of the log at `path`, atomically; nothing
// to do when there is no such regular file or it holds nothing else.
Status KeepStepsUpTo(const std::string& path, long start_step) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return Status::Ok();
  std::ifstream in(path, std::ios::binary);
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  std::string kept;
  size_t pos = 0;
  for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    const std::string line = text.substr(pos, nl - pos);
    const long step = StepOfLine(line);
    if (step >= 1 && step <= start_step) kept += line + "\n";
  }
  if (kept == text) return Status::Ok();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "--log-json: create " + tmp);
  Status st_write = WriteAll(fd, kept, "--log-json: write " + tmp);
  if (st_write.ok() && ::fsync(fd) != 0) st_write = Status::FromErrno(errno, "fsync " + tmp);
  if (::close(fd) != 0 && st_write.ok()) st_write = Status::FromErrno(errno, "close " + tmp);
  if (st_write.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st_write = Status::FromErrno(errno, "--log-json: rename " + tmp + " to " + path);
  }
  if (!st_write.ok()) ::unlink(tmp.c_str());
  return st_write;
}

}  // namespace

std::string StepJson(const StepStats& s) {
  std::ostringstream o;
  o << "{\"step\":" << s.step << ",\"loss\":" << FloatToJson(s.loss)
    << ",\"tokens_per_s\":" << DoubleToJson(s.tokens_per_s)
    << ",\"elapsed_s\":" << DoubleToJson(s.elapsed_s) << ",\"lr\":" << FloatToJson(s.lr)
    << ",\"grad_norm\":" << DoubleToJson(s.grad_norm)
    << ",\"clipped\":" << (s.clipped ? "true" : "false");
  if (s.paged) {
    o << ",\"moved_bytes\":{\"h2d\":" << s.moved_bytes.h2d << ",\"d2h\":" << s.moved_bytes.d2h
      << ",\"nvme_read\":" << s.moved_bytes.nvme_read
      << ",\"nvme_write\":" << s.moved_bytes.nvme_write
      << "},\"overlap\":" << DoubleToJson(s.overlap)
      << ",\"compute_comm_s\":" << DoubleToJson(s.compute_comm_s)
      << ",\"peak_bytes\":{\"device\":" << s.device_peak_bytes << ",\"host\":" << s.host_peak_bytes
      << ",\"nvme\":" << s.nvme_peak_bytes << ",\"activations\":" << s.activation_bytes << "}}";
  } else {
    o << ",\"peak_bytes\":{\"device\":" << s.device_peak_bytes << "}}";
  }
  return o.str();
}

Result<std::unique_ptr<StepLog>> StepLog::Open(const std::string& path, bool resume,
                                               long start_step) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
  if (resume) {
    STRATA_RETURN_IF_ERROR(KeepStepsUpTo(path, start_step));
    flags |= O_APPEND;
  } else {
    flags |= O_TRUNC;
  }
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return Status::FromErrno(errno, "--log-json: cannot open " + path + " for writing");
  return std::unique_ptr<StepLog>(new StepLog(path, fd));
}

StepLog::~StepLog() { ::close(fd_); }

Status StepLog::write(const StepStats& s) {
  return WriteAll(fd_, StepJson(s) + "\n",
                  "--log-json " + path_ + ": write of step " + std::to_string(s.step));
}

}  // namespace strata::tools
