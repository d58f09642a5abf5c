// STRATA_CHECK: aborts on a broken internal invariant, in every build type.
//
//   STRATA_CHECK(pin_count_ > 0) << "release of page " << id << " that is not pinned";
//
// Use it only for bugs in Strata itself. Anything a user, a disk or a peer can cause returns
// a Status instead (status.h).
#pragma once

#include <sstream>

namespace strata::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace strata::internal

#define STRATA_CHECK(cond) \
  if (cond) {              \
  } else                   \
    ::strata::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define STRATA_CHECK_EQ(a, b) STRATA_CHECK((a) == (b)) << #a " = " << (a) << ", " #b " = " << (b) << ": "
#define STRATA_CHECK_LE(a, b) STRATA_CHECK((a) <= (b)) << #a " = " << (a) << ", " #b " = " << (b) << ": "
#define STRATA_CHECK_LT(a, b) STRATA_CHECK((a) < (b)) << #a " = " << (a) << ", " #b " = " << (b) << ": "
