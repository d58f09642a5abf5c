#!/usr/bin/env bash
# Compares two runs' losses step by step: one line per step with both losses and their relative
# difference, the largest difference, then PASS or FAIL (exit 1) against a relative tolerance.
# Needs at least 5 steps, and the same number of steps in both. Used by train_on_gpu.sh and
# tools/gpu_check.sh.
#
#   loss_diff.sh A.jsonl B.jsonl TOL [NAME_A NAME_B]    (--log-json files of `strata train`)
set -euo pipefail
if [[ $# -ne 3 && $# -ne 5 ]]; then
  echo "usage: $0 A.jsonl B.jsonl TOL [NAME_A NAME_B]" >&2
  exit 2
fi

# The losses of a --log-json file, one per line, as printed (enough digits to read back exactly).
losses() { grep -o '"loss":[^,}]*' "$1" | cut -d: -f2; }

paste <(losses "$1") <(losses "$2") |
  awk -v tol="$3" -v a="${4:-$1}" -v b="${5:-$2}" '
    NF < 2 { print "FAIL: step " NR ": only one run has a loss"; bad = -1; exit 1 }
    { n++; d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; r = d / m; if (r > worst) worst = r
      printf "step %d: %s %s %s %s relative %.3g\n", n, a, $1, b, $2, r
      if (d > tol * m) bad++ }
    END { if (bad < 0) exit 1
          printf "steps %d, largest relative difference %.3g\n", n, worst
          if (n < 5) { print "FAIL: only " n " losses"; exit 1 }
          if (bad) { print "FAIL: " bad " step(s) beyond " tol " relative"; exit 1 }
          print "PASS: " n " losses within " tol " relative" }'
