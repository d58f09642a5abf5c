// Bad input to `strata train`: each case gives one clear line naming the problem, exit code 2
// for usage errors (flags or data that cannot work) and 1 for runtime errors (files the OS or
// the format rejects), and never a crash.
#include <gtest/gtest.h>

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

  // One line on stderr that starts with "strata: " and contains every fragment.
  static void ExpectOneClearLine(const RunResult& r, const std::vector<std::string>& fragments) {
    ASSERT_NE(r.exit_code, -1) << "crashed: " << r.err;
    EXPECT_EQ(r.err.find("STRATA_CHECK"), std::string::npos) << r.err;
    const std::string first = r.err.substr(0, r.err.find('\n'));
    EXPECT_EQ(first.rfind("strata: ", 0), 0u) << r.err;
    for (const auto& frag : fragments) {
      EXPECT_NE(first.find(frag), std::string::npos) << "missing '" << frag << "' in: " << first;
    }
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

TEST_F(TrainBadInput, UnknownFlagAndModel) {
  auto r = Train({"--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  auto m = Train({}, "gpt5");
  ExpectOneClearLine(m, {"gpt5"});
  EXPECT_EQ(m.exit_code, 2);
}

}  // namespace
}  // namespace strata::testing
