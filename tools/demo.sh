#!/usr/bin/env bash
# README command (1): install, build, and train the `small` GPT (10.8M parameters, ~200 MiB of
# training state) under tight budgets — 128 MiB of device memory, a 64 MiB pinned host pool,
# the rest on NVMe (build/demo-nvme) — with one progress line per step showing the pages move.
# Extra arguments go to `strata train` (e.g. --steps 200).
set -euo pipefail
cd "$(dirname "$0")/.."
# STRATA_DEMO_NO_BUILD=1: the tree is built already (tools/readme_samples.py runs the demo so).
[ "${STRATA_DEMO_NO_BUILD:-}" = 1 ] || bash tools/build.sh
nvme_dir=build/demo-nvme
rm -rf "$nvme_dir" && mkdir -p "$nvme_dir"   # the NVMe tier starts from an empty directory
./build/tools/strata train --model small --batch 8 --micro-batch 4 --steps 40 --lr 1e-3 \
  --warmup 10 --gpu-mem 128M --host-mem 64M --nvme-dir "$nvme_dir" --page-size 1M \
  --recompute auto "$@"
