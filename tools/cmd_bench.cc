// `strata bench <kind>`: measurements that print JSON on stdout (logs go to stderr). Only the
// command's registration lives here; the kinds are the harness in bench/ (bench/bench_commands.h).
#include "bench/bench_commands.h"
#include "tools/command.h"

namespace strata::tools {

void AddBenchCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure this machine and Strata against it; prints JSON on stdout");
  cmd->require_subcommand(1);
  bench::AddBenchGemmCommand(*cmd, ctx.status);
  bench::AddBenchStepCommand(*cmd, ctx.status);
  bench::AddBenchIoCommand(*cmd, ctx.status);
  bench::AddBenchPagesCommand(*cmd, ctx.status);
  bench::AddBenchOffloadCommand(*cmd, ctx.status);
  bench::AddBenchParallelCommand(*cmd, ctx.status);
  bench::AddBenchParallelWorkerCommand(*cmd, ctx.status);
}

}  // namespace strata::tools
