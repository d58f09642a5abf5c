#!/usr/bin/env bash
# Runs a command that must end with a given exit code within a time limit: for jobs whose
# expected outcome is a failure (an MPI job ended by Comm::abort), which ctest alone cannot
# check by code.
#   expect_exit.sh EXPECTED_CODE MAX_SECONDS COMMAND [ARGS...]
# Exit 0 when the command exited with EXPECTED_CODE in at most MAX_SECONDS; 1 otherwise.
set -uo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 EXPECTED_CODE MAX_SECONDS COMMAND [ARGS...]" >&2
  exit 2
fi
expected=$1
max_s=$2
shift 2
start=$(date +%s)
"$@"
code=$?
took=$(( $(date +%s) - start ))
if [[ $code -ne $expected ]]; then
  echo "expect_exit: '$*' exited with $code, expected $expected (after ${took} s)"
  exit 1
fi
if (( took > max_s )); then
  echo "expect_exit: '$*' took ${took} s, more than ${max_s} s"
  exit 1
fi
echo "expect_exit: exited with $code after ${took} s, as expected"
