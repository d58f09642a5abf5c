#include "core/util/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace strata {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kNotSupported: return "NotSupported";
    case StatusCode::kTimeout: return "Timeout";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

Status Status::FromErrno(int err, const std::string& what) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT: return NotFound(msg);
    case EEXIST: return AlreadyExists(msg);
    case ENOSPC:
    case EDQUOT:
    case ENOMEM: return ResourceExhausted(msg);
    case EINVAL: return InvalidArgument(msg);
    case EACCES:
    case EPERM:
    case EROFS: return FailedPrecondition(msg);
    case EOPNOTSUPP: return NotSupported(msg);
    case ETIMEDOUT: return Timeout(msg);
    case EINTR:
    case ECANCELED: return Aborted(msg);
    default: return IoError(msg);
  }
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::with_message(std::string message) const {
  if (ok()) return *this;
  Status out(code_, std::move(message));
  out.detail_ = detail_;
  return out;
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return *this;
  Status out(code_, context + ": " + message_);
  out.detail_ = detail_;
  return out;
}

namespace internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << "STRATA_CHECK failed at " << file << ":" << line << ": " << condition << " ";
}

CheckFailure::~CheckFailure() {
  stream_ << "\n(this is a bug in Strata; please report it with the command that triggered it)\n";
  std::cerr << stream_.str() << std::flush;
  std::abort();
}

}  // namespace internal
}  // namespace strata
