// The ranking layer (engine/rank) on hand-worked cases: a label matrix searched exactly and through an index, the
// labels of a subset mapped back to the run's ids, labels added after the fact, a ranker that reads texts, and
// retrieval augmentation refused on a searcher that does not score every label by its vector.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "engine/core/error.h"
#include "engine/index/index_factory.h"
#include "engine/rank/mode_searcher.h"
#include "engine/rank/retrieval_augmented_search.h"
#include "engine/rank/subset_searcher.h"
#include "engine/rank/vector_searcher.h"

namespace xmc {
namespace {

// Four labels in 2-D; the query (1, 0) scores them 0.9, 0.2, 0.9, -1 (labels 0 and 2 tie: lower id first).
torch::Tensor labels() { return torch::tensor({{0.9f, 0.1f}, {0.2f, 0.8f}, {0.9f, -0.4f}, {-1.0f, 0.0f}}); }
SearchQueries query() { return {.vectors = torch::tensor({{1.0f, 0.0f}})}; }

TEST(LabelSearcher, ExactSearchRanksByInnerProductWithTiesByLowerId) {
  const VectorSearcher searcher("q", labels());
  const RankedPredictions top = searcher.search(query(), 3);
  EXPECT_TRUE(torch::equal(top.labels, torch::tensor({{0, 2, 1}}, torch::kInt64)));
  EXPECT_TRUE(torch::allclose(top.scores, torch::tensor({{0.9f, 0.9f, 0.2f}})));
  // k beyond the labels is cut to them.
  EXPECT_EQ(searcher.search(query(), 10).labels.size(1), 4);
  const std::vector<LabelPlace> places = searcher.places_of(query(), {2, 3, 0});
  EXPECT_EQ(places[0].rank, 2);
  EXPECT_EQ(places[1].rank, 4);
  EXPECT_FLOAT_EQ(places[1].score, -1.0f);
  EXPECT_EQ(places[2].rank, 1);
}

TEST(LabelSearcher, AnIndexOverTheRowsFindsWhatExactSearchFinds) {
  auto index = make_index("exact", 2);
  const torch::Tensor rows = labels().contiguous();
  index->add(rows.size(0), rows.data_ptr<float>());
  const VectorSearcher through_index("q", labels(), std::move(index));
  EXPECT_TRUE(torch::equal(through_index.search(query(), 2).labels, torch::tensor({{0, 2}}, torch::kInt64)));
}

TEST(LabelSearcher, AddedLabelsAreSearchedAndPlaced) {
  VectorSearcher searcher("q", labels());
  searcher.add(torch::tensor({{2.0f, 0.0f}}), 4);  // label 4 scores 2: the best
  EXPECT_EQ(searcher.num_labels(), 5);
  EXPECT_EQ(searcher.search(query(), 1).labels.item<std::int64_t>(), 4);
  EXPECT_EQ(searcher.places_of(query(), {0}).front().rank, 2);
  EXPECT_EQ(searcher.label_vectors().size(0), 5);
}

TEST(LabelSearcher, ASubsetAnswersInTheRunsLabelIds) {
  // Rows 0..3 of the matrix are labels 10, 11, 12, 13 of the run.
  SubsetSearcher subset(std::make_unique<VectorSearcher>("q", labels()), {10, 11, 12, 13});
  EXPECT_TRUE(torch::equal(subset.search(query(), 2).labels, torch::tensor({{10, 12}}, torch::kInt64)));
  EXPECT_TRUE(subset.ranks(13));
  EXPECT_FALSE(subset.ranks(0));
  const std::vector<LabelPlace> places = subset.places_of(query(), {12, 0});
  EXPECT_EQ(places[0].rank, 2);
  EXPECT_EQ(places[1].rank, 0);  // not one of its labels
  // A label added to the run later (id 20) is one of the subset's.
  subset.add(torch::tensor({{3.0f, 0.0f}}), 20);
  EXPECT_TRUE(subset.ranks(20));
  EXPECT_EQ(subset.search(query(), 1).labels.item<std::int64_t>(), 20);
}

/// Ranks every query's labels as ids n-1, ..., 0 (it reads only how many texts there are).
class ReversedRanker final : public QueryRanker {
 public:
  RankedPredictions rank(const TokenizedCorpus& /*queries*/, std::int64_t begin, std::int64_t end, std::int64_t top) const override {
    const torch::Tensor row = torch::arange(3 - 1, 3 - 1 - top, -1, torch::kInt64);
    return {row.unsqueeze(0).repeat({end - begin, 1}), torch::zeros({end - begin, top})};
  }
  std::int64_t num_labels() const override { return 3; }
};

TEST(LabelSearcher, AModeThatRanksByItselfReadsTextsAndTakesNoLabels) {
  InferenceMode mode{.name = "tree"};
  mode.ranker = std::make_shared<ReversedRanker>();
  const std::unique_ptr<LabelSearcher> searcher = make_mode_searcher(mode);
  EXPECT_TRUE(searcher->query_encoder().empty());
  TokenizedCorpus texts;
  const SearchQueries two{.texts = &texts, .begin = 0, .end = 2};
  EXPECT_TRUE(torch::equal(searcher->search(two, 5).labels, torch::tensor({{2, 1, 0}, {2, 1, 0}}, torch::kInt64)));
  EXPECT_EQ(searcher->places_of({.texts = &texts, .begin = 0, .end = 1}, {0}).front().rank, 3);
  EXPECT_THROW(searcher->add(torch::zeros({1, 2}), 3), Error);
  EXPECT_FALSE(searcher->searches_every_label_vector());
  EXPECT_THROW(RetrievalAugmentedSearcher(*searcher, {}), Error);
}

TEST(LabelSearcher, AModeOfASubsetIsSearchedThroughItsIds) {
  InferenceMode mode{.name = "novel", .query_encoder = "q", .label_matrix = labels()};
  auto subset = std::make_shared<EvaluationSubset>();
  subset->label_ids = {5, 6, 7, 8};
  mode.subset = subset;
  const std::unique_ptr<LabelSearcher> searcher = make_mode_searcher(mode);
  EXPECT_TRUE(torch::equal(searcher->search(query(), 1).labels, torch::tensor({{5}}, torch::kInt64)));
}

}  // namespace
}  // namespace xmc
