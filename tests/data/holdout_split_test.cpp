// Development splits: every training query lands in exactly one side, with its own text, labels and features.
#include "engine/data/holdout_split.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "engine/core/error.h"
#include "engine/data/csr_rows.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

std::vector<std::int32_t> row_labels(const CsrMatrix& m, std::int64_t r) {
  const auto idx = m.row_indices(r);
  return {idx.begin(), idx.end()};
}

// A dataset whose ten training queries are "q0" .. "q9", query i with label i % 3 and one feature, column i, of value i.
Dataset ten_queries() {
  Dataset d;
  d.meta.name = "tiny";
  d.label_text = {"a", "b", "c"};
  d.train_labels.cols = d.test_labels.cols = 3;
  CsrMatrix features;
  features.cols = 10;
  for (std::int32_t i = 0; i < 10; ++i) {
    d.train_text.push_back("q" + std::to_string(i));
    const std::int32_t label = i % 3;
    const float one = 1.0f, value = static_cast<float>(i);
    d.train_labels.append_row({&label, 1}, {&one, 1});
    features.append_row({&i, 1}, {&value, 1});
  }
  d.train_features = features;
  d.test_text = {"t"};
  const std::int32_t label = 0;
  const float one = 1.0f;
  d.test_labels.append_row({&label, 1}, {&one, 1});
  return d;
}

TEST(CsrRows, RowsComeInTheOrderAskedWithTheirValuesAndOutsideRowsAreRefused) {
  const Dataset d = ten_queries();  // row i: feature i of value i
  const std::vector<std::int64_t> rows{7, 2, 7};
  const CsrMatrix picked = csr_rows(*d.train_features, rows);
  ASSERT_EQ(picked.rows, 3);
  EXPECT_EQ(picked.cols, 10);
  for (std::int64_t r = 0; r < 3; ++r) {
    ASSERT_EQ(picked.row_size(r), 1);
    EXPECT_EQ(picked.row_indices(r)[0], rows[static_cast<std::size_t>(r)]);
    EXPECT_EQ(picked.row_values(r)[0], static_cast<float>(rows[static_cast<std::size_t>(r)]));
  }
  const CsrMatrix range = csr_row_range(*d.train_features, 3, 6);
  ASSERT_EQ(range.rows, 3);
  EXPECT_EQ(range.row_indices(0)[0], 3);
  EXPECT_EQ(range.row_indices(2)[0], 5);
  EXPECT_EQ(csr_row_range(*d.train_features, 4, 4).rows, 0);
  const std::vector<std::int64_t> outside{10};
  EXPECT_THROW(csr_rows(*d.train_features, outside), Error);
  EXPECT_THROW(csr_row_range(*d.train_features, 5, 11), Error);
  EXPECT_THROW(csr_row_range(*d.train_features, 6, 5), Error);
}

TEST(HoldoutSplit, EveryTrainingQueryLandsOnOneSideWithItsLabelsAndFeatures) {
  const Dataset source = ten_queries();
  const Dataset dev = holdout_split(source, {.fraction = 0.3, .seed = 5});
  ASSERT_EQ(dev.num_test(), 3) << "round(0.3 x 10) held out";
  ASSERT_EQ(dev.num_train(), 7);
  EXPECT_EQ(dev.label_text, source.label_text);
  EXPECT_EQ(dev.num_labels(), 3);
  std::map<std::string, int> seen;
  auto check_side = [&](const std::vector<std::string>& texts, const CsrMatrix& labels, const CsrMatrix& features, const char* side) {
    ASSERT_EQ(labels.rows, static_cast<std::int64_t>(texts.size())) << side;
    ASSERT_EQ(features.rows, labels.rows) << side;
    int previous = -1;
    for (std::int64_t r = 0; r < labels.rows; ++r) {
      const int i = std::stoi(texts[static_cast<std::size_t>(r)].substr(1));
      EXPECT_GT(i, previous) << side << ": rows keep their original order";
      previous = i;
      ++seen[texts[static_cast<std::size_t>(r)]];
      EXPECT_EQ(row_labels(labels, r), std::vector<std::int32_t>{i % 3}) << side << " row " << r;
      ASSERT_EQ(features.row_size(r), 1) << side << " row " << r;
      EXPECT_EQ(features.row_indices(r)[0], i);
      EXPECT_EQ(features.row_values(r)[0], static_cast<float>(i));
    }
  };
  check_side(dev.train_text, dev.train_labels, *dev.train_features, "train");
  check_side(dev.test_text, dev.test_labels, *dev.test_features, "test");
  EXPECT_EQ(seen.size(), 10u) << "every training query on exactly one side";
  for (const auto& [text, count] : seen) EXPECT_EQ(count, 1) << text;
  for (const auto& text : dev.test_text) EXPECT_NE(text, "t") << "the real test split is never used";

  // The same seed draws the same rows; another seed, others.
  EXPECT_EQ(holdout_split(source, {.fraction = 0.3, .seed = 5}).test_text, dev.test_text);
  bool differs = false;
  for (std::uint64_t seed = 6; seed < 12 && !differs; ++seed) differs = holdout_split(source, {.fraction = 0.3, .seed = seed}).test_text != dev.test_text;
  EXPECT_TRUE(differs);
}

TEST(HoldoutSplit, FractionsThatEmptyASideAreRefusedByName) {
  const Dataset source = ten_queries();
  for (const double fraction : {0.0, 1.0, -0.2, 1.5, 0.01, 0.97}) {
    try {
      holdout_split(source, {.fraction = fraction, .seed = 0});
      ADD_FAILURE() << "fraction " << fraction << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--fraction"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(holdout_split(source, {.fraction = 0.1, .seed = 0}));
  EXPECT_NO_THROW(holdout_split(source, {.fraction = 0.9, .seed = 0}));
}

TEST(HoldoutSplit, ASavedSplitLoadsAsAnOrdinaryDataset) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "source", 5, 300, 120);
  const Dataset source = load_dataset(dir / "source");
  save_dataset(holdout_split(source, {.fraction = 0.25, .seed = 1}), dir / "dev");
  const Dataset dev = load_dataset(dir / "dev");
  EXPECT_EQ(dev.num_train() + dev.num_test(), source.num_train());
  EXPECT_EQ(dev.num_test(), 75);
  EXPECT_EQ(dev.num_labels(), source.num_labels());
}

}  // namespace
}  // namespace xmc
