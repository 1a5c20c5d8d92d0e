// Zero-shot splits: the invariants a zero-shot evaluation relies on, checked against the source dataset.
#include "engine/data/zero_shot_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/text_lines.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

std::set<std::int32_t> row_set(const CsrMatrix& m, std::int64_t r) {
  const auto idx = m.row_indices(r);
  return {idx.begin(), idx.end()};
}

bool contains(const std::vector<std::int32_t>& v, std::int32_t x) { return std::binary_search(v.begin(), v.end(), x); }

}  // namespace

TEST(ZeroShotSplit, NovelLabelsLoseEveryTrainingPointAndTheTestSetsAgree) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "source", 5, 300, 120);
  const Dataset source = load_dataset(dir / "source");
  const ZeroShotSplitSummary summary = split_zero_shot({.in = dir / "source", .out = dir / "zs", .novel_frac = 0.25, .val_frac = 0.17, .seed = 3});
  EXPECT_EQ(summary.labels, 12);
  EXPECT_EQ(summary.novel, 3);
  EXPECT_EQ(summary.pseudo_novel, 2);

  const Dataset split = load_dataset(dir / "zs");  // an ordinary dataset folder for every method
  ASSERT_TRUE(is_zero_shot_split(dir / "zs"));
  EXPECT_FALSE(is_zero_shot_split(dir / "source"));
  const ZeroShotSplit zs = read_zero_shot_split(dir / "zs", split.num_train(), split.num_test(), split.num_labels());
  ASSERT_EQ(zs.novel.size(), 3u);
  ASSERT_EQ(zs.pseudo_novel.size(), 2u);
  for (const auto l : zs.pseudo_novel) EXPECT_FALSE(contains(zs.novel, l)) << "pseudo-novel label " << l << " is novel too";

  // Train: base training sees observed, non-pseudo-novel labels; the observed file keeps pseudo-novel ones.
  ASSERT_EQ(split.num_train(), source.num_train());
  for (std::int64_t r = 0; r < source.num_train(); ++r) {
    EXPECT_EQ(split.train_text[static_cast<std::size_t>(r)], source.train_text[static_cast<std::size_t>(r)]);
    for (const auto l : row_set(source.train_labels, r)) {
      const bool novel = contains(zs.novel, l), pseudo = contains(zs.pseudo_novel, l);
      EXPECT_EQ(row_set(split.train_labels, r).count(l), novel || pseudo ? 0u : 1u) << "row " << r << " label " << l;
      EXPECT_EQ(row_set(zs.train_observed, r).count(l), novel ? 0u : 1u) << "row " << r << " label " << l;
    }
    EXPECT_LE(split.train_labels.row_size(r), source.train_labels.row_size(r));
  }
  for (const auto l : zs.pseudo_novel) EXPECT_GT(zs.train_observed.column_counts()[static_cast<std::size_t>(l)], 0);

  // Test: full = the source's positives; zero = exactly the rows with a novel positive, novel positives only.
  std::vector<std::int64_t> expected_rows;
  for (std::int64_t r = 0; r < source.num_test(); ++r) {
    EXPECT_EQ(row_set(zs.test_full, r), row_set(source.test_labels, r));
    EXPECT_EQ(row_set(split.test_labels, r), row_set(source.test_labels, r));
    for (const auto l : row_set(source.test_labels, r))
      if (contains(zs.novel, l)) {
        expected_rows.push_back(r);
        break;
      }
  }
  EXPECT_EQ(zs.test_zero_rows, expected_rows);
  EXPECT_EQ(summary.zero_shot_test_rows, static_cast<std::int64_t>(expected_rows.size()));
  const auto zero_text = read_text_lines(dir / "zs" / zero_shot_files::kTestZeroText);
  ASSERT_EQ(zero_text.size(), expected_rows.size());
  for (std::size_t z = 0; z < expected_rows.size(); ++z) {
    EXPECT_EQ(zero_text[z], source.test_text[static_cast<std::size_t>(expected_rows[z])]);
    std::set<std::int32_t> novel_positives;
    for (const auto l : row_set(source.test_labels, expected_rows[z]))
      if (contains(zs.novel, l)) novel_positives.insert(l);
    EXPECT_EQ(row_set(zs.test_zero, static_cast<std::int64_t>(z)), novel_positives) << "zero row " << z;
  }

  // The same seed gives the same split; another seed another one.
  split_zero_shot({.in = dir / "source", .out = dir / "again", .novel_frac = 0.25, .val_frac = 0.17, .seed = 3});
  split_zero_shot({.in = dir / "source", .out = dir / "other", .novel_frac = 0.25, .val_frac = 0.17, .seed = 4});
  const Dataset again = load_dataset(dir / "again");
  EXPECT_EQ(read_zero_shot_split(dir / "again", again.num_train(), again.num_test(), 12).novel, zs.novel);
  const auto other = read_zero_shot_split(dir / "other", again.num_train(), again.num_test(), 12);
  EXPECT_TRUE(other.novel != zs.novel || other.pseudo_novel != zs.pseudo_novel);
}

TEST(ZeroShotSplit, BadFractionsAndDamagedFilesAreNamed) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "source", 5, 100, 40);
  for (const double frac : {0.0, 1.0, -0.1, 1.5})
    EXPECT_THROW(split_zero_shot({.in = dir / "source", .out = dir / "x", .novel_frac = frac}), ConfigError) << frac;
  EXPECT_THROW(split_zero_shot({.in = dir / "source", .out = dir / "x", .novel_frac = 0.5, .val_frac = 0.6}), ConfigError);
  EXPECT_THROW(split_zero_shot({.in = dir / "source", .out = dir / "source"}), ConfigError) << "never over an existing dataset";
  split_zero_shot({.in = dir / "source", .out = dir / "zs", .novel_frac = 0.25});
  test::write_file(dir / "zs" / zero_shot_files::kNovelLabels, "3\n1\n");
  try {
    read_zero_shot_split(dir / "zs", 100, 40, 12);
    FAIL() << "descending ids were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("novel_labels.txt:2: label ids must be strictly ascending (1 after 3)"), std::string::npos) << e.what();
  }
  test::write_file(dir / "zs" / zero_shot_files::kNovelLabels, "12\n");
  EXPECT_THROW(read_zero_shot_split(dir / "zs", 100, 40, 12), InputError);
}

}  // namespace xmc
