// xrlinear's parts without torch: PIFA vectors, the label tree, liblinear rankers and beam search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/core/error.h"
#include "engine/method/xrlinear/beam_search.h"
#include "engine/method/xrlinear/given_features.h"
#include "engine/method/xrlinear/label_tree.h"
#include "engine/method/xrlinear/neighbour_votes.h"
#include "engine/method/xrlinear/paired_tokenizer.h"
#include "engine/method/xrlinear/pifa.h"
#include "engine/method/xrlinear/score_fusion.h"
#include "engine/method/xrlinear/tree_ensemble.h"
#include "engine/method/xrlinear/tree_rankers.h"

namespace xmc {
namespace {

CsrMatrix dense_rows(const std::vector<std::vector<float>>& rows) {
  CsrMatrix m;
  m.rows = 0;
  m.cols = rows.empty() ? 0 : static_cast<std::int64_t>(rows[0].size());
  for (const auto& row : rows) {
    std::vector<std::int32_t> cols;
    std::vector<float> vals;
    for (std::size_t c = 0; c < row.size(); ++c)
      if (row[c] != 0) {
        cols.push_back(static_cast<std::int32_t>(c));
        vals.push_back(row[c]);
      }
    m.append_row(cols, vals);
  }
  return m;
}

// Label 0 has queries (3, 4) and (1, 0): their unit rows sum to (1.6, 0.8), normalised (0.8944, 0.4472).
// Label 1 has (1, 0) alone; label 2 has none: an empty row.
TEST(Pifa, LabelVectorsAreNormalisedSumsOfUnitQueryRows) {
  const CsrMatrix labels = csr_from_rows({{0}, {0, 1}}, 3);
  const CsrMatrix features = dense_rows({{3, 4}, {1, 0}});
  const CsrMatrix z = pifa_label_vectors(labels, features);
  ASSERT_EQ(z.rows, 3);
  ASSERT_EQ(z.row_size(0), 2);
  EXPECT_NEAR(z.row_values(0)[0], 1.6 / std::sqrt(3.2), 1e-6);
  EXPECT_NEAR(z.row_values(0)[1], 0.8 / std::sqrt(3.2), 1e-6);
  ASSERT_EQ(z.row_size(1), 1);
  EXPECT_NEAR(z.row_values(1)[0], 1.0, 1e-6);
  EXPECT_EQ(z.row_size(2), 0);
  EXPECT_THROW(pifa_label_vectors(csr_from_rows({{0}}, 3), features), Error);
}

std::vector<std::int64_t> cluster_sizes(const LabelTree& tree) {
  const auto& leaves = tree.child_offsets.back();
  std::vector<std::int64_t> sizes;
  for (std::size_t j = 0; j + 1 < leaves.size(); ++j) sizes.push_back(leaves[j + 1] - leaves[j]);
  return sizes;
}

TEST(LabelTree, SplitsTwoObviousGroupsApart) {
  // Labels 0, 2, 4, 6 point along feature 0, the others along feature 1.
  std::vector<std::vector<float>> rows;
  for (int l = 0; l < 8; ++l) rows.push_back(l % 2 == 0 ? std::vector<float>{1, 0.01F * static_cast<float>(l)} : std::vector<float>{0.01F * static_cast<float>(l), 1});
  for (auto& row : rows) {
    const float n = std::hypot(row[0], row[1]);
    row[0] /= n;
    row[1] /= n;
  }
  const LabelTree tree = build_label_tree(dense_rows(rows), {.branching = 2, .max_leaf = 4});
  ASSERT_EQ(tree.ranker_levels(), 2);
  EXPECT_EQ(cluster_sizes(tree), (std::vector<std::int64_t>{4, 4}));
  std::vector<std::int32_t> first(tree.labels.begin(), tree.labels.begin() + 4);
  std::sort(first.begin(), first.end());
  EXPECT_TRUE(first == (std::vector<std::int32_t>{0, 2, 4, 6}) || first == (std::vector<std::int32_t>{1, 3, 5, 7}));
  check_label_tree(tree, 8);
}

TEST(LabelTree, LevelsTakeTheBinaryDepthsByBranching) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> rows(1000, std::vector<float>(8));
  for (auto& row : rows) {
    float n = 0;
    for (float& v : row) {
      v = normal(rng);
      n += v * v;
    }
    for (float& v : row) v /= std::sqrt(n);
  }
  const CsrMatrix vectors = dense_rows(rows);
  // 1000 labels, leaves of at most 100: four halvings give 16 clusters of 62 or 63 labels.
  const LabelTree wide = build_label_tree(vectors, {.branching = 16, .max_leaf = 100});
  ASSERT_EQ(wide.ranker_levels(), 2);
  EXPECT_EQ(wide.nodes_at(1), 16);
  for (const std::int64_t size : cluster_sizes(wide)) EXPECT_TRUE(size == 62 || size == 63) << size;
  check_label_tree(wide, 1000);
  // Branching 4: the binary depths 2 and 4 are levels (4 and 16 nodes), then the labels.
  const LabelTree narrow = build_label_tree(vectors, {.branching = 4, .max_leaf = 100});
  ASSERT_EQ(narrow.ranker_levels(), 3);
  EXPECT_EQ(narrow.nodes_at(1), 4);
  EXPECT_EQ(narrow.nodes_at(2), 16);
  // Branching 8 over depth 4: the first level takes the remainder (depth 1: 2 nodes), then 3 more (16 nodes).
  const LabelTree odd = build_label_tree(vectors, {.branching = 8, .max_leaf = 100});
  ASSERT_EQ(odd.ranker_levels(), 3);
  EXPECT_EQ(odd.nodes_at(1), 2);
  EXPECT_EQ(odd.nodes_at(2), 16);
  // Few labels: one level, the root's children are the labels.
  const LabelTree flat = build_label_tree(dense_rows({{1, 0}, {0, 1}}), {});
  ASSERT_EQ(flat.ranker_levels(), 1);
  EXPECT_EQ(flat.nodes_at(1), 2);
  EXPECT_THROW(build_label_tree(vectors, {.branching = 6}), ConfigError);
  EXPECT_THROW(build_label_tree(vectors, {.max_leaf = 0}), ConfigError);
}

TEST(LabelTree, DamagedTreesAreRefused) {
  LabelTree tree = build_label_tree(dense_rows({{1, 0}, {0, 1}, {1, 1}}), {.branching = 2, .max_leaf = 1});
  check_label_tree(tree, 3);
  LabelTree twice = tree;
  twice.labels[1] = twice.labels[0];
  EXPECT_THROW(check_label_tree(twice, 3), Error);
  LabelTree short_offsets = tree;
  short_offsets.child_offsets[0].pop_back();
  EXPECT_THROW(check_label_tree(short_offsets, 3), Error);
  EXPECT_THROW(check_label_tree(tree, 4), Error);
}

// 32 labels, each with a feature of its own (feature l) and one shared by its group of eight (32 + l / 8).
// A training query has two labels of one group; a test query is one label's own feature.
struct Separable {
  CsrMatrix features, labels, test;
};
Separable separable() {
  Separable s;
  std::vector<std::vector<float>> rows;
  std::vector<std::vector<std::int32_t>> positives;
  for (int i = 0; i < 400; ++i) {
    const int a = i % 32;
    const int b = (a / 8) * 8 + (i / 32 + a + 1) % 8;
    std::vector<float> row(36, 0);
    row[static_cast<std::size_t>(a)] = 1;
    row[static_cast<std::size_t>(b)] = 1;
    row[32 + static_cast<std::size_t>(a / 8)] = 1;
    rows.push_back(row);
    positives.push_back({a, b});
  }
  s.features = dense_rows(rows);
  s.labels = csr_from_rows(positives, 32);
  std::vector<std::vector<float>> test;
  for (int l = 0; l < 32; ++l) {
    std::vector<float> row(36, 0);
    row[static_cast<std::size_t>(l)] = 1;
    test.push_back(row);
  }
  s.test = dense_rows(test);
  return s;
}

TreeRankers train_all(const LabelTree& tree, const Separable& s, bool backwards) {
  RankerTraining training(tree, s.features, s.labels);
  TreeRankers rankers = empty_rankers(tree);
  std::vector<std::int64_t> order(static_cast<std::size_t>(training.num_units()));
  std::iota(order.begin(), order.end(), 0);
  if (backwards) std::reverse(order.begin(), order.end());
  for (const std::int64_t unit : order) {
    const double loss = training.train(unit, {.seed = 5}, rankers);
    EXPECT_GE(loss, 0);
    EXPECT_TRUE(std::isfinite(loss));
  }
  return rankers;
}

TEST(TreeRankers, LearnSeparableLabelsAndBeamSearchFindsEach) {
  const Separable s = separable();
  const LabelTree tree = build_label_tree(pifa_label_vectors(s.labels, s.features), {.branching = 2, .max_leaf = 8});
  ASSERT_EQ(tree.ranker_levels(), 3);  // 2 and 4 clusters, then the labels
  // A unit per parent node: the root, its 2 clusters and their 4.
  EXPECT_EQ(ranker_unit_count(tree), 1 + 2 + 4);
  EXPECT_EQ(RankerTraining(tree, s.features, s.labels).num_units(), ranker_unit_count(tree));
  const TreeRankers rankers = train_all(tree, s, false);
  const BeamSearch search(tree, rankers, {.beam = 2}, 36);
  std::vector<std::int64_t> labels(32 * 3);
  std::vector<float> scores(32 * 3);
  search.rank(s.test, 0, 32, 3, labels.data(), scores.data());
  for (int l = 0; l < 32; ++l) {
    EXPECT_EQ(labels[static_cast<std::size_t>(l) * 3], l) << "test query of label " << l;
    EXPECT_GE(scores[static_cast<std::size_t>(l) * 3], scores[static_cast<std::size_t>(l) * 3 + 1]);
    EXPECT_GT(scores[static_cast<std::size_t>(l) * 3], 0);
    EXPECT_LE(scores[static_cast<std::size_t>(l) * 3], 1);
  }
}

TEST(TreeRankers, AClassifierIsTheSameWhateverOrderTheUnitsTrainIn) {
  const Separable s = separable();
  const LabelTree tree = build_label_tree(pifa_label_vectors(s.labels, s.features), {.branching = 2, .max_leaf = 8});
  const TreeRankers forwards = train_all(tree, s, false);
  const TreeRankers backwards = train_all(tree, s, true);
  for (std::size_t t = 0; t < forwards.size(); ++t)
    for (std::size_t j = 0; j < forwards[t].size(); ++j) {
      EXPECT_EQ(forwards[t][j].features, backwards[t][j].features) << "level " << t << " node " << j;
      EXPECT_EQ(forwards[t][j].weights, backwards[t][j].weights) << "level " << t << " node " << j;
      EXPECT_EQ(forwards[t][j].bias, backwards[t][j].bias);
    }
  EXPECT_THROW(check_ranker_options({.loss = "hinge"}), ConfigError);
  EXPECT_THROW(check_ranker_options({.cost = 0}), ConfigError);
  EXPECT_THROW(check_ranker_options({.prune = -1}), ConfigError);
}

// Root -> clusters A (labels 0, 1) and B (label 2), one feature, query x = 1. Margins: A 0.5, B -1; labels
// 2, 0 and 3. l3-hinge: A exp(-0.5^3) = 0.882497, B exp(-8) = 0.000335; label 0 exp(0) = 1, label 1 exp(-1).
TEST(BeamSearch, ScoresAreProductsOfTransformedMarginsDownThePath) {
  LabelTree tree;
  tree.child_offsets = {{0, 2}, {0, 2, 3}};
  tree.labels = {0, 1, 2};
  TreeRankers rankers(2);
  rankers[0] = {{{0}, {0.5F}, 0}, {{0}, {-1.0F}, 0}};
  rankers[1] = {{{0}, {2.0F}, 0}, {{}, {}, 0}, {{0}, {3.0F}, 0}};
  const CsrMatrix query = dense_rows({{1}});
  std::vector<std::int64_t> labels(3);
  std::vector<float> scores(3);
  BeamSearch(tree, rankers, {.beam = 2}, 1).rank(query, 0, 1, 3, labels.data(), scores.data());
  EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_NEAR(scores[0], 0.882497, 1e-6);
  EXPECT_NEAR(scores[1], 0.882497 * 0.367879, 1e-6);
  EXPECT_NEAR(scores[2], 0.000335, 1e-6);
  // A beam of one never opens B: its label is not ranked (-1, score 0).
  BeamSearch(tree, rankers, {.beam = 1}, 1).rank(query, 0, 1, 3, labels.data(), scores.data());
  EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 1, -1}));
  EXPECT_EQ(scores[2], 0);
  // sigmoid: A 1 / (1 + e^-0.5) = 0.622459, label 0 1 / (1 + e^-2) = 0.880797.
  BeamSearch(tree, rankers, {.beam = 2, .transform = "sigmoid"}, 1).rank(query, 0, 1, 1, labels.data(), scores.data());
  EXPECT_EQ(labels[0], 0);
  EXPECT_NEAR(scores[0], 0.622459 * 0.880797, 1e-6);
  // Path scores reach every label, the beam's or not: label 2 under B is exp(-8) · 1 even with a beam of one.
  const std::vector<std::int64_t> all{2, 0, 1};
  const std::vector<float> paths = BeamSearch(tree, rankers, {.beam = 1}, 1).path_scores(query, 0, all);
  EXPECT_NEAR(paths[0], 0.000335, 1e-6);
  EXPECT_NEAR(paths[1], 0.882497, 1e-6);
  EXPECT_NEAR(paths[2], 0.882497 * 0.367879, 1e-6);
  const std::vector<std::int64_t> outside{3};
  EXPECT_THROW(BeamSearch(tree, rankers, {}, 1).path_scores(query, 0, outside), Error);
  EXPECT_THROW(BeamSearch(tree, rankers, {.beam = 0}, 1), ConfigError);
  EXPECT_THROW(BeamSearch(tree, rankers, {.transform = "softmax"}, 1), ConfigError);
  EXPECT_THROW(BeamSearch(tree, rankers, {}, 2).rank(query, 0, 1, 1, labels.data(), scores.data()), Error) << "1 feature for 2";
}


// Two trees over labels 0, 1, 2. The first is the one above (path scores 0.882497, 0.324652, 0.000335). The second
// puts label 2 alone under C (margin 1: exp(0) = 1) and 0, 1 under D (margin 0: exp(-1) = 0.367879), with label
// margins 1, 1, -1: paths 2: 1, 0: 0.367879, 1: 0.367879 · exp(-8) = 0.000123. Means: 0: 0.625188, 2: 0.500168,
// 1: 0.162388.
TEST(TreeEnsemble, LabelsScoreTheMeanOfTheirPathScoresOverTheUnionOfTheBeams) {
  std::vector<TreeModel> trees(2);
  trees[0].tree.child_offsets = {{0, 2}, {0, 2, 3}};
  trees[0].tree.labels = {0, 1, 2};
  trees[0].rankers = {{{{0}, {0.5F}, 0}, {{0}, {-1.0F}, 0}}, {{{0}, {2.0F}, 0}, {{}, {}, 0}, {{0}, {3.0F}, 0}}};
  trees[1].tree.child_offsets = {{0, 2}, {0, 1, 3}};
  trees[1].tree.labels = {2, 0, 1};
  trees[1].rankers = {{{{0}, {1.0F}, 0}, {{}, {}, 0}}, {{{0}, {1.0F}, 0}, {{0}, {1.0F}, 0}, {{0}, {-1.0F}, 0}}};
  const CsrMatrix query = dense_rows({{1}});
  const TreeEnsembleSearch both(trees, {.beam = 2}, 1);
  const std::vector<std::int64_t> all{0, 1, 2};
  const std::vector<float> mean = both.path_scores(query, 0, all);
  EXPECT_NEAR(mean[0], 0.625188, 1e-6);
  EXPECT_NEAR(mean[1], 0.162388, 1e-6);
  EXPECT_NEAR(mean[2], 0.500168, 1e-6);
  std::vector<std::int64_t> labels(3);
  std::vector<float> scores(3);
  both.rank(query, 0, 1, 3, labels.data(), scores.data());
  EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 2, 1}));
  EXPECT_NEAR(scores[1], 0.500168, 1e-6);
  // Beams of one: the first tree keeps A (labels 0, 1), the second C (label 2); their union is ranked by the means.
  labels.assign(2, 0);
  scores.assign(2, 0);
  TreeEnsembleSearch(trees, {.beam = 1}, 1).rank(query, 0, 1, 2, labels.data(), scores.data());
  EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 2}));
  // One tree ranks as its beam search does.
  const std::vector<TreeModel> first(trees.begin(), trees.begin() + 1);
  std::vector<std::int64_t> alone(3), beam(3);
  std::vector<float> alone_scores(3), beam_scores(3);
  TreeEnsembleSearch(first, {.beam = 1}, 1).rank(query, 0, 1, 3, alone.data(), alone_scores.data());
  BeamSearch(first[0].tree, first[0].rankers, {.beam = 1}, 1).rank(query, 0, 1, 3, beam.data(), beam_scores.data());
  EXPECT_EQ(alone, beam);
  EXPECT_EQ(alone_scores, beam_scores);
  EXPECT_THROW(TreeEnsembleSearch({}, {}, 1), Error);
  std::vector<TreeModel> mismatched = trees;
  mismatched[1].tree.labels = {2, 0};
  EXPECT_THROW(TreeEnsembleSearch(mismatched, {}, 1), Error);
}

/// Splits on spaces; a word's id is its length, plus `offset`; "?" is unknown (-1).
class WordLengthTokenizer final : public TextTokenizer {
 public:
  explicit WordLengthTokenizer(std::int32_t offset) : offset_(offset) {}
  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override {
    TokenizedCorpus out;
    for (const std::string& text : texts) {
      std::vector<std::int32_t> ids;
      std::size_t start = 0;
      while (start < text.size()) {
        std::size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        if (end > start) ids.push_back(text.substr(start, end - start) == "?" ? -1 : offset_ + static_cast<std::int32_t>(end - start));
        start = end + 1;
      }
      out.append(ids);
    }
    return out;
  }
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override {
    return std::count_if(tokens.begin(), tokens.end(), [](std::int32_t t) { return t >= 0; });
  }

 private:
  std::int32_t offset_;
};

TEST(PairedTokenizer, RowsHoldBothTokenizationsAndSplitBackIntoEach) {
  const WordLengthTokenizer a(0), b(100);
  const PairedTokenizer paired(a, b);
  const TokenizedCorpus corpus = paired.tokenize({"ab cde", "", "x ? yy"});
  ASSERT_EQ(corpus.size(), 3);
  // [count, first's tokens..., second's tokens...]
  EXPECT_EQ(std::vector<std::int32_t>(corpus.tokens(0).begin(), corpus.tokens(0).end()), (std::vector<std::int32_t>{2, 2, 3, 102, 103}));
  EXPECT_EQ(std::vector<std::int32_t>(corpus.tokens(1).begin(), corpus.tokens(1).end()), (std::vector<std::int32_t>{0}));
  EXPECT_EQ(std::vector<std::int32_t>(corpus.tokens(2).begin(), corpus.tokens(2).end()), (std::vector<std::int32_t>{3, 1, -1, 2, 101, -1, 102}));
  EXPECT_EQ(paired.known_tokens(corpus.tokens(2)), 4) << "two of each side's three";
  const auto [first, second] = split_paired(corpus, 1, 3);
  ASSERT_EQ(first.size(), 2);
  ASSERT_EQ(second.size(), 2);
  EXPECT_TRUE(first.tokens(0).empty());
  EXPECT_TRUE(second.tokens(0).empty());
  EXPECT_EQ(std::vector<std::int32_t>(first.tokens(1).begin(), first.tokens(1).end()), (std::vector<std::int32_t>{1, -1, 2}));
  EXPECT_EQ(std::vector<std::int32_t>(second.tokens(1).begin(), second.tokens(1).end()), (std::vector<std::int32_t>{101, -1, 102}));
}

TEST(PairedTokenizer, GivenFeaturesFollowTheirRowsToTheFirstTokenization) {
  const WordLengthTokenizer a(0), b(100);
  const PairedTokenizer paired(a, b);
  TokenizedCorpus corpus = paired.tokenize({"ab", "cde", "x"});
  corpus.features = std::make_shared<const CsrMatrix>(csr_from_rows({{0}, {1, 2}, {3}}, 4));
  const auto [first, second] = split_paired(corpus, 1, 3);
  ASSERT_TRUE(first.features);
  EXPECT_EQ(first.features->rows, 2);
  EXPECT_EQ(first.features->indices, (std::vector<std::int32_t>{1, 2, 3})) << "rows 1 and 2";
  EXPECT_FALSE(second.features) << "the dense side has no use for them";
}

// Given features: rows scaled to unit length; 3-4-5 and 1-1 triangles worked by hand.
TEST(GivenFeatures, RowsAreScaledToUnitLengthAndEmptyRowsStayEmpty) {
  CsrMatrix m;
  m.cols = 3;
  m.append_row(std::vector<std::int32_t>{0, 2}, std::vector<float>{3.0f, 4.0f});
  m.append_row(std::vector<std::int32_t>{}, std::vector<float>{});
  m.append_row(std::vector<std::int32_t>{1, 2}, std::vector<float>{1.0f, 1.0f});
  const CsrMatrix unit = l2_normalized_rows(m);
  EXPECT_EQ(unit.indices, m.indices);
  ASSERT_EQ(unit.values.size(), 4u);
  EXPECT_FLOAT_EQ(unit.values[0], 0.6f);
  EXPECT_FLOAT_EQ(unit.values[1], 0.8f);
  EXPECT_FLOAT_EQ(unit.values[2], static_cast<float>(1 / std::sqrt(2.0)));
  EXPECT_EQ(unit.row_size(1), 0);
}

// A free text through the given features' names: a binary row of the named words, L2-normalised; names that are
// not one word, repeat one, or are missing get placeholders no text reaches.
TEST(GivenFeatures, FreeTextsAreFeaturizedThroughTheFeaturesNames) {
  const TfidfVectorizer v = vectorizer_over_feature_names({"Alpha", "beta", "two words", "beta", "x-y"}, 6);
  ASSERT_EQ(v.num_features(), 6);
  EXPECT_EQ(v.feature(0), "alpha") << "case-folded as texts are";
  EXPECT_EQ(v.feature(1), "beta");
  for (const std::int32_t id : {2, 3, 4, 5}) EXPECT_TRUE(is_unnamed_feature(v.feature(id))) << v.feature(id);
  EXPECT_FALSE(is_unnamed_feature(v.feature(0)));
  const CsrMatrix rows = v.transform({"beta and ALPHA", "gamma", "alpha alpha"});
  EXPECT_EQ(rows.indices, (std::vector<std::int32_t>{0, 1, 0}));
  const float half = static_cast<float>(1 / std::sqrt(2.0));
  EXPECT_FLOAT_EQ(rows.values[0], half);  // one of each: 1 and 1 before scaling
  EXPECT_FLOAT_EQ(rows.values[1], half);
  EXPECT_EQ(rows.row_size(1), 0);
  EXPECT_FLOAT_EQ(rows.values[2], 1.0f);  // 1 + ln 2, alone in its row
  EXPECT_THROW(TfidfVectorizer::with_unit_idf({"a", "a"}), Error);
  EXPECT_THROW(TfidfVectorizer::with_unit_idf({"a b"}), Error);
}

TEST(PairedTokenizer, ARowThatIsNotAPairIsRefusedByItsNumber) {
  TokenizedCorpus corpus;
  corpus.append(std::vector<std::int32_t>{1, 5, 6});
  corpus.append(std::vector<std::int32_t>{4, 5, 6});  // claims 4 first tokens, has 2 tokens after the count
  corpus.append(std::vector<std::int32_t>{});
  EXPECT_NO_THROW(split_paired(corpus, 0, 1));
  try {
    split_paired(corpus, 0, 2);
    FAIL() << "row 1 was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 is not a pair of tokenizations (its first count 4 runs past its 2 tokens)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(split_paired(corpus, 2, 3), Error);
  EXPECT_THROW(split_paired(corpus, 0, 4), Error);
}

// Hand-worked: dense scores 2, 1, 3 scale to 0.5, 0, 1; with alpha 0.5 the labels score
// 7: 0.25 + 0.25 = 0.5, 3: 0.45 + 0 = 0.45, 9: 0 + 0.5 = 0.5.
TEST(ScoreFusion, WeighsTheTreeScoreWithTheMinMaxScaledDenseScore) {
  const std::vector<std::int64_t> labels{7, 3, 9};
  const std::vector<float> tree{0.5f, 0.9f, 0.0f}, dense{2.0f, 1.0f, 3.0f};
  auto ids = [](const std::vector<FusedLabel>& fused) {
    std::vector<std::int64_t> out;
    for (const FusedLabel& f : fused) out.push_back(f.label);
    return out;
  };
  const auto half = fuse_scores(labels, tree, dense, 0.5, 3);
  EXPECT_EQ(ids(half), (std::vector<std::int64_t>{7, 9, 3})) << "7 and 9 tie at 0.5: the smaller id first";
  EXPECT_FLOAT_EQ(half[0].score, 0.5f);
  EXPECT_FLOAT_EQ(half[1].score, 0.5f);
  EXPECT_FLOAT_EQ(half[2].score, 0.45f);
  EXPECT_EQ(ids(fuse_scores(labels, tree, dense, 0.5, 2)), (std::vector<std::int64_t>{7, 9}));
  EXPECT_EQ(ids(fuse_scores(labels, tree, dense, 1.0, 3)), (std::vector<std::int64_t>{3, 7, 9})) << "the tree alone";
  EXPECT_EQ(ids(fuse_scores(labels, tree, dense, 0.0, 3)), (std::vector<std::int64_t>{9, 7, 3})) << "the dense run alone";
  const std::vector<float> flat{1.0f, 1.0f, 1.0f};
  const auto no_spread = fuse_scores(labels, tree, flat, 0.5, 3);
  EXPECT_EQ(ids(no_spread), (std::vector<std::int64_t>{3, 7, 9})) << "equal dense scores add nothing";
  EXPECT_FLOAT_EQ(no_spread[0].score, 0.45f);
  EXPECT_TRUE(fuse_scores({}, {}, {}, 0.5, 3).empty());
  EXPECT_THROW(fuse_scores(labels, tree, std::vector<float>{1.0f}, 0.5, 3), Error);
}

// Hand-worked: tree scores 0.02, 0.01, 0 are 1, 0.5, 0 of the best; shares 0.2, 0.8, 1. With alpha 0.75 the labels
// score 4: 0.75 + 0.05 = 0.8, 6: 0.375 + 0.2 = 0.575, 8: 0 + 0.25 = 0.25; with alpha 0.25, 8: 0.75 beats 6: 0.725.
TEST(ScoreFusion, WeighsTreeScoresRelativeToTheBestWithNeighbourShares) {
  const std::vector<std::int64_t> labels{6, 4, 8};
  const std::vector<float> tree{0.01f, 0.02f, 0.0f}, shares{0.8f, 0.2f, 1.0f};
  const auto mostly_tree = fuse_with_shares(labels, tree, shares, 0.75, 3);
  ASSERT_EQ(mostly_tree.size(), 3u);
  EXPECT_EQ(mostly_tree[0].label, 4);
  EXPECT_FLOAT_EQ(mostly_tree[0].score, 0.8f);
  EXPECT_EQ(mostly_tree[1].label, 6);
  EXPECT_FLOAT_EQ(mostly_tree[1].score, 0.575f);
  EXPECT_EQ(mostly_tree[2].label, 8);
  EXPECT_FLOAT_EQ(mostly_tree[2].score, 0.25f);
  const auto mostly_shares = fuse_with_shares(labels, tree, shares, 0.25, 2);
  ASSERT_EQ(mostly_shares.size(), 2u);
  EXPECT_EQ(mostly_shares[0].label, 8);
  EXPECT_FLOAT_EQ(mostly_shares[0].score, 0.75f);
  EXPECT_EQ(mostly_shares[1].label, 6);
  EXPECT_FLOAT_EQ(mostly_shares[1].score, 0.725f);
  const auto scaled = fuse_with_shares(labels, std::vector<float>{0.5f, 1.0f, 0.0f}, shares, 0.75, 3);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(scaled[i].score, mostly_tree[i].score) << "only the tree scores' ratios count";
  const auto no_tree = fuse_with_shares(labels, std::vector<float>{0, 0, 0}, shares, 0.75, 3);
  EXPECT_EQ(no_tree[0].label, 8) << "all tree scores 0: the shares decide";
  EXPECT_FLOAT_EQ(no_tree[0].score, 0.25f);
  EXPECT_TRUE(fuse_with_shares({}, {}, {}, 0.5, 3).empty());
  EXPECT_THROW(fuse_with_shares(labels, std::vector<float>{1.0f}, shares, 0.5, 3), Error);
  EXPECT_THROW(fuse_with_shares(labels, tree, std::vector<float>{1.0f}, 0.5, 3), Error);
}

// Hand-worked: unit training rows r0 = (1, 0, 0) {0}, r1 = (0.6, 0.8, 0) {0, 1}, r2 = (0, 1, 0) {2}, r3 = (0, 0, 1) {1}.
// The query (0.8, 0.6, 0) is 0.8 from r0, 0.96 from r1, 0.6 from r2 and 0 from r3. Two neighbours (r1, r0), of
// similarity 1.76 in all, give label 0 (0.96 + 0.8) / 1.76 = 1 and label 1 0.96 / 1.76 = 0.5455; a third (r2;
// 2.36 in all) gives 1.76 / 2.36 = 0.7458, 0.96 / 2.36 = 0.4068 and label 2 0.6 / 2.36 = 0.2542; r3 never votes
// (nothing shared).
TEST(NeighbourVotes, LabelsScoreTheirShareOfTheNearestRowsSimilarities) {
  const CsrMatrix train = dense_rows({{1, 0, 0}, {0.6f, 0.8f, 0}, {0, 1, 0}, {0, 0, 1}});
  const CsrMatrix labels = csr_from_rows({{0}, {0, 1}, {2}, {1}}, 4);
  const NeighbourVotes knn(train, labels);
  const CsrMatrix queries = dense_rows({{0.8f, 0.6f, 0}, {0, 0, 1}, {0, 0, 0}});
  NeighbourVotes::Scratch scratch;
  auto expect = [](const std::vector<LabelVote>& got, const std::vector<std::pair<std::int64_t, float>>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].label, want[i].first) << what << ", place " << i;
      EXPECT_NEAR(got[i].score, want[i].second, 1e-6) << what << ", place " << i;
    }
  };
  expect(knn.votes(queries, 0, 2, 10, scratch), {{0, 1.0f}, {1, 0.96f / 1.76f}}, "two neighbours");
  expect(knn.votes(queries, 0, 3, 10, scratch), {{0, 1.76f / 2.36f}, {1, 0.96f / 2.36f}, {2, 0.6f / 2.36f}}, "three neighbours");
  expect(knn.votes(queries, 0, 100, 10, scratch), {{0, 1.76f / 2.36f}, {1, 0.96f / 2.36f}, {2, 0.6f / 2.36f}}, "rows sharing no word never vote");
  expect(knn.votes(queries, 0, 3, 1, scratch), {{0, 1.76f / 2.36f}}, "the best label alone");
  expect(knn.votes(queries, 1, 3, 10, scratch), {{1, 1.0f}}, "scratch reused: the previous query left nothing behind");
  expect(knn.votes(queries, 2, 3, 10, scratch), {}, "a query with no features");
  expect(knn.votes(queries, 0, 0, 10, scratch), {}, "no neighbours");
  // Ties: rows a = (1, 0) {1} and b = (0, 1) {0} are equally near (0, 0.7071) to (0.7071, 0.7071): one
  // neighbour is the smaller row, a; two give labels 1 and 0 equal votes, the smaller id first.
  const NeighbourVotes pair(dense_rows({{1, 0}, {0, 1}}), csr_from_rows({{1}, {0}}, 2));
  const CsrMatrix diagonal = dense_rows({{0.70710678f, 0.70710678f}});
  expect(pair.votes(diagonal, 0, 1, 10, scratch), {{1, 1.0f}}, "one neighbour of two equally near: the smaller row");
  expect(pair.votes(diagonal, 0, 2, 10, scratch), {{0, 0.5f}, {1, 0.5f}}, "equal votes: the smaller label first");
  EXPECT_THROW(NeighbourVotes(train, csr_from_rows({{0}}, 4)), Error);
}

}  // namespace
}  // namespace xmc
