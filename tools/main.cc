// strata: one binary, one subcommand per job. Thin: parses, calls, prints.
#include <cstdio>
#include <string>
#include <vector>

#include "core/util/log_words.h"
#include "stress/stress_command.h"
#include "tools/budget_message.h"
#include "tools/command.h"
#include "tools/option_words.h"

namespace strata::tools {

int ExitCodeFor(const Status& status) {
  if (status.ok()) return 0;
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

namespace {

// The subcommands given, outermost first ("ckpt", "prune"), as far as parsing got.
std::vector<const CLI::App*> GivenCommands(const CLI::App& app) {
  std::vector<const CLI::App*> path;
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path.push_back(at);
  }
  return path;
}

// A usage error in the words of the command it is about: "unknown command 'frobnicate' (the
// commands are ...)" for a word that names no subcommand, and the help of the deepest command.
void PrintUsageError(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::vector<const CLI::App*> path = GivenCommands(app);
  const CLI::App& deepest = path.empty() ? app : *path.back();
  std::string name = "strata";
  for (const CLI::App* c : path) name += " " + c->get_name();
  const size_t next = path.size() + 1;  // the word after the commands (none take options first)
  // Hidden ones (an empty group: the ranks `bench parallel` launches) are not offered.
  const std::vector<const CLI::App*> subs =
      deepest.get_subcommands([](const CLI::App* c) { return !c->get_group().empty(); });
  if (!subs.empty() && next < size_t(argc) && argv[next][0] != '-') {
    std::string names;
    for (const CLI::App* c : subs) names += (names.empty() ? "" : ", ") + c->get_name();
    std::fprintf(stderr, "strata: unknown command '%s' for '%s' (its commands: %s)\n",
                 argv[next], name.c_str(), names.c_str());
  } else {
    std::fprintf(stderr, "strata: %s\n", e.what());
  }
  std::fprintf(stderr, "run '%s --help' for usage\n", name.c_str());
}

}  // namespace
}  // namespace strata::tools

int main(int argc, char** argv) {
  using namespace strata::tools;
  CLI::App app{
      "strata: train deep-learning models whose state is larger than device memory.\n"
      "Model state lives in fixed-size pages that move between device memory, pinned host\n"
      "memory and NVMe under hard budgets. Run `strata <command> --help` for each command."};
  app.require_subcommand(1);
  strata::SetLogOptionWords(FlagOf);
  CommandContext ctx;
  AddTrainCommand(app, ctx);
  AddBenchCommand(app, ctx);
  AddCkptCommand(app, ctx);
  strata::stress::AddStressCommand(app, ctx.status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; a usage error prints one line and exits 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    PrintUsageError(app, e, argc, argv);
    return 2;
  }
  if (!ctx.status.ok() && !ctx.error_said) {
    // A budget shortfall from memory/, and every option the floors below mention, are worded
    // with their flags here, for every command.
    const strata::Status shown = InFlagTerms(WithBudgetAdvice(ctx.status));
    std::fprintf(stderr, "strata: error: %s\n", shown.message().c_str());
  }
  if (ctx.status.ok() && ctx.stop_signal != 0) return 128 + ctx.stop_signal;
  return ExitCodeFor(ctx.status);
}
