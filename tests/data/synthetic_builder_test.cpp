// `xmc dataset build synthetic`: the shapes asked for, the same files from the same seed, learnable rows, and
// options out of range refused by name.
#include "engine/data/synthetic_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>

#include "engine/core/error.h"

namespace xmc {
namespace {

std::set<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

TEST(SyntheticDataset, HasTheShapeAskedForAndEveryQuerySharesWordsWithEachOfItsLabels) {
  const SyntheticBuildOptions options{.labels = 500, .train = 4000, .test = 800, .labels_per_query = 4.0, .label_words = 5, .query_words = 9, .seed = 3};
  const Dataset d = build_synthetic_dataset(options);
  ASSERT_EQ(d.num_labels(), 500);
  ASSERT_EQ(d.num_train(), 4000);
  ASSERT_EQ(d.num_test(), 800);
  ASSERT_EQ(d.train_text.size(), 4000u);
  ASSERT_EQ(d.label_text.size(), 500u);
  for (const std::string& label : d.label_text) EXPECT_EQ(std::count(label.begin(), label.end(), ' '), 4) << label;
  // 1 + a geometric count of mean 4: the sample mean of 4000 rows lies within 5 % (sd of the mean ~0.055).
  const double mean = static_cast<double>(d.train_labels.indptr.back()) / 4000.0;
  EXPECT_NEAR(mean, 4.0, 0.2);
  for (std::int64_t r = 0; r < d.num_train(); ++r) {
    const auto labels = d.train_labels.row_indices(r);
    ASSERT_FALSE(labels.empty());
    EXPECT_TRUE(std::is_sorted(labels.begin(), labels.end()));
    EXPECT_EQ(std::adjacent_find(labels.begin(), labels.end()), labels.end()) << "row " << r << " names a label twice";
    const std::set<std::string> query = words_of(d.train_text[static_cast<std::size_t>(r)]);
    EXPECT_GE(static_cast<std::int64_t>(query.size()), std::min<std::int64_t>(9, 2)) << d.train_text[static_cast<std::size_t>(r)];
    for (const auto l : labels) {
      const std::set<std::string> label = words_of(d.label_text[static_cast<std::size_t>(l)]);
      std::vector<std::string> shared;
      std::set_intersection(query.begin(), query.end(), label.begin(), label.end(), std::back_inserter(shared));
      EXPECT_FALSE(shared.empty()) << "row " << r << " shares no word with its label " << l;
    }
  }
  // Popularity is skewed but not degenerate: with exponent 0.7 over 500 labels the most popular label is drawn
  // with probability 1 / sum(r^-0.7, r = 1..500) ≈ 0.054 a draw, the 250th ≈ 0.054 · 250^-0.7 ≈ 0.0011.
  std::vector<std::int64_t> counts = d.train_labels.column_counts();
  std::sort(counts.rbegin(), counts.rend());
  const double draws = static_cast<double>(d.train_labels.indptr.back());
  EXPECT_NEAR(static_cast<double>(counts[0]) / draws, 0.054, 0.012);
  EXPECT_LT(static_cast<double>(counts[249]) / draws, 0.004);
}

TEST(SyntheticDataset, TheSameSeedGivesTheSameDatasetAndAnotherSeedAnother) {
  const SyntheticBuildOptions options{.labels = 200, .train = 300, .test = 50, .seed = 9};
  const Dataset a = build_synthetic_dataset(options), b = build_synthetic_dataset(options);
  EXPECT_EQ(a.train_text, b.train_text);
  EXPECT_EQ(a.label_text, b.label_text);
  EXPECT_EQ(a.test_labels.indices, b.test_labels.indices);
  SyntheticBuildOptions other = options;
  other.seed = 10;
  EXPECT_NE(build_synthetic_dataset(other).train_text, a.train_text);
  // Pinned (read once from `xmc dataset build synthetic --labels 200 --train 300 --test 50 --seed 9`): a change of
  // generator or arithmetic would silently change every curve measured on these sets, so it must show here.
  EXPECT_EQ(a.label_text[0], "meho bize golu bize vaka baba");
  EXPECT_EQ(a.train_text[0], "kebe kibo baba fobo rugi soho dihe gefa hihe zado");
  EXPECT_EQ(std::vector<std::int32_t>(a.train_labels.row_indices(0).begin(), a.train_labels.row_indices(0).end()), std::vector<std::int32_t>{104});
}

// With topics a label's 2nd and 3rd words are two of its topic's 4 words: across all labels they come from at
// most 4 T words, and joining the two words of every label groups the words into (at most) the topics. A query
// draws each label after its first from the first one's topic with probability 1/2, and the other label shares
// one of its 2 topic words with probability 5/6 then, so a query of two or more labels holds two labels of one
// topic with probability at least 1/2 · 5/6 ≈ 0.42 (by chance alone, with 50 topics, about 0.1).
TEST(SyntheticDataset, WithTopicsLabelsOfATopicShareWordsAndAQuerysLabelsAreRelated) {
  const SyntheticBuildOptions options{.labels = 500, .train = 3000, .test = 100, .labels_per_query = 3.0, .topics = 50, .seed = 5};
  const Dataset d = build_synthetic_dataset(options);
  std::map<std::string, std::string> parent;
  const std::function<std::string(const std::string&)> root = [&](const std::string& w) {
    return parent[w] == w ? w : parent[w] = root(parent[w]);
  };
  std::vector<std::string> second_word;
  for (const std::string& text : d.label_text) {
    std::istringstream in(text);
    std::string rare, a, b;
    in >> rare >> a >> b;
    ASSERT_NE(a, b) << text;
    for (const auto& w : {a, b})
      if (!parent.count(w)) parent[w] = w;
    parent[root(a)] = root(b);
    second_word.push_back(a);
  }
  EXPECT_LE(parent.size(), 200u) << "topic words: 4 per topic";
  std::int64_t related = 0, multi = 0;
  for (std::int64_t r = 0; r < d.num_train(); ++r) {
    const auto labels = d.train_labels.row_indices(r);
    if (labels.size() < 2) continue;
    ++multi;
    std::set<std::string> topics;
    for (const auto l : labels) topics.insert(root(second_word[static_cast<std::size_t>(l)]));
    related += topics.size() < labels.size() ? 1 : 0;
  }
  ASSERT_GT(multi, 1000);
  EXPECT_GE(static_cast<double>(related) / static_cast<double>(multi), 0.4);
}

TEST(SyntheticDataset, OptionsOutOfRangeAreRefusedByName) {
  for (const auto& [options, name] : std::vector<std::pair<SyntheticBuildOptions, std::string>>{
           {{.labels = 1}, "--labels"},
           {{.train = 0}, "--train"},
           {{.test = -3}, "--test"},
           {{.labels_per_query = 0.5}, "--labels-per-query"},
           {{.labels_per_query = std::nan("")}, "--labels-per-query"},
           {{.label_words = 1}, "--label-words"},
           {{.query_words = 0}, "--query-words"},
           {{.vocabulary = 50}, "--vocabulary"},
           {{.zipf = -1}, "--zipf"},
           {{.labels = 100, .topics = 101}, "--topics"},
           {{.topics = -1}, "--topics"},
           {{.label_words = 2, .topics = 10}, "--topics"},
           {{.topics = 10, .image_dim = 8}, "--topics"}}) {
    try {
      build_synthetic_dataset(options);
      ADD_FAILURE() << name << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(name + ": got", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace xmc
