#include "stress/stress_judge.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

namespace strata::stress {
namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// The number after `key` in `line`, or -1.
long NumberAfter(std::string_view line, std::string_view key) {
  const size_t pos = line.find(key);
  if (pos == std::string_view::npos) return -1;
  const std::string rest(line.substr(pos + key.size()));
  char* end = nullptr;
  const long v = std::strtol(rest.c_str(), &end, 10);
  return end == rest.c_str() ? -1 : v;
}

}  // namespace

std::map<long, std::string> LossTexts(std::string_view jsonl) {
  std::map<long, std::string> out;
  for (std::string_view line : Lines(jsonl)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number()) {
      continue;
    }
    const size_t pos = line.find("\"loss\":");
    if (pos == std::string_view::npos) continue;
    const size_t end = line.find_first_of(",}", pos);
    out[j["step"].get<long>()] = std::string(line.substr(pos, end - pos));
  }
  return out;
}

StressJudgement JudgeConfiguration(const std::map<long, std::string>& reference,
                                   const std::vector<std::map<long, std::string>>& attempts,
                                   long steps, bool finished, const std::string& ref_weights,
                                   const std::string& weights) {
  StressJudgement j;
  std::map<long, bool> logged;
  for (size_t a = 0; a < attempts.size(); ++a) {
    for (const auto& [step, loss] : attempts[a]) {
      logged[step] = true;
      const auto want = reference.find(step);
      if (want == reference.end() || want->second != loss) {
        ++j.mismatches;
        j.problems.push_back("attempt " + std::to_string(a + 1) + " step " +
                             std::to_string(step) + ": " + loss + ", reference " +
                             (want == reference.end() ? "has no such step" : want->second));
      }
    }
  }
  for (long step = 1; step <= steps; ++step) {
    if (logged.count(step) == 0) {
      j.data_lost = true;
      j.problems.push_back("step " + std::to_string(step) + " was never logged");
    }
  }
  if (!finished) {
    j.data_lost = true;
    j.problems.push_back("the run never finished");
  } else if (weights != ref_weights) {
    ++j.mismatches;
    j.problems.push_back("the exported weights differ from the reference (" +
                         std::to_string(weights.size()) + " vs " +
                         std::to_string(ref_weights.size()) + " bytes)");
  }
  return j;
}

ExitKind ClassifyExit(const ChildExit& how, int sent_signal, std::string_view stderr_text,
                      std::string* error_line) {
  int error_lines = 0;
  bool crash_text = false;
  for (std::string_view line : Lines(stderr_text)) {
    if (line.rfind("strata: error:", 0) == 0) {
      ++error_lines;
      if (error_line != nullptr) *error_line = std::string(line);
    }
    for (std::string_view bad : {"terminate called", "Aborted", "Check failed", "STRATA_CHECK",
                                 "Segmentation fault", "AddressSanitizer", "Assertion `"}) {
      if (line.find(bad) != std::string_view::npos) crash_text = true;
    }
  }
  if (how.timed_out) return ExitKind::kFailure;
  if (!how.exited) {
    return sent_signal != 0 && how.signal == sent_signal ? ExitKind::kStoppedByUs
                                                         : ExitKind::kFailure;
  }
  if (sent_signal != 0 && how.code == 128 + sent_signal && !crash_text) {
    return ExitKind::kStoppedByUs;
  }
  if (how.code == 0 && !crash_text) return ExitKind::kFinished;
  if (how.code == 1 && error_lines == 1 && !crash_text) return ExitKind::kCleanError;
  return ExitKind::kFailure;
}

long InjectedCount(std::string_view stderr_text) {
  long n = -1;
  for (std::string_view line : Lines(stderr_text)) {
    if (line.rfind("strata: inject-faults:", 0) == 0) n = NumberAfter(line, "inject-faults:");
  }
  return n;
}

long SuggestedResumeStep(std::string_view error_line) {
  return NumberAfter(error_line, "--resume-from ");
}

bool NamesDiskFull(std::string_view error_line) {
  return error_line.find("No space left on device") != std::string_view::npos;
}

std::string RankChangeProblem(const ChildExit& how, std::string_view output, bool made_rank_dirs) {
  if (how.timed_out || !how.exited || how.code != 2) {
    return "a resume as 2 ranks over a one-process run's directories must be refused with exit "
           "2, got " + (how.exited ? "exit " + std::to_string(how.code) : std::string("a signal"));
  }
  size_t lines = 0;
  for (size_t p = output.find("strata: error:"); p != std::string_view::npos;
       p = output.find("strata: error:", p + 1)) {
    ++lines;
  }
  if (lines != 1 || output.find("was written by a one-process run") == output.npos) {
    // The output goes with the problem: a refusal that went wrong once under load (an MPI
    // launch failure, a second rank's other error) cannot be judged from its exit code.
    constexpr size_t kShown = 1200;
    const std::string_view shown = output.substr(0, kShown);
    return "the refusal of a resume as 2 ranks must be one error line naming a one-process run; "
           "it printed " + std::to_string(lines) + " error line(s):\n" + std::string(shown) +
           (output.size() > kShown ? "\n[... " + std::to_string(output.size() - kShown) +
                                          " more bytes]" : "");
  }
  return made_rank_dirs ? "a refused resume as 2 ranks created rank-<r> directories" : "";
}

}  // namespace strata::stress
