// strata: one binary, one subcommand per job. Thin: parses, calls, prints.
#include <cstdio>
#include <string>

#include "tools/budget_message.h"
#include "tools/command.h"

namespace strata::tools {

int ExitCodeFor(const Status& status) {
  if (status.ok()) return 0;
  return status.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace strata::tools

int main(int argc, char** argv) {
  using namespace strata::tools;
  CLI::App app{
      "strata: train deep-learning models whose state is larger than device memory.\n"
      "Model state lives in fixed-size pages that move between device memory, pinned host\n"
      "memory and NVMe under hard budgets. Run `strata <command> --help` for each command."};
  app.require_subcommand(1);
  CommandContext ctx;
  AddTrainCommand(app, ctx);
  AddBenchCommand(app, ctx);
  AddCkptCommand(app, ctx);
  AddStressCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; a usage error prints one line and exits 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "strata: %s\n", e.what());
    std::fprintf(stderr, "run 'strata --help' for usage\n");
    return 2;
  }
  if (!ctx.status.ok()) {
    // A budget shortfall from memory/ is worded with its flag here, for every command.
    const strata::Status shown = WithBudgetAdvice(ctx.status);
    std::fprintf(stderr, "strata: error: %s\n", shown.message().c_str());
  }
  if (ctx.status.ok() && ctx.stop_signal != 0) return 128 + ctx.stop_signal;
  return ExitCodeFor(ctx.status);
}
