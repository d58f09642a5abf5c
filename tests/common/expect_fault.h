// ExpectFault: the one check that an error carries the structured facts issue 32 asks of the
// floors below the edges: an OptionFault detail (core/util/option.h) naming the option at fault,
// with the numbers its message states. Shared by every test folder.
//
//   ExpectFault(device.status(), Option::kGpuMem, {{"got", 0}});
//
// The numbers given must each be there with that value; the fault may carry more. A failure is
// reported at the caller's line and says what the status carried: its text, the option, and
// every number, so that a wrong or missing fact reads without a debugger.
#pragma once

#include <gtest/gtest.h>

#include <source_location>
#include <sstream>
#include <string>

#include "core/util/option.h"
#include "core/util/status.h"

namespace strata::test_support {

// "{got=0, need_bytes=1024}": a fault's numbers as a failure message shows them.
inline std::string FaultNumbersText(const OptionNumbers& numbers) {
  std::ostringstream out;
  out << "{";
  for (size_t i = 0; i < numbers.size(); ++i) {
    out << (i == 0 ? "" : ", ") << numbers[i].first << "=" << numbers[i].second;
  }
  out << "}";
  return out.str();
}

// Adds a non-fatal failure at `where` (the caller's line) unless `status` is an error carrying an
// OptionFault for `option` with each of `numbers`. Returns whether it did: a caller that goes on
// to use the fault can stop at `if (!ExpectFault(...)) return;`.
inline bool ExpectFault(const Status& status, Option option, const OptionNumbers& numbers = {},
                        std::source_location where = std::source_location::current()) {
  const auto fail = [&](const std::string& why) {
    ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line()))
        << "expected a fault of {" << OptionKey(option) << "} with "
        << FaultNumbersText(numbers) << ": " << why;
    return false;
  };
  if (status.ok()) return fail("the status is OK");
  const OptionFault* fault = DetailOf<OptionFault>(status);
  if (fault == nullptr) return fail("no OptionFault on " + status.to_string());
  const std::string carried = "the fault of {" + std::string(OptionKey(fault->option)) +
                              "} with " + FaultNumbersText(fault->numbers) + " on " +
                              status.to_string();
  if (fault->option != option) return fail("another option: " + carried);
  for (const auto& [name, value] : numbers) {
    const std::optional<int64_t> got = fault->number(name);
    if (!got) return fail("no number '" + name + "' in " + carried);
    if (*got != value) {
      return fail("'" + name + "' is " + std::to_string(*got) + ", not " +
                  std::to_string(value) + ", in " + carried);
    }
  }
  return true;
}

}  // namespace strata::test_support
