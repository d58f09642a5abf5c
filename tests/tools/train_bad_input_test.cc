// Bad input to `strata train`: each case gives one clear line naming the problem, exit code 2
// for usage errors (flags or data that cannot work) and 1 for runtime errors (files the OS or
// the format rejects), and never a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/tools/run_strata.h"

namespace strata::testing {
namespace {

class TrainBadInput : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  void WriteBytes(const std::string& name, const std::string& bytes) {
    std::ofstream(Path(name), std::ios::binary) << bytes;
  }
  void WriteTokenFile(const std::string& name, int32_t magic, int32_t count,
                      const std::vector<uint16_t>& tokens) {
    std::vector<int32_t> header(256, 0);
    header[0] = magic;
    header[1] = 1;
    header[2] = count;
    std::ofstream f(Path(name), std::ios::binary);
    f.write(reinterpret_cast<const char*>(header.data()), header.size() * 4);
    f.write(reinterpret_cast<const char*>(tokens.data()), tokens.size() * 2);
  }

  RunResult Train(std::vector<std::string> extra, const std::string& model = "tiny") {
    std::vector<std::string> args = {"train", "--model", model, "--steps", "1", "--batch", "2",
                                     "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunStrata(args, dir_);
  }


  ScratchDir scratch_{"badinput"};
  const std::string dir_ = scratch_.path();
};

TEST_F(TrainBadInput, MissingDataFile) {
  auto r = Train({"--data", Path("nope.txt")});
  ExpectOneClearLine(r, {"nope.txt"});
  EXPECT_EQ(r.exit_code, 1);
}

TEST_F(TrainBadInput, EmptyDataFile) {
  WriteBytes("empty.txt", "");
  auto r = Train({"--data", Path("empty.txt")});
  ExpectOneClearLine(r, {"empty.txt", "empty"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(TrainBadInput, DataShorterThanOneWindow) {
  WriteBytes("short.txt", "hello world");
  auto r = Train({"--data", Path("short.txt"), "--seq", "32"});
  ExpectOneClearLine(r, {"short.txt", "--seq"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(TrainBadInput, TokenFileWithBadMagic) {
  WriteTokenFile("bad.bin", 12345, 100, std::vector<uint16_t>(100, 1));
  auto r = Train({"--data", Path("bad.bin")});
  ExpectOneClearLine(r, {"bad.bin", "magic"});
  EXPECT_EQ(r.exit_code, 1);
}

TEST_F(TrainBadInput, TruncatedTokenFile) {
  WriteTokenFile("trunc.bin", 20240520, 1000, std::vector<uint16_t>(100, 1));
  auto r = Train({"--data", Path("trunc.bin")});
  ExpectOneClearLine(r, {"trunc.bin"});
  EXPECT_EQ(r.exit_code, 1);
}

TEST_F(TrainBadInput, TokenIdAboveVocab) {
  std::vector<uint16_t> tokens(500, 3);
  tokens[123] = 300;
  WriteTokenFile("vocab.bin", 20240520, 500, tokens);
  auto r = Train({"--data", Path("vocab.bin")});
  ExpectOneClearLine(r, {"vocab.bin", "300"});
  EXPECT_EQ(r.exit_code, 1);
}

TEST_F(TrainBadInput, EmbeddingNotDivisibleByHeads) {
  auto r = Train({"--n-embd", "30", "--n-head", "4"});
  ExpectOneClearLine(r, {"--n-embd", "--n-head"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(TrainBadInput, SeqAboveContext) {
  auto r = Train({"--seq", "65"});
  ExpectOneClearLine(r, {"--seq", "64"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(TrainBadInput, BadSize) {
  auto r = Train({"--gpu-mem", "12X"});
  ExpectOneClearLine(r, {"--gpu-mem", "12X"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(TrainBadInput, UnreadableInit) {
  WriteBytes("garbage.safetensors", "this is not a safetensors file at all");
  auto r = Train({"--init", Path("garbage.safetensors")});
  ExpectOneClearLine(r, {"garbage.safetensors"});
  EXPECT_EQ(r.exit_code, 1);
  auto missing = Train({"--init", Path("missing.safetensors")});
  ExpectOneClearLine(missing, {"missing.safetensors"});
  EXPECT_EQ(missing.exit_code, 1);
}

// Issue 12, finding 6: every numeric flag has a range, and a sentinel that means "default" is
// refused when given explicitly; the error names the flag and the exit code is 2.
TEST_F(TrainBadInput, EveryNumericFlagOutOfRange) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--grad-clip", "-1"},     {"--beta1", "2"},         {"--beta1", "1"},
      {"--beta2", "-1"},         {"--eps", "0"},           {"--min-lr", "-1"},
      {"--min-lr", "0.5"},       {"--lr", "0"},            {"--lr", "nan"},
      {"--weight-decay", "-1"},  {"--batch", "0"},         {"--steps", "-1"},
      {"--warmup", "-1"},        {"--threads", "-1"},      {"--micro-batch", "-1"},
      {"--ckpt-every", "-1"},    {"--sim-link-gbps", "-1"}, {"--gpu-mem", "0"},
      {"--host-mem", "0"},       {"--nvme-mem", "0"},      {"--seq", "0"},
      {"--page-size", "0"},      {"--batch", "1000000"},   {"--threads", "100000"}};
  for (const auto& [flag, value] : cases) {
    SCOPED_TRACE(flag + " " + value);
    auto r = Train({flag, value});
    ExpectOneClearLine(r, {flag});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.find("step "), std::string::npos) << "trained: " << r.err;
  }
  auto level = Train({"--log-level", "foo"});
  ExpectOneClearLine(level, {"--log-level", "foo"});
  EXPECT_EQ(level.exit_code, 2);
}

// Issue 12, finding 4: a shape far beyond any machine is refused by its limits before anything
// is sized from it: exit 2 naming the flag, in well under a second's work, in 4 GiB of address
// space (before the fix, --n-layer 100000000 built a layout of 10^8 blocks and aborted).
TEST_F(TrainBadInput, HugeShapeRefusedBeforeAllocating) {
  const std::string cap = "ulimit -v 4194304;";  // 4 GiB
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--n-layer", "100000000"}, {"--block-size", "2147483647"}, {"--n-embd", "1048576"}}) {
    SCOPED_TRACE(flag + " " + value);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> args = {"train", "--model", "tiny", "--steps", "1",
                                     "--threads", "1", flag, value};
    if (flag == "--n-embd") args.insert(args.end(), {"--n-head", "1"});
    auto r = RunStrata(args, dir_, cap);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ExpectOneClearLine(r, {flag, value});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_LT(s, 2.0) << "took " << s << " s";
  }
}

// Issue 12, finding 4: a configuration that needs more memory than this process may use is
// refused with the numbers before the sim device's arena is mapped. The address-space cap makes
// the limit the same on every machine: gpt2-xl needs ~38 GiB in memory (the fix's message), and
// before the fix the in-memory arena's mmap failed (exit 1) or, uncapped, the OOM killer came.
TEST_F(TrainBadInput, ModelAboveMachineMemoryRefusedWithNumbers) {
  const std::string cap = "ulimit -v 8388608;";  // 8 GiB
  auto mem =
      RunStrata({"train", "--model", "gpt2-xl", "--steps", "1", "--threads", "1"}, dir_, cap);
  ExpectOneClearLine(mem,
                     {"in memory", "needs", "this process can use", "--gpu-mem", "--nvme-dir"});
  EXPECT_EQ(mem.exit_code, 2) << mem.err;
  // The paged engine with its default budgets (everything resident) is refused the same way.
  auto paged = RunStrata({"train", "--model", "gpt2-xl", "--steps", "1", "--threads", "1",
                          "--engine", "paged", "--log-level", "warn"},
                         dir_, cap);
  ExpectOneClearLine(paged, {"paged engine", "needs", "sim device", "host pool", "--host-mem"});
  EXPECT_EQ(paged.exit_code, 2) << paged.err;
}

// Issue 12, finding 4: --init's __metadata__ cannot size anything beyond the file's own
// tensors. A 2-layer file whose metadata claims more layers is refused before the model is
// built (before the fix: n_layer "100000" aborted on bad_alloc; "4000" built the model first).
TEST_F(TrainBadInput, InitMetadataLargerThanItsTensors) {
  auto exported = RunStrata({"train", "--model", "tiny", "--steps", "0", "--export",
                             Path("w.safetensors")},
                            dir_);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const std::string bytes = ReadWholeFile(Path("w.safetensors"));
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  const std::string header = bytes.substr(8, header_len), data = bytes.substr(8 + header_len);
  for (const std::string layers : {"100000", "4000"}) {
    SCOPED_TRACE(layers);
    std::string lying = header;
    const std::string from = "\"n_layer\":\"2\"";
    ASSERT_NE(lying.find(from), std::string::npos) << header;
    lying.replace(lying.find(from), from.size(), "\"n_layer\":\"" + layers + "\"");
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i) file[i] = char((lying.size() >> (8 * i)) & 0xff);
    WriteBytes("lying.safetensors", file + lying + data);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = RunStrata({"train", "--init", Path("lying.safetensors"), "--steps", "1",
                        "--batch", "2", "--threads", "1"},
                       dir_, "ulimit -v 4194304;");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ExpectOneClearLine(r, {"lying.safetensors", layers});
    EXPECT_EQ(r.exit_code, 1) << r.err;  // a damaged file: a runtime error, like any corruption
    EXPECT_LT(s, 2.0);
  }
}

// Issue 29 item 20: `strata frobnicate` said "A subcommand is required", and a usage error of
// `ckpt prune` pointed at the top-level help.
TEST_F(TrainBadInput, UsageErrorsNameTheCommandAndItsHelp) {
  auto r = RunStrata({"frobnicate"}, dir_);
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneClearLine(r, {"unknown command 'frobnicate' for 'strata'", "train, bench, ckpt, stress"});
  EXPECT_NE(r.err.find("run 'strata --help' for usage"), std::string::npos) << r.err;
  r = RunStrata({"ckpt", "frob"}, dir_);
  ExpectOneClearLine(r, {"unknown command 'frob' for 'strata ckpt'", "list, verify, prune"});
  r = RunStrata({"ckpt", "prune", Path("ckpt")}, dir_);
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneClearLine(r, {"--keep"});
  EXPECT_NE(r.err.find("run 'strata ckpt prune --help' for usage"), std::string::npos) << r.err;
  r = Train({"--no-such-flag"});
  EXPECT_NE(r.err.find("run 'strata train --help' for usage"), std::string::npos) << r.err;
}

// Item 20: `--model tiny --init w.safetensors` (only a preset, no shape flag) advised dropping
// "the shape flags"; and --init printed nothing about what it loaded.
TEST_F(TrainBadInput, InitSaysWhatItLoadedAndWhichFlagsToDrop) {
  auto made = RunStrata({"train", "--model", "small", "--n-layer", "1", "--steps", "0",
                         "--export", Path("w.safetensors")},
                        dir_);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto loaded = RunStrata({"train", "--init", Path("w.safetensors"), "--steps", "1", "--batch",
                           "2", "--seq", "32", "--threads", "1"},
                          dir_);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_NE(loaded.err.find("--init: loaded 16 tensors"), std::string::npos) << loaded.err;
  EXPECT_NE(loaded.err.find("from " + Path("w.safetensors")), std::string::npos) << loaded.err;
  auto r = Train({"--init", Path("w.safetensors")});
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneClearLine(r, {"drop --model and the shape flags"});
}

TEST_F(TrainBadInput, UnknownFlagAndModel) {
  auto r = Train({"--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  auto m = Train({}, "gpt5");
  ExpectOneClearLine(m, {"gpt5"});
  EXPECT_EQ(m.exit_code, 2);
}

}  // namespace
}  // namespace strata::testing
