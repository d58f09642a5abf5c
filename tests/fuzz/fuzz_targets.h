// The fuzz targets' entry functions: each takes one input of arbitrary bytes, runs a parser on
// it, and, where the parser accepts the input, checks that encoding the result and decoding it
// again round-trips. A rejected input (a clean Status error) is fine; a crash, a sanitizer
// report or a failed STRATA_CHECK is a bug. Each returns whether the parser accepted the input
// (the regression tests expect the seeds named ok_* to be accepted).
//
// Two callers: the libFuzzer executables (fuzz_main.cc, built with -DSTRATA_FUZZ=ON and clang)
// and the default suite's regression tests (tests/core/fuzz_regressions_test.cc and
// tests/storage/fuzz_regressions_test.cc), which run each entry over every file in
// tests/fuzz/corpus/<target>/ and tests/fuzz/regressions/<target>/.
#pragma once

#include <string_view>

namespace strata::fuzz {

// safetensors_header: ParseSafetensors on a whole file in memory (length, JSON header,
// metadata, data); accepted files are re-encoded as F32 (EncodeSafetensorsHeader) and must
// parse back to the same tensors and metadata.
bool FuzzSafetensorsHeader(std::string_view bytes);

// token_header: TokenDataset::FromBytes as a *.bin token file and as text, with several
// vocabulary sizes; an accepted token file must re-encode to the same bytes. Returns whether
// it is a token file for GPT-2's vocabulary (50257).
bool FuzzTokenHeader(std::string_view bytes);

// size_parser: ParseBytes; an accepted size must parse back from its decimal form and from
// each unit that divides it, and whole numbers are checked against 128-bit arithmetic.
bool FuzzSizeParser(std::string_view bytes);

// catalog_record: the first byte picks meta/layout (+ meta/format), a p/ page record, or an m/
// manifest; the rest is the key and value bytes. Accepted values must re-encode to the same bytes.
bool FuzzCatalogRecord(std::string_view bytes);

// checkpoint_record: ParseCheckpointRecord on a checkpoint.json; an accepted record of the
// current format must re-encode (CheckpointRecordJson) to a record that parses back the same.
bool FuzzCheckpointRecord(std::string_view bytes);

}  // namespace strata::fuzz
