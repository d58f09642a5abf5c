#include "core/data/builtin_corpus.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

namespace strata {
namespace {

TEST(BuiltinCorpus, IsDeterministic) {
  EXPECT_EQ(GenerateBuiltinCorpus(100000), GenerateBuiltinCorpus(100000));
  // A prefix of a longer corpus is the shorter corpus: the size only cuts.
  EXPECT_EQ(GenerateBuiltinCorpus(5000), GenerateBuiltinCorpus(100000).substr(0, 5000));
}

TEST(BuiltinCorpus, SeedChangesText) {
  EXPECT_NE(GenerateBuiltinCorpus(10000, 1), GenerateBuiltinCorpus(10000, 2));
}

TEST(BuiltinCorpus, HasRequestedSize) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{777}, size_t{65536}, kDefaultBuiltinCorpusBytes}) {
    EXPECT_EQ(GenerateBuiltinCorpus(n).size(), n);
  }
  EXPECT_EQ(GenerateBuiltinCorpus().size(), kDefaultBuiltinCorpusBytes);
}

TEST(BuiltinCorpus, OnlyPrintableAsciiAndNewline) {
  const std::string text = GenerateBuiltinCorpus();
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    ASSERT_TRUE(c == '\n' || (c >= 0x20 && c <= 0x7e))
        << "byte " << static_cast<int>(c) << " at offset " << i;
  }
}

TEST(BuiltinCorpus, LooksLikeVariedEnglish) {
  const std::string text = GenerateBuiltinCorpus(200000);
  EXPECT_NE(text.find("Once upon a time"), std::string::npos);
  // Many distinct stories, many distinct words and lines: not one template repeated.
  std::set<std::string> words, lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.insert(line);
    std::istringstream ws(line);
    std::string w;
    while (ws >> w) words.insert(w);
  }
  EXPECT_GT(words.size(), 250u);
  EXPECT_GT(lines.size(), 1000u);
  // Letters and spaces dominate, like prose.
  size_t letters = 0, spaces = 0;
  for (char c : text) {
    letters += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    spaces += c == ' ';
  }
  EXPECT_GT(letters, text.size() * 7 / 10);
  EXPECT_GT(spaces, text.size() / 10);
}

TEST(BuiltinCorpus, DatasetWrapsTheText) {
  auto ds = BuiltinCorpusDataset(4096);
  EXPECT_EQ(ds.num_tokens(), 4096);
  EXPECT_EQ(ds.name(), kBuiltinCorpusName);
  const std::string text = GenerateBuiltinCorpus(4096);
  for (size_t i = 0; i < text.size(); ++i) {
    ASSERT_EQ(ds.token(int64_t(i)), static_cast<unsigned char>(text[i]));
  }
  EXPECT_TRUE(ds.check_window(1024).ok());
}

}  // namespace
}  // namespace strata
