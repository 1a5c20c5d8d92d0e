// The ranking layer (engine/rank) on hand-worked cases: a label matrix searched exactly and through an index, the
// labels of a subset mapped back to the run's ids, labels added after the fact, a ranker that reads texts, and
// retrieval augmentation refused on a searcher that does not score every label by its vector.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "engine/core/error.h"
#include "engine/index/index_factory.h"
#include "engine/rank/mode_ranking_plan.h"
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

// UniDEC-like and IRENE-like modes together: the plan says which encoders stream, which modes rank in which pass,
// and which take another route, without the evaluation asking.
TEST(ModeRankingPlan, EachModeRanksByItsOwnRouteAndSharedCandidatesShareAPass) {
  auto subset = std::make_shared<EvaluationSubset>();
  std::vector<InferenceMode> modes{{.name = "concat", .query_encoder = "concat", .candidates_from = {"de", "clf"}},
                                   {.name = "de", .query_encoder = "de", .training_space = true, .candidates_from = {"de", "clf"}},
                                   {.name = "clf", .query_encoder = "clf", .candidates_from = {"de", "clf"}},
                                   {.name = "novel", .query_encoder = "zs"},
                                   {.name = "seen", .query_encoder = "zs"},
                                   {.name = "tree"}};
  modes[3].subset = subset;
  modes[5].ranker = std::make_shared<ReversedRanker>();

  const ModeRankingPlan exact = plan_mode_ranking(modes, /*approximate_index=*/false, /*with_rag=*/false);
  EXPECT_EQ(exact.whole_encoders, std::vector<std::string>({"zs"}));  // a subset of rows needs the whole matrix
  EXPECT_EQ(exact.streamed_encoders, std::vector<std::string>({"concat", "de", "clf"}));
  ASSERT_EQ(exact.streamed_passes.size(), 1u);  // exact search: every streamed mode in one pass
  EXPECT_EQ(exact.streamed_passes[0].modes, std::vector<std::size_t>({0, 1, 2}));
  EXPECT_FALSE(exact.streamed_passes[0].shared_candidates);
  EXPECT_EQ(exact.by_searcher, std::vector<std::size_t>({5}));
  EXPECT_EQ(exact.on_row_subsets, std::vector<std::size_t>({3}));
  EXPECT_EQ(exact.on_whole_queries, std::vector<std::size_t>({4}));  // its encoder is encoded whole anyway
  EXPECT_FALSE(exact.rag_base.has_value());

  const ModeRankingPlan approximate = plan_mode_ranking(modes, true, true);
  ASSERT_EQ(approximate.streamed_passes.size(), 1u);  // the three share the candidates of de's and clf's indexes
  EXPECT_TRUE(approximate.streamed_passes[0].shared_candidates);
  ASSERT_TRUE(approximate.rag_base.has_value());
  EXPECT_EQ(*approximate.rag_base, 1u);  // the training space's mode
  // de is encoded whole for retrieval augmentation and still proposes candidates in the pass (this combination
  // used to fail: "concat takes candidates from de, which is not a mode ranked with it").
  EXPECT_EQ(approximate.whole_encoders, std::vector<std::string>({"zs", "de"}));
  EXPECT_EQ(approximate.streamed_passes[0].modes, std::vector<std::size_t>({0, 1, 2}));
  EXPECT_TRUE(approximate.on_whole_queries == std::vector<std::size_t>({4}));

  // Without shared candidates an approximate search ranks one mode per pass (each index holds its own copy).
  for (InferenceMode& mode : modes) mode.candidates_from.clear();
  EXPECT_EQ(plan_mode_ranking(modes, true, false).streamed_passes.size(), 3u);
  // Retrieval augmentation builds on a mode that scores every label by its vector, else on none.
  std::vector<InferenceMode> tree_only{modes[5]};
  EXPECT_FALSE(plan_mode_ranking(tree_only, false, true).rag_base.has_value());
  // Candidates from a mode not ranked with it, and a mode that ranks by itself yet names a subset, are errors.
  std::vector<InferenceMode> orphan{{.name = "concat", .query_encoder = "concat", .candidates_from = {"de"}}};
  EXPECT_THROW(plan_mode_ranking(orphan, true, false), Error);
  modes[5].subset = subset;
  EXPECT_THROW(plan_mode_ranking(modes, false, false), Error);
}

}  // namespace
}  // namespace xmc
