// Writes the seed corpus, tests/fuzz/corpus/<target>/, with the project's own writers
// (WriteSafetensors, the catalog's encoders) where there is one, and by hand for what they never
// write (F16/BF16 tensors, damaged files). Built in the fuzz tree; run by hand after a format
// changes:  build-fuzz/tests/fuzz/strata_fuzz_make_seeds tests/fuzz/corpus
// Seeds named ok_* must be accepted by their target's parser (the regression tests check).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/data/token_dataset.h"
#include "core/io/safetensors.h"
#include "storage/catalog_codec.h"

namespace {

namespace fs = std::filesystem;
using strata::Status;

void Write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

// 8-byte length + `header` verbatim + `data`.
std::string RawSafetensors(const std::string& header, const std::string& data) {
  return Le(header.size(), 8) + header + data;
}

void Safetensors(const fs::path& dir) {
  const std::vector<float> w = {1.5f, -2.0f, 0.0f, -0.0f, 3.25f, 1e-40f};
  const float scalar = 7.0f;
  auto write = [&](const std::string& name, const std::vector<strata::TensorView>& tensors,
                   const std::map<std::string, std::string>& metadata) {
    const Status s = strata::WriteSafetensors((dir / name).string(), tensors, metadata);
    if (!s.ok()) std::fprintf(stderr, "%s\n", s.to_string().c_str());
  };
  write("ok_two_tensors.safetensors",
        {{"h.0.attn.c_attn.weight", {2, 3}, w.data()}, {"wpe", {}, &scalar}},
        {{"format", "pt"}, {"strata.n_layer", "1"}});
  write("ok_empty.safetensors", {}, {});
  write("ok_zero_size.safetensors", {{"empty", {0, 4}, nullptr}, {"s", {1}, &scalar}}, {});
  // What the writer never writes: F16 and BF16 (1.0, -2.0, inf, NaN), unpadded headers.
  Write(dir / "ok_f16_bf16.safetensors",
        RawSafetensors(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}})",
                       std::string("\x00\x3c\x00\xc0\x80\x7f\xc0\x7f", 8)));
  Write(dir / "bad_gap.safetensors",
        RawSafetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       std::string(8, '\0')));
  Write(dir / "bad_overlap.safetensors",
        RawSafetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       std::string(8, '\0')));
  Write(dir / "bad_f64.safetensors",
        RawSafetensors(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                       std::string(8, '\0')));
  Write(dir / "bad_shape.safetensors",
        RawSafetensors(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],)"
                       R"("data_offsets":[0,0]},"__metadata__":{"k":1}})",
                       ""));
  Write(dir / "bad_header_length.safetensors", Le(~uint64_t{0}, 8) + "{}");
  Write(dir / "bad_short.safetensors", std::string("\x02\x00\x00", 3));
}

// A token file: uint16 tokens, or with `wide` uint32 tokens under the wide format's magic.
std::string TokenFile(int32_t version, int32_t count, const std::vector<uint32_t>& tokens,
                      bool wide = false) {
  const int32_t magic = wide ? strata::kWideTokenFileMagic : strata::kTokenFileMagic;
  std::string out = Le(static_cast<uint32_t>(magic), 4) + Le(static_cast<uint32_t>(version), 4) +
                    Le(static_cast<uint32_t>(count), 4);
  out.resize(strata::kTokenFileHeaderBytes, '\0');
  for (uint32_t t : tokens) out += Le(t, wide ? 4 : 2);
  return out;
}

void Tokens(const fs::path& dir) {
  Write(dir / "ok_ten_tokens.bin",
        TokenFile(1, 10, {0, 1, 2, 50256, 464, 318, 257, 1332, 13, 198}));
  Write(dir / "ok_one_token.bin", TokenFile(1, 1, {42}));
  Write(dir / "bad_version.bin", TokenFile(2, 1, {42}));
  Write(dir / "bad_negative_count.bin", TokenFile(1, -1, {}));
  Write(dir / "bad_count_too_large.bin", TokenFile(1, 0x7fffffff, {1, 2}));
  Write(dir / "bad_token_range.bin", TokenFile(1, 2, {65535, 50257}));
  Write(dir / "ok_wide_tokens.bin", TokenFile(7, 4, {128000, 9906, 1917, 128255}, true));
  Write(dir / "bad_wide_version.bin", TokenFile(1, 1, {42}, true));
  Write(dir / "bad_wide_token_range.bin", TokenFile(7, 2, {128256, 0x80000000u}, true));
  Write(dir / "text.txt", "To be, or not to be, that is the question.\n");
}

void Sizes(const fs::path& dir) {
  const char* ok[] = {"512M", "1.5G", "16MiB",   "4096", "0", "1T", "18446744073709551615",
                      "0.5k", "2gb",  "1.25TiB", "7B"};
  const char* bad[] = {"12X",          "",  "-1", "1.5", "1..5K", "18446744073709551616",
                       "17179869184G", ".", "K",  "1 M"};
  int i = 0;
  for (const char* s : ok) Write(dir / ("ok_" + std::to_string(i++)), s);
  for (const char* s : bad) Write(dir / ("bad_" + std::to_string(i++)), s);
}

void Catalog(const fs::path& dir) {
  using namespace strata::storage;
  StoreLayout layout;
  layout.page_bytes = 1 << 20;
  layout.slots_per_file = 600;
  layout.dirs = {"/mnt/nvme0/strata", "/mnt/nvme1/strata"};
  Write(dir / "ok_layout", std::string(1, '\0') + EncodeFormat(1) + EncodeLayout(layout));
  Write(dir / "ok_layout_other_format", "\x03" + EncodeFormat(2) + "later");
  Write(dir / "bad_layout_truncated",
        std::string(1, '\0') + EncodeFormat(1) + EncodeLayout(layout).substr(0, 30));
  const std::vector<PageRecord> records = {
      {0, {0, 0, 1, 0x9e3779b97f4a7c15, 1 << 20}},
      {41, {1, 599, 300, 0x0123456789abcdef, 4096}},
      {~uint64_t{0}, {~uint32_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}}}};
  Write(dir / "ok_page", "\x01" + EncodePageKey(41) + EncodePageEntry(records[1].entry));
  Write(dir / "ok_manifest", "\x02" + EncodeManifest(records));
  Write(dir / "ok_manifest_empty", "\x05" + EncodeManifest({}));
  std::string lying = EncodeManifest(records);
  lying[7] = '\x7f';  // a count of ~2^63 records
  Write(dir / "bad_manifest_count", "\x02" + lying);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* target :
       {"safetensors_header", "token_header", "size_parser", "catalog_record"}) {
    fs::create_directories(root / target);
  }
  Safetensors(root / "safetensors_header");
  Tokens(root / "token_header");
  Sizes(root / "size_parser");
  Catalog(root / "catalog_record");
  return 0;
}
