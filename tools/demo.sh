#!/usr/bin/env bash
# README command (1): install, build, and train a small GPT on the built-in corpus with a
# progress line per step. Extra arguments go to `strata train` (e.g. --steps 200).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
./build/tools/strata train --model small --batch 8 --steps 60 --lr 1e-3 --warmup 10 "$@"
