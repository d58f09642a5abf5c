#include "core/data/token_dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/util/check.h"
#include "core/util/option.h"

namespace strata {
namespace {

// Closes the fd on every return path.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

// Reads the whole regular file at `path`. Short reads and EINTR are retried; a file that
// shrinks while being read is reported with the offset where it ended.
Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return AtFault(Option::kData,
                     Status::NotFound("data file " + path + " does not exist; check " +
                                      Mention(Option::kData) + " (or use " +
                                      Mention(Option::kData) + " builtin)"));
    }
    return Status::FromErrno(err, "open data file " + path);
  }
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat data file " + path);
  if (S_ISDIR(st.st_mode)) {
    return AtFault(
        Option::kData,
        Status::InvalidArgument("data path " + path + " is a directory; " + Mention(Option::kData) +
                                " needs a token file or a text file"));
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::FromErrno(errno,
                               "read data file " + path + " at offset " + std::to_string(done));
    }
    if (n == 0) {
      return Status::IoError("data file " + path + " ended at offset " + std::to_string(done) +
                             " while reading " + std::to_string(bytes.size()) +
                             " bytes; was it modified while Strata read it?");
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

int32_t LoadInt32Le(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  uint32_t v =
      uint32_t{u[0]} | (uint32_t{u[1]} << 8) | (uint32_t{u[2]} << 16) | (uint32_t{u[3]} << 24);
  return static_cast<int32_t>(v);
}

uint16_t LoadUint16Le(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(u[0] | (u[1] << 8));
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint32_t LoadUint32Le(const char* p) { return static_cast<uint32_t>(LoadInt32Le(p)); }

// What a token file's magic says about its tokens.
struct TokenFileKind {
  int32_t version;
  int token_bytes;
  const char* what;  // for the version message
};

TokenFileKind KindOf(int32_t magic) {
  return magic == kWideTokenFileMagic
             ? TokenFileKind{kWideTokenFileVersion, 4, "uint32 tokens, llm.c's LLaMA 3 files"}
             : TokenFileKind{kTokenFileVersion, 2, "uint16 tokens, GPT-2 style llm.c/nanoGPT files"};
}

// The header's token count, once the version and the file's size agree with it.
Result<int64_t> CheckTokenHeader(const std::string& path, std::string_view bytes,
                                 const TokenFileKind& kind) {
  const int64_t file_bytes = static_cast<int64_t>(bytes.size());
  if (file_bytes < kTokenFileHeaderBytes) {
    return Status::Corruption("token file " + path + " is truncated: its header needs " +
                              std::to_string(kTokenFileHeaderBytes) + " bytes but the file has " +
                              std::to_string(file_bytes) + "; regenerate it");
  }
  const int32_t version = LoadInt32Le(bytes.data() + 4);
  const int32_t count = LoadInt32Le(bytes.data() + 8);
  if (version != kind.version) {
    return Status::Corruption("token file " + path + " has version " + std::to_string(version) +
                              " at offset 4; Strata reads version " +
                              std::to_string(kind.version) + " (" + kind.what + ")");
  }
  if (count < 0) {
    return Status::Corruption("token file " + path + " has a negative token count (" +
                              std::to_string(count) + ") at offset 8; regenerate it");
  }
  const int64_t expected_bytes = kTokenFileHeaderBytes + kind.token_bytes * int64_t{count};
  if (file_bytes < expected_bytes) {
    return Status::Corruption("token file " + path + " is truncated: its header promises " +
                              std::to_string(count) + " tokens, i.e. " +
                              std::to_string(expected_bytes) + " bytes, but the file has " +
                              std::to_string(file_bytes) + " bytes; regenerate or re-copy it");
  }
  if (file_bytes > expected_bytes) {
    return Status::Corruption(
        "token file " + path + " has " + std::to_string(file_bytes - expected_bytes) +
        " bytes after its last token: its header promises " + std::to_string(count) +
        " tokens, i.e. " + std::to_string(expected_bytes) + " bytes, but the file has " +
        std::to_string(file_bytes) + " bytes; regenerate it");
  }
  if (count == 0) {
    return AtFault(Option::kData,
                   Status::InvalidArgument("token file " + path + " holds no tokens; give " +
                                           Mention(Option::kData) + " a file with training data"),
                   {{"tokens", 0}});
  }
  return int64_t{count};
}

// The tokens after the header, each checked against the vocabulary.
template <typename Token>
Result<std::vector<Token>> DecodeTokens(const std::string& path, std::string_view bytes,
                                        int64_t count, int vocab_size) {
  std::vector<Token> tokens(static_cast<size_t>(count));
  const char* p = bytes.data() + kTokenFileHeaderBytes;
  for (int64_t i = 0; i < count; ++i) {
    const char* at = p + int64_t{sizeof(Token)} * i;
    const Token t = sizeof(Token) == 2 ? LoadUint16Le(at) : LoadUint32Le(at);
    if (t >= static_cast<uint32_t>(vocab_size)) {
      return AtFault(
          Option::kVocab,
          Status::OutOfRange(
              "token file " + path + ": token " + std::to_string(i) + " (byte offset " +
              std::to_string(kTokenFileHeaderBytes + int64_t{sizeof(Token)} * i) + ") is " +
              std::to_string(t) + ", not below the vocabulary size " +
              std::to_string(vocab_size) + "; pass the tokenizer's vocabulary size with " +
              Mention(Option::kVocab)),
          {{"got", vocab_size}, {"token", double(t)}, {"index", i}});
    }
    tokens[static_cast<size_t>(i)] = t;
  }
  return tokens;
}

std::vector<uint16_t> BytesToTokens(std::string_view text) {
  std::vector<uint16_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

Status CheckVocabSize(int vocab_size, const std::string& path) {
  if (vocab_size <= 0 || vocab_size > kMaxDataVocab) {
    return AtFault(Option::kVocab,
                   Status::InvalidArgument("vocabulary size " + std::to_string(vocab_size) +
                                           " for data file " + path + " is out of range; " +
                                           Mention(Option::kVocab) + " must be in 1.." +
                                           std::to_string(kMaxDataVocab)),
                   {{"got", vocab_size}, {"min", 1}, {"max", kMaxDataVocab}});
  }
  return Status::Ok();
}

}  // namespace

Result<TokenDataset> TokenDataset::Open(const std::string& path, int vocab_size) {
  STRATA_RETURN_IF_ERROR(CheckVocabSize(vocab_size, path));
  STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  return FromBytes(bytes, path, vocab_size);
}

Result<TokenDataset> TokenDataset::FromBytes(std::string_view bytes, const std::string& path,
                                             int vocab_size) {
  STRATA_RETURN_IF_ERROR(CheckVocabSize(vocab_size, path));
  if (bytes.empty()) {
    return AtFault(Option::kData,
                   Status::InvalidArgument("data file " + path + " is empty; give " +
                                           Mention(Option::kData) + " a file with training data"),
                   {{"file_bytes", 0}});
  }
  const int32_t magic = bytes.size() >= 4 ? LoadInt32Le(bytes.data()) : 0;
  if (magic == kTokenFileMagic || magic == kWideTokenFileMagic) {
    const TokenFileKind kind = KindOf(magic);
    STRATA_ASSIGN_OR_RETURN(const int64_t count, CheckTokenHeader(path, bytes, kind));
    if (kind.token_bytes == 4) {
      STRATA_ASSIGN_OR_RETURN(std::vector<uint32_t> tokens,
                              DecodeTokens<uint32_t>(path, bytes, count, vocab_size));
      return TokenDataset(std::move(tokens), path, Format::kTokenFile);
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<uint16_t> tokens,
                            DecodeTokens<uint16_t>(path, bytes, count, vocab_size));
    return TokenDataset(std::move(tokens), path, Format::kTokenFile);
  }
  if (EndsWith(path, ".bin")) {
    return Status::Corruption(
        "token file " + path + " has bad magic " +
        (bytes.size() >= 4 ? std::to_string(magic) : std::string("(file shorter than 4 bytes)")) +
        " at offset 0, expected " + std::to_string(kTokenFileMagic) +
        " (llm.c/nanoGPT format) or " + std::to_string(kWideTokenFileMagic) +
        " (uint32 tokens); regenerate it, or rename it if it is plain text");
  }
  if (vocab_size < kByteVocabSize) {
    return AtFault(
        Option::kVocab,
        Status::InvalidArgument(
            "data file " + path + " is read as byte-level text, which needs a vocabulary of " +
            std::to_string(kByteVocabSize) + " but " + Mention(Option::kVocab) + " is " +
            std::to_string(vocab_size) + "; use " + Mention(Option::kVocab) +
            " 256 or a token file (magic " + std::to_string(kTokenFileMagic) + ")"),
        {{"got", vocab_size}, {"min", kByteVocabSize}});
  }
  return TokenDataset(BytesToTokens(bytes), path, Format::kText);
}

TokenDataset TokenDataset::FromTokens(std::vector<uint16_t> tokens, std::string name) {
  return TokenDataset(std::move(tokens), std::move(name), Format::kInMemory);
}

TokenDataset TokenDataset::FromTokens(std::vector<uint32_t> tokens, std::string name) {
  return TokenDataset(std::move(tokens), std::move(name), Format::kInMemory);
}

TokenDataset TokenDataset::FromText(std::string_view text, std::string name) {
  return TokenDataset(BytesToTokens(text), std::move(name), Format::kInMemory);
}

Status TokenDataset::check_window(int T) const {
  if (T <= 0) {
    return AtFault(Option::kSeq,
                   Status::InvalidArgument("sequence length " + std::to_string(T) +
                                           " must be positive; pass " + Mention(Option::kSeq) +
                                           " with a value >= 1"),
                   {{"got", T}, {"min", 1}});
  }
  const int64_t n = num_tokens();
  if (n < int64_t{T} + 2) {
    return AtFault(
        Option::kSeq,
        Status::InvalidArgument("data " + name_ + " has " + std::to_string(n) +
                                " tokens, too few for sequence length " + std::to_string(T) +
                                " (a batch window needs at least T + 2 = " + std::to_string(T + 2) +
                                " tokens); use a smaller " + Mention(Option::kSeq) + " (at most " +
                                std::to_string(n >= 2 ? n - 2 : 0) + ") or more data"),
        {{"got", T}, {"max", n >= 2 ? n - 2 : 0}, {"tokens", n}});
  }
  return Status::Ok();
}

int64_t TokenDataset::window_start(long step, int B, int T, int row) const {
  STRATA_CHECK(step >= 0) << "negative step " << step;
  STRATA_CHECK(B > 0 && row >= 0 && row < B) << "row " << row << " of a batch of " << B;
  STRATA_CHECK(T > 0 && num_tokens() >= int64_t{T} + 2)
      << "batch window T=" << T << " does not fit " << num_tokens()
      << " tokens; call check_window() first";
  // 128-bit product: step * B * T can exceed 2^63 for absurd step counts, never silently wrap.
  const unsigned __int128 index = static_cast<unsigned __int128>(step) * B + row;
  const unsigned __int128 offset = index * static_cast<unsigned __int128>(T);
  const uint64_t span = static_cast<uint64_t>(num_tokens() - T - 1);
  return static_cast<int64_t>(offset % span);
}

void TokenDataset::batch(long step, int B, int T, int32_t* x, int32_t* y) const {
  STRATA_CHECK(x != nullptr && y != nullptr) << "batch() needs output buffers";
  if (wide_) {
    copy_batch(tokens32_, step, B, T, x, y);
  } else {
    copy_batch(tokens16_, step, B, T, x, y);
  }
}

template <typename Token>
void TokenDataset::copy_batch(const std::vector<Token>& tokens, long step, int B, int T,
                              int32_t* x, int32_t* y) const {
  for (int i = 0; i < B; ++i) {
    const int64_t s = window_start(step, B, T, i);
    const Token* src = tokens.data() + s;
    int32_t* xr = x + static_cast<int64_t>(i) * T;
    int32_t* yr = y + static_cast<int64_t>(i) * T;
    for (int t = 0; t < T; ++t) {
      xr[t] = static_cast<int32_t>(src[t]);
      yr[t] = static_cast<int32_t>(src[t + 1]);
    }
  }
}

}  // namespace strata
