// tests/check_structure.sh's flag rule (Note [Options in messages] in core/util/option.h): a
// string literal holding flag text in core/, storage/, memory/, parallel/ or scheduler/ fails
// the structure test; comments, tools/ and embed/ may name flags. And its cycle rule: the files
// of scheduler/ include one another without a loop (a .h and its .cc are one unit). Each runs on
// a small tree of its own.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

void Write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// check_structure.sh's output on `root`.
std::string CheckStructure(const fs::path& root) {
  const std::string cmd = "bash " STRATA_SOURCE_DIR "/tests/check_structure.sh " + root.string() +
                          " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf;
  while (pipe && fgets(buf.data(), int(buf.size()), pipe.get()) != nullptr) out += buf.data();
  return out;
}

TEST(StructureRules, FlagTextInALowerFloorsStringLiteralFailsCommentsAndEdgesMayNameFlags) {
  const fs::path root = fs::temp_directory_path() / ("strata_structure_" + std::to_string(getpid()));
  fs::remove_all(root);
  Write(root / "core/a.cc",
        "// comments may name --nvme-dir\n"
        "const char* kOk = \"http://x\";  // \"--gpu-mem\" in a comment\n"
        "const char* kBad = \"use --nvme-dir\";\n");
  Write(root / "storage/b.cc", "const char* kDashes = \"--\";\nchar q = '\"'; const char* k = \"--tp\";\n");
  Write(root / "memory/c.h", "#pragma once\n");
  Write(root / "parallel/d.cc", "const char* k = \"{nvme_dir} a - b\";\n");
  Write(root / "scheduler/e.cc", "const char* k = \"--resume\";\n");
  Write(root / "tools/f.cc", "const char* k = \"--nvme-dir\";\n");
  Write(root / "embed/g.cc", "const char* k = \"--nvme-dir\";\n");
  const std::string out = CheckStructure(root);
  fs::remove_all(root);
  if (out.find("universal-ctags is missing") != std::string::npos) {
    GTEST_SKIP() << "check_structure.sh needs universal-ctags: " << out;
  }
  EXPECT_NE(out.find("core/ names a command-line flag: core/a.cc:3:"), std::string::npos) << out;
  EXPECT_EQ(out.find("core/a.cc:1:"), std::string::npos) << out;
  EXPECT_EQ(out.find("core/a.cc:2:"), std::string::npos) << out;
  EXPECT_EQ(out.find("storage/b.cc:1:"), std::string::npos) << out;
  EXPECT_NE(out.find("storage/ names a command-line flag: storage/b.cc:2:"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("parallel/d.cc"), std::string::npos) << out;
  EXPECT_NE(out.find("scheduler/ names a command-line flag: scheduler/e.cc:1:"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("tools/f.cc"), std::string::npos) << out;
  EXPECT_EQ(out.find("embed/g.cc"), std::string::npos) << out;
}

// The trainers' old factory: trainer.cc included the paged trainer, whose header includes
// trainer.h back. The factory in a file of its own closes no loop.
TEST(StructureRules, AnIncludeLoopInsideSchedulerFailsAFactoryOfItsOwnDoesNot) {
  const fs::path root =
      fs::temp_directory_path() / ("strata_structure_loop_" + std::to_string(getpid()));
  fs::remove_all(root);
  Write(root / "scheduler/trainer.h", "#pragma once\n");
  Write(root / "scheduler/paged.h", "#pragma once\n#include \"scheduler/trainer.h\"\n");
  Write(root / "scheduler/trainer.cc",
        "#include \"scheduler/trainer.h\"\n#include \"scheduler/paged.h\"\n");
  const std::string looped = CheckStructure(root);
  fs::remove(root / "scheduler/trainer.cc");
  Write(root / "scheduler/factory.cc",
        "#include \"scheduler/trainer.h\"\n#include \"scheduler/paged.h\"\n");
  const std::string factored = CheckStructure(root);
  fs::remove_all(root);
  if (looped.find("universal-ctags is missing") != std::string::npos) {
    GTEST_SKIP() << "check_structure.sh needs universal-ctags: " << looped;
  }
  EXPECT_NE(looped.find("scheduler/ includes itself in a circle (units on a loop: "
                        "scheduler/paged scheduler/trainer)"),
            std::string::npos)
      << looped;
  EXPECT_EQ(factored.find("in a circle"), std::string::npos) << factored;
}

}  // namespace
