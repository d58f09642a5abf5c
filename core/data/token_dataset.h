// TokenDataset: a sequence of token ids held in memory, and the deterministic batches cut from it.
//
// Formats understood by Open():
// - llm.c / nanoGPT token files: a header of 256 little-endian int32 (magic 20240520, version 1,
//   token count, the rest unused) followed by `count` little-endian uint16 tokens. Every token
//   must be < vocab_size.
// - wide token files, for vocabularies above 65,536 (LLaMA 3's 128,256): llm.c's LLaMA 3 format,
//   the same header with magic 20240801 and version 7, followed by `count` little-endian uint32
//   tokens. A token must be < vocab_size (at most kMaxDataVocab).
// - byte-level text: any other file (that is not named *.bin) is read as bytes, one token per
//   byte, so it needs vocab_size >= 256.
// A *.bin file without the magic is rejected as Corruption rather than silently read as text:
// it is almost always a token file written for another tool or a damaged one.
//
// Note [Batch windows]
// Batches: for step k (0-based) and row i of a batch of B rows of T
// tokens, with N tokens in the dataset,
//     s = ((k * B + i) * T) mod (N - T - 1)
//     x[i] = tokens[s, s + T),  y[i] = tokens[s + 1, s + T + 1)
// computed in 64-bit arithmetic. The windows walk the data in order and wrap around; the last
// token is never a target. This needs N >= T + 2 (check_window()). The formula is part of the
// contract: tests/reference reproduces it in PyTorch.
//
// Thread safety: a TokenDataset is immutable after construction; const methods may be called
// from any number of threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace strata {

// Magic number and version of the llm.c / nanoGPT token file format (uint16 tokens).
inline constexpr int32_t kTokenFileMagic = 20240520;
inline constexpr int32_t kTokenFileVersion = 1;
// Magic number and version of llm.c's wide token file (uint32 tokens; its LLaMA 3 files).
inline constexpr int32_t kWideTokenFileMagic = 20240801;
inline constexpr int32_t kWideTokenFileVersion = 7;
// The largest vocabulary a TokenDataset accepts: token ids are int32 in a batch.
inline constexpr int kMaxDataVocab = 1 << 30;
// The header is 256 int32 values.
inline constexpr int64_t kTokenFileHeaderBytes = 256 * 4;
// Byte-level text has one token per byte value.
inline constexpr int kByteVocabSize = 256;

class TokenDataset {
 public:
  enum class Format { kTokenFile, kText, kInMemory };

  // Reads the whole file at `path` into memory (see the formats above). `vocab_size` is the
  // model's vocabulary; tokens are checked against it once here, so batch() never sees an
  // out-of-range id. Errors:
  // - NotFound: the file does not exist;
  // - InvalidArgument: vocab_size <= 0, the path is a directory, the file is empty or holds no
  //   tokens, a text file with vocab_size < 256;
  // - Corruption: a bad magic in a *.bin file, an unsupported version, a token count that
  //   does not match the file size (the message gives expected and actual bytes);
  // - OutOfRange: a token >= vocab_size (the message names the token index and value);
  // - IoError and friends from the OS (Status::FromErrno).
  static Result<TokenDataset> Open(const std::string& path, int vocab_size);

  // What Open() does with the file's bytes once read (tests/fuzz/ fuzzes it): `name` stands for
  // the path, both in messages and for the *.bin rule. The same errors as Open(), less the OS's.
  // Reads nothing outside `bytes`; allocates tokens only for a count the bytes hold.
  static Result<TokenDataset> FromBytes(std::string_view bytes, const std::string& name,
                                        int vocab_size);

  // Built-in data: wraps tokens the caller already has. `name` stands for a file name in
  // messages (e.g. "builtin corpus"). The caller guarantees the tokens fit its vocabulary.
  static TokenDataset FromTokens(std::vector<uint16_t> tokens, std::string name);
  static TokenDataset FromTokens(std::vector<uint32_t> tokens, std::string name);
  // Byte-level text held in memory: one token per byte (vocab 256).
  static TokenDataset FromText(std::string_view text, std::string name);

  // OK when batches of sequence length T can be cut (N >= T + 2); otherwise InvalidArgument
  // naming the data, N and T and suggesting a smaller --seq. T must be > 0.
  [[nodiscard]] Status check_window(int T) const;

  // Fills x and y, each B*T int32 in row-major [B][T] order, with batch `step` (0-based) as
  // in Note [Batch windows]. Requires step >= 0, B > 0 and check_window(T) OK (checked).
  void batch(long step, int B, int T, int32_t* x, int32_t* y) const;

  // Start of row `row` of batch `step`: the s of Note [Batch windows].
  int64_t window_start(long step, int B, int T, int row) const;

  int64_t num_tokens() const {
    return static_cast<int64_t>(wide_ ? tokens32_.size() : tokens16_.size());
  }
  // Token i, 0 <= i < num_tokens().
  uint32_t token(int64_t i) const {
    return wide_ ? tokens32_[static_cast<size_t>(i)] : tokens16_[static_cast<size_t>(i)];
  }
  // Bytes per token as held: 2, or 4 for a wide token file (uint16 data is never widened, so a
  // large GPT-2 dataset keeps its size in memory).
  int token_bytes() const { return wide_ ? 4 : 2; }
  // The file path, or the name given to FromTokens/FromText.
  const std::string& name() const { return name_; }
  Format format() const { return format_; }

 private:
  TokenDataset(std::vector<uint16_t> tokens, std::string name, Format format)
      : tokens16_(std::move(tokens)), name_(std::move(name)), format_(format) {}
  TokenDataset(std::vector<uint32_t> tokens, std::string name, Format format)
      : tokens32_(std::move(tokens)), wide_(true), name_(std::move(name)), format_(format) {}

  template <typename Token>
  void copy_batch(const std::vector<Token>& tokens, long step, int B, int T, int32_t* x,
                  int32_t* y) const;

  std::vector<uint16_t> tokens16_;
  std::vector<uint32_t> tokens32_;
  bool wide_ = false;
  std::string name_;
  Format format_;
};

}  // namespace strata
