// Issue 12, "Nothing lost, nothing silent": the checkpoint findings, each as `strata train` runs
// them. Every test here failed before the fix: a superseded manifest stayed and filled the store;
// a mistyped --ckpt-dir started over, a changed --lr or --data resumed, a hand-edited step was
// trusted (each exited 0); a rotted newest checkpoint left nothing to resume from.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "memory/open_nvme_tier.h"
#include "scheduler/checkpoint.h"
#include "storage/fault_injector.h"
#include "storage/page_store.h"
#include "tests/scheduler/scheduler_test_util.h"
#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

// A tiny paged run with a checkpoint every 2 steps on two NVMe dirs under `root`.
std::vector<std::string> Args(const std::string& root, long steps,
                              const std::vector<std::string>& more = {}) {
  std::vector<std::string> a = {"train",
                                "--model",
                                "tiny",
                                "--batch",
                                "4",
                                "--seq",
                                "64",
                                "--steps",
                                std::to_string(steps),
                                "--lr",
                                "1e-3",
                                "--seed",
                                "7",
                                "--threads",
                                "1",
                                "--grad-clip",
                                "2",
                                "--page-size",
                                "16K",
                                "--host-mem",
                                "640K",
                                "--params-on",
                                "nvme",
                                "--optimizer-on",
                                "nvme",
                                "--nvme-dir",
                                root + "/nvme0",
                                "--nvme-dir",
                                root + "/nvme1",
                                "--ckpt-dir",
                                root + "/ckpt",
                                "--ckpt-every",
                                "2",
                                "--micro-batch",
                                "2",
                                "--log-level",
                                "warn"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// `a` with the value after `flag` replaced.
std::vector<std::string> Set(std::vector<std::string> a, const std::string& flag,
                             const std::string& value) {
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    if (a[i] == flag) a[i + 1] = value;
  }
  return a;
}

std::string MakeRoot(const ScratchDir& dir, const std::string& name) {
  const std::string root = dir.sub(name);
  std::filesystem::create_directories(root + "/nvme0");
  std::filesystem::create_directories(root + "/nvme1");
  return root;
}

// step -> the JSON text of its loss in a --log-json file.
std::map<long, std::string> LossTexts(const std::string& path) {
  std::map<long, std::string> out;
  std::istringstream lines(ReadFileBytes(path));
  std::string line;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const auto pos = line.find("\"loss\":");
    out[j["step"].get<long>()] = line.substr(pos, line.find(',', pos) - pos);
  }
  return out;
}

std::vector<std::string> Manifests(const std::string& root) {
  memory::NvmeTierOptions so;
  so.dirs = {root + "/nvme0", root + "/nvme1"};
  so.page_bytes = 16 << 10;
  auto store = memory::NvmeTierSnapshots::Open(so);
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  if (!store.ok()) return {};
  auto names = (*store)->snapshot_names();
  EXPECT_TRUE(names.ok());
  std::vector<std::string> out = names.ok() ? *names : std::vector<std::string>{};
  std::sort(out.begin(), out.end());
  return out;
}

// Finding 1: a kill after a checkpoint's record but before the delete of the manifest it
// retires left that manifest forever (nothing listed it, nothing deleted it), and the store
// filled up. Simulated exactly: a record listing only step 4 over a store holding steps 2 and 4.
TEST(CheckpointResume, SupersededManifestIsCollectedOnResume) {
  ScratchDir dir("ckpt-gc");
  const std::string root = MakeRoot(dir, "run");
  auto first = RunStrata(Args(root, 4), root);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(Manifests(root), (std::vector<std::string>{"step-00000002", "step-00000004"}));
  auto record = scheduler::ReadCheckpointRecord(root + "/ckpt");
  ASSERT_TRUE(record.ok() && record->has_value()) << record.status().to_string();
  scheduler::CheckpointRecord r = **record;
  r.set_checkpoints({r.checkpoints.front()});  // what --keep-checkpoints 1 writes before deleting
  ASSERT_TRUE(scheduler::WriteCheckpointRecord(root + "/ckpt", r).ok());

  // Step 5 writes no checkpoint: before the fix nothing would delete step 2 in this run.
  auto resumed = RunStrata(Args(root, 5, {"--resume", "--keep-checkpoints", "1"}), root);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(Manifests(root), (std::vector<std::string>{"step-00000004"}));
}

// Finding 2: a mistyped --ckpt-dir over an existing store started over (exit 0) and overwrote
// the other run's manifests.
TEST(CheckpointResume, MistypedCkptDirIsRefused) {
  ScratchDir dir("ckpt-typo");
  const std::string root = MakeRoot(dir, "run");
  ASSERT_EQ(RunStrata(Args(root, 4), root).exit_code, 0);
  auto typo = RunStrata(Set(Args(root, 6, {"--resume"}), "--ckpt-dir", root + "/cktp"), root);
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("step-00000004"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("--ckpt-dir"), std::string::npos) << typo.err;
  EXPECT_FALSE(std::filesystem::exists(root + "/cktp/checkpoint.json"));
  EXPECT_EQ(Manifests(root), (std::vector<std::string>{"step-00000002", "step-00000004"}));
}

// Finding 2: the --ckpt-dir of one run with the --nvme-dir of another (same flags) is refused by
// the store id, and neither store changes.
TEST(CheckpointResume, RecordOfAnotherStoreIsRefused) {
  ScratchDir dir("ckpt-other");
  const std::string a = MakeRoot(dir, "a"), b = MakeRoot(dir, "b");
  ASSERT_EQ(RunStrata(Args(a, 4), a).exit_code, 0);
  ASSERT_EQ(RunStrata(Args(b, 2), b).exit_code, 0);
  auto mixed = RunStrata(Set(Args(a, 6, {"--resume"}), "--ckpt-dir", b + "/ckpt"), a);
  EXPECT_EQ(mixed.exit_code, 2) << mixed.err;
  EXPECT_NE(mixed.err.find("belongs to NVMe store"), std::string::npos) << mixed.err;
  EXPECT_EQ(Manifests(a), (std::vector<std::string>{"step-00000002", "step-00000004"}));
  EXPECT_EQ(Manifests(b), (std::vector<std::string>{"step-00000002"}));
}

// Finding 2: --resume with another --lr or other --data was accepted; now refused naming the
// flag and both values.
TEST(CheckpointResume, ChangedLrOrDataIsRefusedNamingTheFlag) {
  ScratchDir dir("ckpt-flags");
  const std::string root = MakeRoot(dir, "run");
  const std::string data = root + "/data.txt";
  std::string text;
  for (int i = 0; i < 400; ++i) {
    text += "the quick brown fox jumps over the lazy dog " + std::to_string(i) + "\n";
  }
  std::ofstream(data) << text;
  ASSERT_EQ(RunStrata(Args(root, 2, {"--data", data}), root).exit_code, 0);

  auto lr = RunStrata(Set(Args(root, 4, {"--data", data, "--resume"}), "--lr", "0.002"), root);
  EXPECT_EQ(lr.exit_code, 2) << lr.err;
  EXPECT_NE(lr.err.find("--lr 0.002 differs from the checkpoint's 0.001"), std::string::npos)
      << lr.err;

  std::ofstream(data, std::ios::app) << "one more line changes the data\n";
  auto changed = RunStrata(Args(root, 4, {"--data", data, "--resume"}), root);
  EXPECT_EQ(changed.exit_code, 2) << changed.err;
  EXPECT_NE(changed.err.find("--data "), std::string::npos) << changed.err;
  EXPECT_NE(changed.err.find("differs from the checkpoint's"), std::string::npos) << changed.err;
}

// Finding 2: a hand-edited step in checkpoint.json was trusted.
TEST(CheckpointResume, HandEditedStepIsRefusedByTheChecksum) {
  ScratchDir dir("ckpt-edit");
  const std::string root = MakeRoot(dir, "run");
  ASSERT_EQ(RunStrata(Args(root, 4), root).exit_code, 0);
  const std::string path = root + "/ckpt/checkpoint.json";
  std::string text = ReadFileBytes(path);
  const auto pos = text.find("\"step\": 4");
  ASSERT_NE(pos, std::string::npos) << text;
  text.replace(pos, 9, "\"step\": 2");
  std::ofstream(path, std::ios::trunc) << text;
  auto r = RunStrata(Args(root, 6, {"--resume"}), root);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(path + ": checksum mismatch"), std::string::npos) << r.err;
}

// Finding 2: only the newest checkpoint was kept, so a rotted one left nothing. Now the rot is
// found before training, the message names the older checkpoint, and --resume-from it gives
// exactly the losses of the uninterrupted run.
TEST(CheckpointResume, RottedNewestCheckpointNamesTheOlderOneWhichResumesExactly) {
  ScratchDir dir("ckpt-rot");
  const std::string ref = MakeRoot(dir, "ref");
  auto whole = RunStrata(Args(ref, 6, {"--log-json", ref + "/log.jsonl"}), ref);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::map<long, std::string> want = LossTexts(ref + "/log.jsonl");

  const std::string root = MakeRoot(dir, "run");
  ASSERT_EQ(RunStrata(Args(root, 4), root).exit_code, 0);
  {  // Flip a byte of a page version that step 4 holds and step 2 does not share.
    storage::PageStoreOptions so;
    so.dirs = {root + "/nvme0", root + "/nvme1"};
    so.page_bytes = 16 << 10;
    auto store = storage::PageStore::Open(so);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    auto newest = (*store)->load_manifest("step-00000004");
    auto older = (*store)->load_manifest("step-00000002");
    ASSERT_TRUE(newest.ok() && older.ok());
    std::map<uint64_t, storage::PageEntry> old_entries;
    for (const auto& r : *older) old_entries[r.page] = r.entry;
    auto it = std::find_if(newest->begin(), newest->end(), [&](const storage::PageRecord& r) {
      return !(old_entries[r.page] == r.entry);
    });
    ASSERT_NE(it, newest->end());
    const std::string file = (*store)->slot_path(it->entry.file);
    const uint64_t offset = (*store)->slot_offset(it->entry) + 100;
    store->reset();
    ASSERT_TRUE(storage::FlipByteOnDisk(file, offset).ok());
  }
  auto rotted = RunStrata(Args(root, 6, {"--resume"}), root);
  EXPECT_EQ(rotted.exit_code, 1) << rotted.err;
  EXPECT_NE(rotted.err.find("checkpoint step 4"), std::string::npos) << rotted.err;
  EXPECT_NE(rotted.err.find("checksum mismatch"), std::string::npos) << rotted.err;
  EXPECT_NE(rotted.err.find("--resume-from 2 --discard-newer"), std::string::npos) << rotted.err;

  // The advice, followed (without --discard-newer, --resume-from 2 is refused: step 4 is newer).
  auto from2 = RunStrata(
      Args(root, 6, {"--resume-from", "2", "--discard-newer", "--log-json", root + "/log.jsonl"}),
      root);
  ASSERT_EQ(from2.exit_code, 0) << from2.err;
  const std::map<long, std::string> got = LossTexts(root + "/log.jsonl");
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got.begin()->first, 3);
  for (const auto& [step, loss] : got) EXPECT_EQ(loss, want.at(step)) << "step " << step;
  // The damaged step 4 is another future now: the record and the store dropped it.
  EXPECT_EQ(Manifests(root), (std::vector<std::string>{"step-00000004", "step-00000006"}));
}

// `strata ckpt`: list shows each kept checkpoint, verify finds a flipped byte (naming the file
// and offset), prune keeps the newest and says what it freed.
TEST(CheckpointResume, CkptListVerifyPrune) {
  ScratchDir dir("ckpt-cmd");
  const std::string root = MakeRoot(dir, "run");
  ASSERT_EQ(RunStrata(Args(root, 6), root).exit_code, 0);
  auto list = RunStrata({"ckpt", "list", root + "/ckpt"}, root);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("step 6  step-00000006  "), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("step 4  step-00000004  "), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("--lr 0.001"), std::string::npos) << list.out;
  auto json = RunStrata({"ckpt", "list", root + "/ckpt", "--json"}, root);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["checkpoints"].size(), 2u);
  EXPECT_EQ(j["checkpoints"][0]["step"], 6);
  EXPECT_GT(j["checkpoints"][0]["bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(RunStrata({"ckpt", "verify", root + "/ckpt"}, root).exit_code, 0);

  auto prune = RunStrata({"ckpt", "prune", root + "/ckpt", "--keep", "1"}, root);
  ASSERT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_NE(prune.out.find("dropped step(s) 4; freed "), std::string::npos) << prune.out;
  EXPECT_EQ(Manifests(root), (std::vector<std::string>{"step-00000006"}));

  std::string file;
  uint64_t offset = 0;
  {
    storage::PageStoreOptions so;
    so.dirs = {root + "/nvme0", root + "/nvme1"};
    so.page_bytes = 16 << 10;
    auto store = storage::PageStore::Open(so);
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    auto newest = (*store)->load_manifest("step-00000006");
    ASSERT_TRUE(newest.ok() && !newest->empty());
    file = (*store)->slot_path(newest->front().entry.file);
    offset = (*store)->slot_offset(newest->front().entry);
  }
  ASSERT_TRUE(storage::FlipByteOnDisk(file, offset + 7).ok());
  auto verify = RunStrata({"ckpt", "verify", root + "/ckpt", "--step", "6"}, root);
  EXPECT_EQ(verify.exit_code, 1) << verify.err;
  EXPECT_NE(verify.err.find("checksum mismatch at " + file + " offset"), std::string::npos)
      << verify.err;
}

}  // namespace
}  // namespace strata::testing
