// Fuzz target token_header (see fuzz_targets.h).
#include <cstdint>
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
  // Re-encode: the header as given (its unused words are not kept), then the tokens.
  std::string again(bytes.substr(0, kTokenFileHeaderBytes));
  for (uint16_t t : ds->tokens()) {
    STRATA_CHECK_LT(int{t}, vocab_size);
    again.push_back(static_cast<char>(t & 0xff));
    again.push_back(static_cast<char>(t >> 8));
  }
  STRATA_CHECK(again == bytes) << "a token file does not re-encode to the same bytes";
  return true;
}

void CheckText(std::string_view bytes, int vocab_size) {
  Result<TokenDataset> ds = TokenDataset::FromBytes(bytes, "fuzz.txt", vocab_size);
  if (!ds.ok() || ds->format() != TokenDataset::Format::kText) return;
  STRATA_CHECK_EQ(ds->tokens().size(), bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    STRATA_CHECK_EQ(ds->tokens()[i], static_cast<unsigned char>(bytes[i]));
  }
}

}  // namespace

bool FuzzTokenHeader(std::string_view bytes) {
  const bool accepted = CheckTokenFile(bytes, 50257);
  // The byte vocabulary (tokens >= 256 rejected), and the edges of the range.
  for (int vocab_size : {256, 1, 65536, 0, 65537}) CheckTokenFile(bytes, vocab_size);
  CheckText(bytes, 256);
  return accepted;
}

}  // namespace strata::fuzz
