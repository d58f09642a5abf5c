#include "storage/catalog_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::storage {
namespace {

StoreLayout TwoDirs() {
  StoreLayout layout;
  layout.page_bytes = 1 << 20;
  layout.slots_per_file = 600;
  layout.dirs = {"/mnt/nvme0/strata", "/mnt/nvme1/strata"};
  return layout;
}

TEST(CatalogCodec, LayoutRoundTrips) {
  const StoreLayout layout = TwoDirs();
  auto back = DecodeLayout("cat", EncodeFormat(kCatalogFormatVersion), EncodeLayout(layout));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->format_version, kCatalogFormatVersion);
  EXPECT_EQ(back->page_bytes, layout.page_bytes);
  EXPECT_EQ(back->slots_per_file, layout.slots_per_file);
  EXPECT_EQ(back->dirs, layout.dirs);
}

TEST(CatalogCodec, LayoutThatDoesNotDecodeExactlyIsCorruption) {
  const std::string format = EncodeFormat(kCatalogFormatVersion);
  const std::string value = EncodeLayout(TwoDirs());
  EXPECT_EQ(DecodeLayout("cat", format.substr(0, 3), value).status().code(),
            StatusCode::kCorruption);
  for (size_t cut : {size_t{0}, size_t{19}, size_t{22}, value.size() - 1}) {
    auto r = DecodeLayout("cat", format, value.substr(0, cut));
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << "cut at " << cut;
    EXPECT_NE(r.status().message().find("catalog cat: key meta/layout"), std::string::npos);
  }
  // Found by the catalog_record fuzzer's round trip: bytes after the last directory.
  auto trailing = DecodeLayout("cat", format, value + "xyz");
  EXPECT_EQ(trailing.status().code(), StatusCode::kCorruption);
  EXPECT_NE(trailing.status().message().find("3 bytes after its last directory"),
            std::string::npos);
  // A directory count of 2^32 - 1 in a short value: no allocation by the count.
  std::string huge = value.substr(0, 20);
  huge[16] = huge[17] = huge[18] = huge[19] = '\xff';
  EXPECT_EQ(DecodeLayout("cat", format, huge).status().code(), StatusCode::kCorruption);
}

TEST(CatalogCodec, OtherFormatVersionReturnsWhatItCouldRead) {
  auto r = DecodeLayout("cat", EncodeFormat(kCatalogFormatVersion + 1), "short");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->format_version, kCatalogFormatVersion + 1);
}

TEST(CatalogCodec, PageRecordRoundTrips) {
  const PageEntry entry{3, 599, 300, 0x0123456789abcdefull, 4096};
  auto r = DecodePageRecord("cat", EncodePageKey(0x0102030405060708ull), EncodePageEntry(entry));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->page, 0x0102030405060708ull);
  EXPECT_EQ(r->entry, entry);
  // Keys sort by page id.
  EXPECT_LT(EncodePageKey(255), EncodePageKey(256));
}

TEST(CatalogCodec, MalformedPageRecordIsCorruption) {
  const std::string key = EncodePageKey(7);
  const std::string value = EncodePageEntry(PageEntry{});
  auto short_value = DecodePageRecord("cat", key, value.substr(1));
  EXPECT_EQ(short_value.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(short_value.status().message(),
            "catalog cat: malformed page record (key of 10 bytes, value of 35)");
  EXPECT_EQ(DecodePageRecord("cat", key.substr(0, 9), value).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodePageRecord("cat", "m/" + key.substr(2), value).status().code(),
            StatusCode::kCorruption);
}

TEST(CatalogCodec, ManifestRoundTrips) {
  const std::vector<PageRecord> records = {{0, {0, 0, 1, 2, 3}}, {41, {1, 5, 6, 7, 8}}};
  auto back = DecodeManifest("cat", "step-300", EncodeManifest(records));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].page, 41u);
  EXPECT_EQ((*back)[1].entry, records[1].entry);
  auto empty = DecodeManifest("cat", "empty", EncodeManifest({}));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(CatalogCodec, ManifestCountIsBelievedOnlyWhenTheValueHoldsIt) {
  const std::vector<PageRecord> records = {{1, {}}, {2, {}}};
  std::string value = EncodeManifest(records);
  value[7] = '\x7f';  // a count of ~2^63 records in a value that holds 2
  auto r = DecodeManifest("cat", "m1", value);
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(r.status().message(), "manifest 'm1' in catalog cat is malformed");
  EXPECT_EQ(DecodeManifest("cat", "m1", EncodeManifest(records).substr(0, 50)).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DecodeManifest("cat", "m1", "").status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace strata::storage
