#!/usr/bin/env bash
# README command (1): install, build, and train the `small` GPT (10.8M parameters, ~200 MiB of
# training state) under tight budgets — 128 MiB of device memory, a 64 MiB pinned host pool,
# the rest on NVMe (build/demo-nvme) — with one progress line per step showing the pages move.
# Extra arguments go to `strata train` (e.g. --log-json run.jsonl, or --device cuda on a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
# STRATA_DEMO_NO_BUILD=1: the tree is built already (tools/readme_samples.py runs the demo so).
# STRATA_DEMO_BIN and STRATA_DEMO_NVME_DIR: another `strata` and NVMe directory (tools/gpu_check.sh
# runs this configuration on a GPU machine from its bundle).
[ "${STRATA_DEMO_NO_BUILD:-}" = 1 ] || bash tools/build.sh
strata=${STRATA_DEMO_BIN:-./build/tools/strata}
nvme_dir=${STRATA_DEMO_NVME_DIR:-build/demo-nvme}
rm -rf "$nvme_dir" && mkdir -p "$nvme_dir"   # the NVMe tier starts from an empty directory
"$strata" train --model small --batch 8 --micro-batch 4 --steps 40 --lr 1e-3 \
  --warmup 10 --gpu-mem 128M --host-mem 64M --nvme-dir "$nvme_dir" --page-size 1M \
  --recompute auto "$@"
