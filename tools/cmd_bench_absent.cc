// `strata bench` in a build configured without the benchmark harness (-DSTRATA_BENCH=OFF, as the
// sanitizer trees are): the command is still there, and says how to get the harness.
#include "tools/command.h"

namespace strata::tools {

void AddBenchCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure this machine and Strata against it (not in this build: STRATA_BENCH=OFF)");
  cmd->allow_extras();
  cmd->callback([&ctx] {
    ctx.status = Status::NotSupported(
        "this build has no benchmark harness (configured with -DSTRATA_BENCH=OFF); configure "
        "with -DSTRATA_BENCH=ON to run `strata bench`");
  });
}

}  // namespace strata::tools
