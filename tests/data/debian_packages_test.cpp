// Debian's package index as a dataset: the deb822 reader (fields, continuation lines, repeats, errors by line)
// and the split (labels kept by their training count, ids in byte order, seeded).
#include "engine/data/debian_packages.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

const char* kIndex =
    "Package: 0ad\n"
    "Version: 0.0.26-3\n"
    "Description: Real-time strategy game of ancient warfare\n"
    "Tag: game::strategy, interface::graphical,\n"
    " role::program, game::strategy\n"
    "Section: games\n"
    "\n"
    "Package: libfoo-dev\n"
    "Section: libdevel\n"
    "Description: development files for foo\n"
    " The long description is not read.\n"
    " .\n"
    "\n"
    "\n"
    "Package: 0ad\n"
    "Version: 0.0.25\n"
    "Description: an older version, listed again\n"
    "Tag: role::data\n";

TEST(DebianPackages, ReadsNamesSynopsesSectionsAndTagsOverContinuationLines) {
  test::TempDir dir;
  const auto file = test::write_file(dir / "packages.txt", kIndex);
  const std::vector<DebianPackage> packages = read_debian_packages(file);
  ASSERT_EQ(packages.size(), 2u) << "0ad is listed twice: the first is kept";
  EXPECT_EQ(packages[0].name, "0ad");
  EXPECT_EQ(packages[0].description, "Real-time strategy game of ancient warfare");
  EXPECT_EQ(packages[0].section, "games");
  EXPECT_EQ(packages[0].tags, (std::vector<std::string>{"game::strategy", "interface::graphical", "role::program"})) << "a repeated tag once";
  EXPECT_EQ(packages[1].name, "libfoo-dev");
  EXPECT_EQ(packages[1].description, "development files for foo");
  EXPECT_TRUE(packages[1].tags.empty());
}

TEST(DebianPackages, MalformedIndexesAreRefusedByLine) {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases{
      {" Tag: leading space\n", ":1: a continuation line"},
      {"Package: a\nno colon here\n", ":2: expected \"Field: value\""},
      {"Package: a\n: value\n", ":2: a field with no name"},
      {"Package: a\n\nVersion: 1\nSection: net\n", ":3: a package stanza without a Package field"},
      {"Package: two words\n", ":1: a Package name must be one word"},
      {"Package:\n", ":1: a Package name must be one word"},
      {"Package: a\nDescription: caf\xC3\n", ":2: not valid UTF-8"}};
  for (const auto& [text, expected] : cases) {
    const auto file = test::write_file(dir / "bad.txt", text);
    try {
      read_debian_packages(file);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(file.string() + expected), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(read_debian_packages(test::write_file(dir / "empty.txt", "")).empty());
  EXPECT_THROW(read_debian_packages(dir / "missing.txt"), InputError);
}

// Ten packages: tag "common" on all, "rare" on one, "pair" on two. With min count 2, "rare" goes; a package left
// without labels goes too.
TEST(DebianPackages, TheSplitKeepsLabelsOnEnoughTrainingPackages) {
  test::TempDir dir;
  std::string index;
  for (int i = 0; i < 10; ++i) {
    index += "Package: pkg" + std::to_string(i) + "\nDescription: tool number " + std::to_string(i) + "\nSection: " + (i % 2 ? "net" : "utils") + "\n";
    std::string tags = "common";
    if (i == 3) tags += ", rare";
    if (i == 4 || i == 5) tags += ", pair";
    index += "Tag: " + tags + "\n\nPackage: untagged" + std::to_string(i) + "\nDescription: no tags\nSection: utils\n\n";
  }
  DebianBuildOptions options{.packages = test::write_file(dir / "packages.txt", index), .test_fraction = 0.2, .seed = 3};
  const Dataset tags = build_debian_dataset(options);
  EXPECT_EQ(tags.num_train() + tags.num_test(), 10) << "untagged packages are not queries";
  EXPECT_EQ(tags.num_test(), 2);
  for (const std::string& text : tags.train_text) EXPECT_EQ(text.rfind("pkg", 0), 0u) << text;
  EXPECT_EQ(tags.train_text.front().find(": tool number "), 4u) << "name: synopsis";
  const std::vector<std::string> expected_labels =
      tags.label_text.size() == 2 ? std::vector<std::string>{"common", "pair"} : std::vector<std::string>{"common"};
  EXPECT_EQ(tags.label_text, expected_labels) << "\"rare\" is on one package; \"pair\" stays when both its packages train";
  options.labels = "section";
  const Dataset sections = build_debian_dataset(options);
  EXPECT_EQ(sections.label_text, (std::vector<std::string>{"net", "utils"}));
  EXPECT_EQ(sections.num_train() + sections.num_test(), 20) << "every package has a section";
  // The same seed, the same split.
  EXPECT_EQ(build_debian_dataset(options).train_text, sections.train_text);

  options.min_label_count = 100;
  EXPECT_THROW(build_debian_dataset(options), ConfigError);
  options.min_label_count = 2;
  options.test_fraction = 1;
  EXPECT_THROW(build_debian_dataset(options), ConfigError);
  options.test_fraction = 0.2;
  options.labels = "maintainer";
  EXPECT_THROW(build_debian_dataset(options), ConfigError);
}

}  // namespace
}  // namespace xmc
