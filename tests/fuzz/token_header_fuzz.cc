// Fuzz target token_header (see fuzz_targets.h).
#include <cstdint>
#include <cstring>
#include <string>

#include "core/data/token_dataset.h"
#include "core/util/check.h"
#include "tests/fuzz/fuzz_targets.h"

namespace strata::fuzz {
namespace {

bool CheckTokenFile(std::string_view bytes, int vocab_size) {
  Result<TokenDataset> ds = TokenDataset::FromBytes(bytes, "fuzz.bin", vocab_size);
  if (!ds.ok()) return false;
  STRATA_CHECK(ds->format() == TokenDataset::Format::kTokenFile);
  // Re-encode: the header as given (its unused words are not kept), then the tokens, 2 or 4
  // little-endian bytes each.
  std::string again(bytes.substr(0, kTokenFileHeaderBytes));
  for (int64_t i = 0; i < ds->num_tokens(); ++i) {
    const uint32_t t = ds->token(i);
    STRATA_CHECK_LT(t, static_cast<uint32_t>(vocab_size));
    for (int b = 0; b < ds->token_bytes(); ++b) again.push_back(static_cast<char>(t >> (8 * b)));
  }
  STRATA_CHECK(again == bytes) << "a token file does not re-encode to the same bytes";
  return true;
}

void CheckText(std::string_view bytes, int vocab_size) {
  Result<TokenDataset> ds = TokenDataset::FromBytes(bytes, "fuzz.txt", vocab_size);
  if (!ds.ok() || ds->format() != TokenDataset::Format::kText) return;
  STRATA_CHECK_EQ(size_t(ds->num_tokens()), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    STRATA_CHECK_EQ(ds->token(int64_t(i)), static_cast<unsigned char>(bytes[i]));
  }
}

}  // namespace

bool FuzzTokenHeader(std::string_view bytes) {
  // Accepted at its format's usual vocabulary: GPT-2's, or LLaMA 3's for a wide file.
  int32_t magic = 0;  // little-endian on every machine Strata builds for
  if (bytes.size() >= 4) std::memcpy(&magic, bytes.data(), 4);
  const bool wide = magic == kWideTokenFileMagic;
  const bool accepted = CheckTokenFile(bytes, wide ? 128256 : 50257);
  // The byte vocabulary (tokens >= 256 rejected), LLaMA 3's, and the edges of the range.
  for (int vocab_size : {256, 1, 65536, 128256, 0, kMaxDataVocab, kMaxDataVocab + 1}) {
    CheckTokenFile(bytes, vocab_size);
  }
  CheckText(bytes, 256);
  return accepted;
}

}  // namespace strata::fuzz
