// strata: one binary, one subcommand per job (train, bench, ...). Thin: parses, calls, prints.
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "strata: no subcommands yet\n");
  return 2;
}
