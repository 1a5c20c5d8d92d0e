#include "engine/data/dataset.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/data/dataset_summary.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

Dataset small_dataset() {
  Dataset d;
  d.meta.name = "tiny";
  d.meta.propensity = {0.6, 2.6};
  d.train_text = {"red apple", "green apple", "ripe banana", "blue sky"};
  d.test_text = {"apple pie", "sky"};
  d.label_text = {"fruit", "apple", "banana", "weather"};
  d.train_labels = csr_from_rows({{0, 1}, {0, 1}, {0, 2}, {3}}, 4);
  d.test_labels = csr_from_rows({{0, 1}, {3}}, 4);
  d.test_filter = FilterPairs({{1, 3}});
  return d;
}

std::string load_error(const std::filesystem::path& dir) {
  try {
    load_dataset(dir);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Dataset, SaveThenLoadRoundTrips) {
  test::TempDir dir;
  save_dataset(small_dataset(), dir.path());
  const Dataset d = load_dataset(dir.path());
  EXPECT_EQ(d.meta.name, "tiny");
  EXPECT_DOUBLE_EQ(d.meta.propensity.a, 0.6);
  EXPECT_DOUBLE_EQ(d.meta.propensity.b, 2.6);
  EXPECT_EQ(d.num_train(), 4);
  EXPECT_EQ(d.num_test(), 2);
  EXPECT_EQ(d.num_labels(), 4);
  EXPECT_EQ(d.test_text[0], "apple pie");
  EXPECT_EQ(d.label_frequencies(), (std::vector<std::int64_t>{3, 2, 1, 1}));
  EXPECT_EQ(d.test_filter.labels_of(1), (std::vector<std::int32_t>{3}));
  EXPECT_FALSE(d.train_features.has_value());
}

// dataset.json holds UTF-8 only: a name taken from a Latin-1 ARFF relation used to fail after every other
// file was written, leaving a folder without dataset.json and "internal error".
TEST(Dataset, ANameThatIsNotUtf8IsRefusedBeforeAnythingIsWritten) {
  test::TempDir dir;
  Dataset d = small_dataset();
  d.meta.name = "caf\xe9";
  try {
    save_dataset(d, dir / "out");
    FAIL() << "saved a non-UTF-8 name";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the dataset's name is not valid UTF-8 (byte 0xE9 at offset 3)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

TEST(Dataset, InconsistentFilesAreReportedByName) {
  test::TempDir dir;
  save_dataset(small_dataset(), dir.path());
  // One label text too many: the label matrices no longer agree with lbl.raw.txt.
  test::write_file(dir / "lbl.raw.txt", "fruit\napple\nbanana\nweather\nextra\n");
  EXPECT_EQ(load_error(dir.path()), (dir / "trn_X_Y.txt").string() + ": header declares 4 columns but lbl.raw.txt has 5");
  save_dataset(small_dataset(), dir.path());
  test::write_file(dir / "trn.raw.txt", "only\nthree\ntexts\n");
  EXPECT_EQ(load_error(dir.path()), (dir / "trn.raw.txt").string() + ": has 3 lines but 4 were expected (one text per row)");
  save_dataset(small_dataset(), dir.path());
  test::write_file(dir / "filter_labels_test.txt", "0 1\n1 9\n");
  EXPECT_EQ(load_error(dir.path()), (dir / "filter_labels_test.txt").string() + ":2: label 9 is out of range (there are 4 labels)");
  EXPECT_EQ(load_error(dir / "nope"), (dir / "nope").string() + ": is not a dataset folder (no such directory)");
  // Propensity parameters where the formula is undefined made every PSP@k 0 without a word.
  save_dataset(small_dataset(), dir.path());
  test::write_file(dir / "dataset.json", "{\"name\": \"x\", \"propensity\": {\"A\": 0.5, \"B\": -1.5}}");
  EXPECT_EQ(load_error(dir.path()),
            (dir / "dataset.json").string() + ": field \"propensity\": propensity B must be a finite number > -1, got -1.500000");
  // A dataset.json nested 100,000 levels deep once crashed the loader.
  save_dataset(small_dataset(), dir.path());
  test::write_file(dir / "dataset.json", "{\"name\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  EXPECT_NE(load_error(dir.path()).find((dir / "dataset.json").string() + ": is not valid JSON: [json.exception.parse_error.101] parse error: values nested deeper than 256 levels"),
            std::string::npos)
      << load_error(dir.path());
}

TEST(Dataset, FingerprintFollowsContent) {
  test::TempDir a, b;
  save_dataset(small_dataset(), a.path());
  save_dataset(small_dataset(), b.path());
  EXPECT_EQ(dataset_fingerprint(a.path()), dataset_fingerprint(b.path()));
  test::write_file(b / "tst.raw.txt", "apple pies\nsky\n");
  EXPECT_NE(dataset_fingerprint(a.path()), dataset_fingerprint(b.path()));
}

TEST(Dataset, InversePropensitiesFollowJainEtAl) {
  // 1/p = 1 + C (N_l + B)^-A, C = (ln N - 1)(B + 1)^A; reference values computed separately with Python's
  // math module for N = 100, A = 0.55, B = 1.5.
  std::vector<std::int64_t> freq(100, 0);
  freq[0] = 10;
  const auto inv = inverse_propensities(freq, 100, {0.55, 1.5});
  EXPECT_NEAR(inv[0], 2.557431532775994, 1e-12);
  EXPECT_NEAR(inv[1], 5.774661450557821, 1e-12);
}

TEST(DatasetSummary, CountsWhatUsersAskAbout) {
  test::TempDir dir;
  save_dataset(small_dataset(), dir.path());
  const auto s = summarize_dataset(load_dataset(dir.path()));
  EXPECT_EQ(s.num_train, 4);
  EXPECT_EQ(s.num_test, 2);
  EXPECT_EQ(s.num_labels, 4);
  EXPECT_DOUBLE_EQ(s.avg_labels_per_point, 7.0 / 4);
  EXPECT_DOUBLE_EQ(s.avg_points_per_label, 7.0 / 4);
  EXPECT_EQ(s.labels_with_5_or_more, 0);
  EXPECT_EQ(s.filtered_test_pairs, 1);
  EXPECT_DOUBLE_EQ(s.train_text.mean_words, 2.0);
  EXPECT_EQ(s.test_text.max_words, 2);
  // "fruit" is in 3 of the 4 training rows: said, since P@k rewards ranking it first for any query.
  ASSERT_EQ(s.dominant_labels.size(), 1u);
  EXPECT_EQ(s.dominant_labels[0].label, 0);
  EXPECT_EQ(s.dominant_labels[0].text, "fruit");
  EXPECT_DOUBLE_EQ(s.dominant_labels[0].train_fraction, 0.75);
  EXPECT_NE(to_text(s).find("label in most train rows     0 \"fruit\" in 75% of them"), std::string::npos) << to_text(s);
  // Frequencies sorted: 1 1 2 3 -> min 1, max 3.
  EXPECT_EQ(s.label_frequency_quantiles.front().second, 1);
  EXPECT_EQ(s.label_frequency_quantiles.back().second, 3);
}

}  // namespace xmc
