// `strata bench <kind>`: measurements that print JSON on stdout (logs go to stderr).
#include "tools/command.h"

namespace strata::tools {

void AddBenchCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* bench = app.add_subcommand(
      "bench", "Measure this machine and Strata against it; prints JSON on stdout");
  bench->require_subcommand(1);
  AddBenchGemmCommand(*bench, ctx);
  AddBenchStepCommand(*bench, ctx);
  AddBenchIoCommand(*bench, ctx);
  AddBenchPagesCommand(*bench, ctx);
  AddBenchOffloadCommand(*bench, ctx);
  AddBenchParallelCommand(*bench, ctx);
  AddBenchParallelWorkerCommand(*bench, ctx);
}

}  // namespace strata::tools
