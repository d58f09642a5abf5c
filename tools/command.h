// How subcommands plug into the `strata` binary.
//
// Each product subcommand lives in its own file tools/cmd_<name>.cc and exposes one function
// that adds itself to the CLI11 app:
//
//   void AddTrainCommand(CLI::App& app, CommandContext& ctx);
//
// The harness lives in rooms of its own, libraries the binary links: `strata bench`'s kinds in
// bench/ (bench/bench_commands.h; tools/cmd_bench.cc registers them) and `strata stress` in
// stress/ (stress/stress_command.h). Their functions take the Status to set, ctx.status.
//
// The callback it sets runs the command and stores the outcome in ctx.status. main() turns
// that into one line on stderr and the exit code: 0 ok, 2 usage errors (InvalidArgument:
// bad flags or values), 1 everything else (files, disks, budgets at run time).
#pragma once

#include <CLI/CLI.hpp>

#include "core/util/status.h"

namespace strata::tools {

struct CommandContext {
  Status status;
  // The signal that stopped the command (tools/stop_signals.h), 0 when none did: the command
  // printed its line, main() exits 128 + stop_signal.
  int stop_signal = 0;
  // The error in `status` was already said (by another rank of the job): main() prints nothing
  // but still exits with its code.
  bool error_said = false;
};

void AddTrainCommand(CLI::App& app, CommandContext& ctx);
void AddBenchCommand(CLI::App& app, CommandContext& ctx);
void AddCkptCommand(CLI::App& app, CommandContext& ctx);

// Exit code for a command's Status: 0, 2 for InvalidArgument, else 1.
int ExitCodeFor(const Status& status);

}  // namespace strata::tools
