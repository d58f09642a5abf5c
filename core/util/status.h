// Status and Result<T>: the error channel for everything a user, a disk or a peer can cause.
//
// Contract:
// - A Status is either OK or carries a code and a message. Messages say what happened, where,
//   and what to try ("--gpu-mem 64M is below the 96M that one block needs; raise it").
// - Both types are [[nodiscard]]: ignoring one is a compile warning. To ignore on purpose,
//   write `status.ignore_error();` so the choice is greppable.
// - errno is mapped to a Status in exactly one place: Status::FromErrno.
// - Broken internal invariants are not Statuses: they are STRATA_CHECK failures (check.h).
#pragma once

#include <cerrno>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "core/util/check.h"

namespace strata {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller (usually the user's flags) asked for something invalid
  kNotFound,         // a file, page or key that should exist does not
  kAlreadyExists,
  kOutOfRange,          // e.g. a token id >= vocab, a read past the end of a file
  kResourceExhausted,   // a budget, an arena or a disk is too small
  kFailedPrecondition,  // the system is not in a state where the call can work
  kIoError,             // the OS reported an I/O failure
  kCorruption,          // data failed validation: bad magic, checksum mismatch, truncation
  kNotSupported,        // a capability the backend or machine lacks
  kTimeout,
  kAborted,
  kInternal,
};

const char* StatusCodeName(StatusCode code);

// Structured facts a layer attaches to an error so that a caller can act on them without
// parsing the message: which option is at fault and by how much (OptionFault, option.h), which
// budget fell short (memory::BudgetShortfall), why a checkpoint record cannot be used. The
// message stays complete on its own; the detail is for code. Any copyable struct can be a
// detail; one Status carries at most one, immutable once attached:
//   return WithDetail(Status::InvalidArgument(msg), OptionFault{Option::kBatch, {{"got", 0}}});
//   if (const OptionFault* f = DetailOf<OptionFault>(status)) ... f->option ...
class Status;
template <typename T>
Status WithDetail(const Status& status, T detail);
template <typename T>
const T* DetailOf(const Status& status);

namespace internal {
// The type-erased holder of a detail; WithDetail and DetailOf are its only users.
class StatusDetail {
 public:
  virtual ~StatusDetail() = default;
};
template <typename T>
struct StatusDetailOf final : StatusDetail {
  explicit StatusDetailOf(T v) : value(std::move(v)) {}
  T value;
};
}  // namespace internal

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status NotSupported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  // Maps an errno value to a Status. `what` says which operation on which object failed,
  // e.g. "open /mnt/nvme/strata.slots"; the errno text is appended.
  static Status FromErrno(int err, const std::string& what);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "IoError: pwrite /x offset 4096: No space left on device"
  std::string to_string() const;

  // Returns a Status with the same code, detail and `context + ": " + message`.
  Status with_context(const std::string& context) const;
  // Returns a Status with the same code and detail and `message` as its text: an edge's words
  // for a lower floor's error (tools/option_words.h). OK stays OK.
  Status with_message(std::string message) const;

  // Explicit, greppable way to drop a Status on purpose.
  void ignore_error() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  template <typename T>
  friend Status WithDetail(const Status& status, T detail);
  template <typename T>
  friend const T* DetailOf(const Status& status);

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::shared_ptr<const internal::StatusDetail> detail_;
};

// `status` carrying `detail` (replacing any it had); OK stays OK and carries nothing.
template <typename T>
Status WithDetail(const Status& status, T detail) {
  if (status.ok()) return status;
  Status out = status;
  out.detail_ = std::make_shared<const internal::StatusDetailOf<T>>(std::move(detail));
  return out;
}

// The detail of type T that `status` carries, or nullptr (none, or one of another type).
template <typename T>
const T* DetailOf(const Status& status) {
  const auto* d = dynamic_cast<const internal::StatusDetailOf<T>*>(status.detail_.get());
  return d == nullptr ? nullptr : &d->value;
}

// Result<T>: a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    STRATA_CHECK(!std::get<Status>(v_).ok()) << "Result constructed from an OK Status";
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & {
    STRATA_CHECK(ok()) << "Result::value() on error: " << std::get<Status>(v_).to_string();
    return std::get<T>(v_);
  }
  const T& value() const& {
    STRATA_CHECK(ok()) << "Result::value() on error: " << std::get<Status>(v_).to_string();
    return std::get<T>(v_);
  }
  T&& value() && {
    STRATA_CHECK(ok()) << "Result::value() on error: " << std::get<Status>(v_).to_string();
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER_(a, b) a##b
#define STRATA_CONCAT_(a, b) STRATA_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define STRATA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::strata::Status strata_status_ = (expr);        \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

// `STRATA_ASSIGN_OR_RETURN(auto x, MakeX());` — declares/assigns from a Result or returns its
// error.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_CONCAT_(strata_result_, __LINE__), lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
