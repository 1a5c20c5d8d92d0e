// xrlinear.choose's parts without torch: features of shorter n-grams read from a longer vectorizer, the
// candidates of a fusion with neighbours, and the choice of n-grams, trees and knn weight on held-out rows.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/method/xrlinear/neighbour_votes.h"
#include "engine/method/xrlinear/ngram_restriction.h"
#include "engine/method/xrlinear/settings_choice.h"
#include "engine/text/tfidf_vectorizer.h"

namespace xmc {
namespace {

const std::vector<std::string> kTexts{"red blue cat", "blue red cat dog", "red blue dog", "green cat red", "blue red", "cat dog"};

TEST(NgramRestriction, UnigramsOfABigramVectorizerAreTheRowsOfAUnigramVectorizer) {
  const TfidfVectorizer bigrams = TfidfVectorizer::fit(kTexts, {.ngrams = 2});
  const TfidfVectorizer unigrams = TfidfVectorizer::fit(kTexts, {.ngrams = 1});
  ASSERT_GT(bigrams.num_features(), unigrams.num_features()) << "the texts repeat some word pairs";
  const NgramRestriction restriction(bigrams, 1);
  EXPECT_TRUE(restriction.drops_features());
  EXPECT_EQ(restriction.num_features(), unigrams.num_features());
  const CsrMatrix expected = unigrams.transform(kTexts);
  const CsrMatrix got = restriction.apply(bigrams.transform(kTexts));
  ASSERT_EQ(got.rows, expected.rows);
  EXPECT_EQ(got.cols, expected.cols);
  EXPECT_EQ(got.indptr, expected.indptr);
  EXPECT_EQ(got.indices, expected.indices) << "the kept features keep the unigram vectorizer's ids";
  for (std::size_t j = 0; j < expected.values.size(); ++j) EXPECT_NEAR(got.values[j], expected.values[j], 1e-6) << "entry " << j;
}

TEST(NgramRestriction, KeepingEveryNgramChangesNothingAndBadLengthsAreRefused) {
  const TfidfVectorizer bigrams = TfidfVectorizer::fit(kTexts, {.ngrams = 2});
  const NgramRestriction all(bigrams, 2);
  EXPECT_FALSE(all.drops_features());
  const CsrMatrix rows = bigrams.transform(kTexts);
  EXPECT_EQ(all.apply(rows).values, rows.values);
  EXPECT_THROW(NgramRestriction(bigrams, 0), Error);
  EXPECT_THROW(NgramRestriction(bigrams, 3), Error);
  CsrMatrix narrow = rows;
  narrow.cols -= 1;
  EXPECT_THROW(NgramRestriction(bigrams, 1).apply(narrow), Error) << "rows of another vectorizer";
  // A text made only of a bigram's words in an order seen once keeps its unigrams; one with no known word stays empty.
  const CsrMatrix empty = NgramRestriction(bigrams, 1).apply(bigrams.transform({"zebra"}));
  EXPECT_EQ(empty.nnz(), 0);
}

// The training rows of NeighbourVotes' hand-worked example (xrlinear_core_test): the query (0.8, 0.6, 0) gets shares
// 0.7458 (label 0), 0.4068 (1) and 0.2542 (2) from three neighbours.
TEST(VotedCandidates, TheBestVotedComeFirstThenTheTreesOthersWithTheirShares) {
  CsrMatrix train;
  train.cols = 3;
  train.append_row(std::vector<std::int32_t>{0}, std::vector<float>{1});
  train.append_row(std::vector<std::int32_t>{0, 1}, std::vector<float>{0.6f, 0.8f});
  train.append_row(std::vector<std::int32_t>{1}, std::vector<float>{1});
  train.append_row(std::vector<std::int32_t>{2}, std::vector<float>{1});
  const NeighbourVotes votes(train, csr_from_rows({{0}, {0, 1}, {2}, {1}}, 6));
  CsrMatrix query;
  query.cols = 3;
  query.append_row(std::vector<std::int32_t>{0, 1}, std::vector<float>{0.8f, 0.6f});
  NeighbourVotes::Scratch scratch;
  VotedCandidates out;
  const std::vector<std::int64_t> tree{2, 1, 5, -1};
  voted_candidates(votes, query, 0, 3, 2, tree, scratch, out);
  EXPECT_EQ(out.labels, (std::vector<std::int64_t>{0, 1, 2, 5})) << "label 1 is voted already; -1 is no candidate";
  ASSERT_EQ(out.shares.size(), 4u);
  EXPECT_NEAR(out.shares[0], 1.76f / 2.36f, 1e-6);
  EXPECT_NEAR(out.shares[1], 0.96f / 2.36f, 1e-6);
  EXPECT_NEAR(out.shares[2], 0.6f / 2.36f, 1e-6) << "a tree candidate keeps the votes it got below the voted top";
  EXPECT_EQ(out.shares[3], 0.0f) << "no neighbour has label 5";
}

/// Texts whose label is an ordered pair of colour words among noise: "red blue" and "blue red" are different labels,
/// which unigrams cannot tell apart and bigrams can (`ordered` true), or the label is the unordered pair (false).
struct PairData {
  std::vector<std::string> texts;
  std::vector<std::vector<std::int32_t>> labels;
};

PairData pair_data(bool ordered, int rows, std::uint64_t seed) {
  const std::vector<std::pair<std::string, std::string>> pairs{{"red", "blue"}, {"blue", "red"}, {"green", "black"},
                                                               {"black", "green"}, {"red", "green"}, {"green", "red"}};
  const std::vector<std::string> noise{"cat", "dog", "fox", "owl", "bee", "ant"};
  std::mt19937_64 rng(seed);
  PairData out;
  for (int i = 0; i < rows; ++i) {
    const auto label = static_cast<std::int32_t>(rng() % pairs.size());
    out.texts.push_back(noise[rng() % noise.size()] + " " + pairs[static_cast<std::size_t>(label)].first + " " +
                        pairs[static_cast<std::size_t>(label)].second + " " + noise[rng() % noise.size()]);
    out.labels.push_back({ordered ? label : label / 2});
  }
  return out;
}

struct ChoiceSetup {
  TfidfVectorizer vectorizer;
  CsrMatrix features, labels, held_features, held_labels;
};

ChoiceSetup setup(const PairData& data, int held_out) {
  ChoiceSetup s;
  s.vectorizer = TfidfVectorizer::fit(data.texts, {.ngrams = 2});
  const auto fit_count = static_cast<std::ptrdiff_t>(data.texts.size()) - held_out;
  const std::vector<std::string> fit_texts(data.texts.begin(), data.texts.begin() + fit_count);
  const std::vector<std::string> held_texts(data.texts.begin() + fit_count, data.texts.end());
  std::int64_t num_labels = 0;
  for (const auto& row : data.labels) num_labels = std::max<std::int64_t>(num_labels, row[0] + 1);
  s.features = s.vectorizer.transform(fit_texts);
  s.held_features = s.vectorizer.transform(held_texts);
  s.labels = csr_from_rows({data.labels.begin(), data.labels.begin() + fit_count}, num_labels);
  s.held_labels = csr_from_rows({data.labels.begin() + fit_count, data.labels.end()}, num_labels);
  return s;
}

ChoiceOptions options_with_budget(double budget) {
  ChoiceOptions options;
  options.ngrams = {1, 2};
  options.budget = budget;
  options.seed = 3;
  options.threads = 2;
  return options;
}

// One label per query: a perfect ranking scores P@1 + P@3 + P@5 = 1 + 1/3 + 1/5.
constexpr double kPerfect = 1.0 + 1.0 / 3 + 1.0 / 5;

TEST(SettingsChoice, BigramsAreChosenWhereWordOrderNamesTheLabel) {
  const ChoiceSetup s = setup(pair_data(/*ordered=*/true, 400, 7), 60);
  std::vector<std::string> log;
  const SettingsChoice choice = choose_settings(s.vectorizer, {s.features, s.labels, s.held_features, s.held_labels}, options_with_budget(100),
                                                silent_progress(), [&](const std::string& line) { log.push_back(line); });
  ASSERT_GE(choice.candidates.size(), 2u);
  EXPECT_EQ(choice.candidates[0].ngrams, 1);
  EXPECT_EQ(choice.candidates[1].ngrams, 2);
  EXPECT_LT(choice.candidates[0].score, kPerfect - 0.2) << "unigrams cannot tell 'red blue' from 'blue red': about half the first places are wrong";
  EXPECT_NEAR(choice.candidates[1].score, kPerfect, 1e-9) << "bigrams can";
  EXPECT_EQ(choice.ngrams, 2);
  EXPECT_NEAR(choice.score, kPerfect, 1e-9);
  EXPECT_EQ(choice.candidates.size(), 4u) << "with a large budget: 1-grams, 2-grams, then 2 and 3 trees of the better";
  EXPECT_EQ(choice.candidates[3].trees, 3);
  EXPECT_EQ(choice.trees, 1) << "more trees score no better: the first (cheaper) of equal scores";
  ASSERT_EQ(choice.trees_fit.size(), 1u);
  EXPECT_TRUE(choice.left_out.empty());
  ASSERT_EQ(log.size(), 5u) << "a line per candidate and the outcome";
  EXPECT_NE(log.back().find("chose 2-grams, 1 tree"), std::string::npos) << log.back();
}

TEST(SettingsChoice, EqualScoresKeepTheCheaperCandidateAndTheConfiguredKnnWeight) {
  const ChoiceSetup s = setup(pair_data(/*ordered=*/false, 300, 11), 40);
  ChoiceOptions options = options_with_budget(100);
  options.configured.knn = 5;
  options.configured.knn_weight = 0.85;
  for (int i = 10; i <= 20; ++i) options.knn_weights.push_back(i / 20.0);
  const SettingsChoice choice = choose_settings(s.vectorizer, {s.features, s.labels, s.held_features, s.held_labels}, options, silent_progress(),
                                                [](const std::string&) {});
  for (const ChoiceCandidate& candidate : choice.candidates) EXPECT_NEAR(candidate.score, kPerfect, 1e-9) << describe(candidate);
  EXPECT_EQ(choice.ngrams, 1) << "unordered pairs: unigrams suffice";
  EXPECT_EQ(choice.trees, 1);
  EXPECT_DOUBLE_EQ(choice.knn_weight, 0.85) << "every weight ranks perfectly: the configured one";
}

TEST(SettingsChoice, TheBudgetLeavesOutWhatItCannotAffordAndSaysSo) {
  const ChoiceSetup s = setup(pair_data(/*ordered=*/true, 300, 5), 40);
  std::vector<std::string> log;
  const SettingsChoice choice = choose_settings(s.vectorizer, {s.features, s.labels, s.held_features, s.held_labels}, options_with_budget(1),
                                                silent_progress(), [&](const std::string& line) { log.push_back(line); });
  // One fit's time is spent by the first candidate itself: nothing else fits.
  ASSERT_EQ(choice.candidates.size(), 1u);
  EXPECT_EQ(choice.ngrams, 1);
  ASSERT_FALSE(choice.left_out.empty());
  EXPECT_EQ(choice.left_out.front().rfind("2-grams", 0), 0u) << choice.left_out.front();
  bool logged = false;
  for (const std::string& line : log) logged = logged || line.find("left out by the budget: 2-grams") != std::string::npos;
  EXPECT_TRUE(logged);
}

// The budget counts tree fits, a bigram tree costing its features' non-zeros over the unigram tree's: r. With 1 + 1.5 r
// fits, the first tree (1) and the bigram tree (r) fit, a second bigram tree (r more) does not — on any machine.
TEST(SettingsChoice, TheBudgetCountsTreesByTheirFeaturesNonZeros) {
  const PairData data = pair_data(/*ordered=*/true, 300, 5);
  const ChoiceSetup s = setup(data, 40);
  const std::vector<std::string> fit_texts(data.texts.begin(), data.texts.end() - 40);
  const double unigram_nonzeros = static_cast<double>(TfidfVectorizer::fit(data.texts, {.ngrams = 1}).transform(fit_texts).nnz());
  const double r = static_cast<double>(s.features.nnz()) / unigram_nonzeros;
  ASSERT_GT(r, 1.0);
  const SettingsChoice choice = choose_settings(s.vectorizer, {s.features, s.labels, s.held_features, s.held_labels}, options_with_budget(1 + 1.5 * r),
                                                silent_progress(), [](const std::string&) {});
  ASSERT_EQ(choice.candidates.size(), 2u);
  EXPECT_EQ(choice.candidates[1].ngrams, 2);
  EXPECT_NEAR(choice.fits, 1 + r, 1e-9);
  ASSERT_EQ(choice.left_out.size(), 1u);
  char expected[64];
  std::snprintf(expected, sizeof expected, "2-grams, 2 trees (%.2f fits, %.2f of %.2f left)", r, 0.5 * r, 1 + 1.5 * r);
  EXPECT_EQ(choice.left_out[0], expected);
}

TEST(SettingsChoice, NoHeldOutRowsOrUnknownNgramsAreRefused) {
  const ChoiceSetup s = setup(pair_data(true, 100, 1), 10);
  const CsrMatrix none{.cols = s.features.cols};
  const CsrMatrix no_labels{.cols = s.labels.cols};
  EXPECT_THROW(choose_settings(s.vectorizer, {s.features, s.labels, none, no_labels}, options_with_budget(3), silent_progress(), [](const std::string&) {}),
               Error);
  ChoiceOptions trigrams = options_with_budget(3);
  trigrams.ngrams = {1, 3};
  EXPECT_THROW(choose_settings(s.vectorizer, {s.features, s.labels, s.held_features, s.held_labels}, trigrams, silent_progress(), [](const std::string&) {}),
               Error);
}

}  // namespace
}  // namespace xmc
