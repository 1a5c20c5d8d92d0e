// Exact top-k against a brute-force full sort, the plain Index interface of ExactIndex, and HNSW recall.
#include "engine/index/exact_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/index/exact_index.h"
#include "engine/index/hnsw_index.h"

namespace xmc {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// Brute force: every score in double, all keys sorted by (score descending, id ascending), excluded ids
// dropped, first k kept, padded with (-inf, -1).
struct Reference {
  std::vector<std::vector<double>> scores;
  std::vector<std::vector<std::int64_t>> ids;
};

Reference brute_force(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k,
                      const std::vector<std::set<std::int64_t>>& excluded = {}) {
  const auto q = queries.to(torch::kDouble).contiguous();
  const auto kv = keys.to(torch::kDouble).contiguous();
  const std::int64_t n = q.size(0), m = kv.size(0), d = q.size(1);
  const auto* qp = q.data_ptr<double>();
  const auto* kp = kv.data_ptr<double>();
  Reference ref;
  const std::int64_t width = std::min(k, m);
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<double> s(static_cast<std::size_t>(m));
    for (std::int64_t j = 0; j < m; ++j) {
      double dot = 0;
      for (std::int64_t t = 0; t < d; ++t) dot += qp[i * d + t] * kp[j * d + t];
      s[static_cast<std::size_t>(j)] = dot;
    }
    std::vector<std::int64_t> order;
    for (std::int64_t j = 0; j < m; ++j)
      if (excluded.empty() || !excluded[static_cast<std::size_t>(i)].count(j)) order.push_back(j);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return s[static_cast<std::size_t>(a)] > s[static_cast<std::size_t>(b)];
    });
    std::vector<double> row_scores;
    std::vector<std::int64_t> row_ids;
    for (std::int64_t r = 0; r < width; ++r) {
      const bool has = r < static_cast<std::int64_t>(order.size());
      row_ids.push_back(has ? order[static_cast<std::size_t>(r)] : -1);
      row_scores.push_back(has ? s[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])] : -INFINITY);
    }
    ref.scores.push_back(row_scores);
    ref.ids.push_back(row_ids);
  }
  return ref;
}

// Small integers: every product is exact whatever the summation order, so ties are real ties.
torch::Tensor integer_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randint(-3, 4, {rows, cols}).to(torch::kFloat);
}

void expect_exact(const TopK& got, const Reference& ref) {
  const auto scores = got.scores.contiguous();
  const auto ids = got.indices.contiguous();
  ASSERT_EQ(scores.size(0), static_cast<std::int64_t>(ref.ids.size()));
  for (std::int64_t i = 0; i < scores.size(0); ++i) {
    const auto& want = ref.ids[static_cast<std::size_t>(i)];
    ASSERT_EQ(scores.size(1), static_cast<std::int64_t>(want.size()));
    for (std::int64_t r = 0; r < scores.size(1); ++r) {
      EXPECT_EQ(ids[i][r].item<std::int64_t>(), want[static_cast<std::size_t>(r)]) << "row " << i << " rank " << r;
      EXPECT_EQ(scores[i][r].item<float>(), static_cast<float>(ref.scores[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)]))
          << "row " << i << " rank " << r;
    }
  }
}

TEST(ExactTopK, MatchesFullSortWithTiesForAnyChunking) {
  const auto queries = integer_matrix(37, 8, 1);
  const auto keys = integer_matrix(203, 8, 2);
  // k up to and beyond m; chunkings that cut both sides unevenly, blocks on and off.
  for (std::int64_t k : {1, 3, 10, 50, 203, 500}) {
    const auto ref = brute_force(queries, keys, k);
    for (auto [qc, kc] : std::vector<std::pair<std::int64_t, std::int64_t>>{{512, 16384}, {5, 17}, {37, 7}, {4, 203}, {1, 100}}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " query_chunk=" + std::to_string(qc) + " key_chunk=" + std::to_string(kc));
      expect_exact(exact_top_k(queries, keys, k, {.query_chunk = qc, .key_chunk = kc}), ref);
    }
  }
}

TEST(ExactTopK, QueriesAreChunkedByTheMemoryBudgetWithTheSameResults) {
  struct Reset {
    ~Reset() { set_memory_budget_mb(0); }
  } reset;
  // A block of query_chunk x 4096 float scores takes 1/16 of the budget: 64 MB / 16 / 16 KB = 256 queries.
  for (const auto& [mb, chunk] : std::vector<std::pair<std::int64_t, std::int64_t>>{{32, 128}, {64, 256}, {512, 2048}}) {
    set_memory_budget_mb(mb);
    EXPECT_EQ(exact_search_query_chunk({}), chunk) << mb << " MB";
    EXPECT_EQ(exact_search_query_chunk({.query_chunk = 5}), 5) << "a chunk the caller sets is kept";
  }
  // 300 queries at 32 MB: three chunks (128, 128, 44), the same results as a brute-force sort.
  set_memory_budget_mb(32);
  const auto queries = integer_matrix(300, 8, 3);
  const auto keys = integer_matrix(5000, 8, 4);
  expect_exact(exact_top_k(queries, keys, 10), brute_force(queries, keys, 10));
}

// A block of columns of a wider matrix (UniDEC's de and clf spaces are those of its concat matrix) is searched in
// place, with the results of the brute-force sort of its own copy; a column slice with a stride is not such a
// block, and is copied first, with the same results.
TEST(ExactTopK, AColumnBlockOfAWiderMatrixSearchesLikeItsCopy) {
  const auto queries = integer_matrix(37, 8, 5);
  const auto wide = integer_matrix(203, 20, 6);
  const torch::Tensor block = wide.narrow(1, 5, 8);
  ASSERT_FALSE(block.is_contiguous());
  EXPECT_TRUE(has_unit_column_stride(block));
  EXPECT_TRUE(has_unit_column_stride(wide));
  const torch::Tensor every_other = wide.slice(1, 0, 16, 2);
  EXPECT_FALSE(has_unit_column_stride(every_other));
  const auto ref = brute_force(queries, block.contiguous(), 10);
  for (auto [qc, kc] : std::vector<std::pair<std::int64_t, std::int64_t>>{{512, 16384}, {5, 17}}) {
    SCOPED_TRACE("query_chunk=" + std::to_string(qc) + " key_chunk=" + std::to_string(kc));
    expect_exact(exact_top_k(queries, block, 10, {.query_chunk = qc, .key_chunk = kc}), ref);
  }
  expect_exact(exact_top_k(queries, every_other, 10), brute_force(queries, every_other.contiguous(), 10));
}

TEST(ExactTopK, AllEqualScoresComeBackInKeyOrder) {
  const auto queries = torch::ones({3, 4});
  const auto keys = torch::ones({1000, 4});
  const auto top = exact_top_k(queries, keys, 5, {.query_chunk = 2, .key_chunk = 300});
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t r = 0; r < 5; ++r) EXPECT_EQ(top.indices[i][r].item<std::int64_t>(), r);
}

TEST(ExactTopK, FloatDataMatchesBruteForceScores) {
  torch::manual_seed(3);
  const auto queries = torch::randn({50, 32});
  const auto keys = torch::randn({3000, 32});
  const auto ref = brute_force(queries, keys, 20);
  const auto top = exact_top_k(queries, keys, 20, {.query_chunk = 16, .key_chunk = 1000});
  const auto exact = torch::mm(queries.to(torch::kDouble), keys.to(torch::kDouble).t());
  for (std::int64_t i = 0; i < 50; ++i) {
    for (std::int64_t r = 0; r < 20; ++r) {
      const double want = ref.scores[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)];
      EXPECT_NEAR(top.scores[i][r].item<float>(), want, 1e-4);
      // The returned key really has the returned score (ids may only differ on float near-ties).
      EXPECT_NEAR(exact[i][top.indices[i][r].item<std::int64_t>()].item<double>(), want, 1e-4);
    }
  }
}

TEST(ExactTopK, ExclusionListsAreHonoured) {
  const auto queries = integer_matrix(20, 6, 4);
  const auto keys = integer_matrix(150, 6, 5);
  std::mt19937_64 rng(6);
  std::vector<std::set<std::int64_t>> excluded(20);
  std::vector<std::int64_t> indptr{0};
  std::vector<std::int64_t> indices;
  for (std::size_t i = 0; i < 20; ++i) {
    const std::size_t count = i == 7 ? 148 : rng() % 30;  // row 7 keeps only two keys
    for (std::size_t c = 0; c < count; ++c) {
      const auto id = i == 7 ? static_cast<std::int64_t>(c + 1) : static_cast<std::int64_t>(rng() % 150);
      excluded[i].insert(id);
      indices.push_back(id);
      if (c % 5 == 0) indices.push_back(id);  // repeats are harmless
    }
    if (i % 4 == 0) indices.push_back(100000);  // ids outside the key range are ignored
    std::shuffle(indices.begin() + indptr.back(), indices.end(), rng);  // order within a row does not matter
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  ExcludeLists lists{torch::tensor(indptr, torch::kInt64), torch::tensor(indices, torch::kInt64)};
  for (std::int64_t k : {5, 40}) {
    const auto ref = brute_force(queries, keys, k, excluded);
    for (auto [qc, kc] : std::vector<std::pair<std::int64_t, std::int64_t>>{{512, 16384}, {3, 11}, {20, 64}}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " chunks " + std::to_string(qc) + "x" + std::to_string(kc));
      expect_exact(exact_top_k(queries, keys, k, {.query_chunk = qc, .key_chunk = kc, .exclude = lists}), ref);
    }
  }
  // Row 7 has two eligible keys: the rest of its row is padding.
  const auto top = exact_top_k(queries, keys, 5, {.exclude = lists});
  EXPECT_EQ(top.indices[7][2].item<std::int64_t>(), -1);
  EXPECT_EQ(top.scores[7][4].item<float>(), kMinusInf);
  EXPECT_NE(top.indices[7][1].item<std::int64_t>(), -1);
}

TEST(ExactTopK, ExcludeListsFromCsr) {
  const auto matrix = csr_from_rows({{2, 0}, {}, {1}}, 3);
  const auto lists = ExcludeLists::from_csr(matrix);
  const auto top = exact_top_k(torch::ones({3, 2}), torch::eye(3, 2), 3, {.exclude = lists});
  // Keys score 1, 1, 0; row 0 may only get key 1, row 2 keys 0 and 2.
  EXPECT_EQ(top.indices[0][0].item<std::int64_t>(), 1);
  EXPECT_EQ(top.indices[0][1].item<std::int64_t>(), -1);
  EXPECT_EQ(top.indices[1][0].item<std::int64_t>(), 0);
  EXPECT_EQ(top.indices[1][2].item<std::int64_t>(), 2);
  EXPECT_EQ(top.indices[2][1].item<std::int64_t>(), 2);
}

TEST(ExactTopK, ShapesAndErrors) {
  const auto keys = torch::randn({10, 4});
  EXPECT_EQ(exact_top_k(torch::randn({3, 4}), keys, 50).indices.sizes(), (std::vector<std::int64_t>{3, 10}));
  EXPECT_EQ(exact_top_k(torch::randn({3, 4}), keys, 0).scores.sizes(), (std::vector<std::int64_t>{3, 0}));
  EXPECT_EQ(exact_top_k(torch::randn({0, 4}), keys, 5).scores.sizes(), (std::vector<std::int64_t>{0, 5}));
  EXPECT_EQ(exact_top_k(torch::randn({2, 4}), torch::randn({0, 4}), 5).indices.sizes(), (std::vector<std::int64_t>{2, 0}));
  EXPECT_THROW(exact_top_k(torch::randn({3, 5}), keys, 2), ConfigError);
  EXPECT_THROW(exact_top_k(torch::randn({3, 4}), keys, 2, {.exclude = {torch::zeros({2}, torch::kInt64), torch::zeros({0}, torch::kInt64)}}),
               ConfigError);
}

TEST(ExactIndex, AddSearchResetThroughThePlainInterface) {
  const auto keys = integer_matrix(120, 8, 7);
  const auto queries = integer_matrix(9, 8, 8);
  ExactIndex index(8, {.query_chunk = 4, .key_chunk = 50});
  Index& plain = index;
  plain.add(70, keys.data_ptr<float>());
  plain.add(50, keys.data_ptr<float>() + 70 * 8);
  EXPECT_EQ(plain.ntotal(), 120);
  EXPECT_EQ(plain.dim(), 8);

  std::vector<float> scores(9 * 6);
  std::vector<std::int64_t> labels(9 * 6);
  plain.search(9, queries.data_ptr<float>(), 6, scores.data(), labels.data());
  const auto ref = brute_force(queries, keys, 6);
  for (std::size_t i = 0; i < 9; ++i)
    for (std::size_t r = 0; r < 6; ++r) {
      EXPECT_EQ(labels[i * 6 + r], ref.ids[i][r]);
      EXPECT_EQ(scores[i * 6 + r], static_cast<float>(ref.scores[i][r]));
    }

  // More results asked for than stored: padded with -1 / -inf.
  std::vector<float> wide_scores(9 * 130);
  std::vector<std::int64_t> wide_labels(9 * 130);
  plain.search(9, queries.data_ptr<float>(), 130, wide_scores.data(), wide_labels.data());
  EXPECT_GE(wide_labels[119], 0);
  EXPECT_EQ(wide_labels[120], -1);
  EXPECT_EQ(wide_scores[8 * 130 + 129], kMinusInf);

  plain.reset();
  EXPECT_EQ(plain.ntotal(), 0);
  plain.search(9, queries.data_ptr<float>(), 6, scores.data(), labels.data());
  EXPECT_TRUE(std::all_of(labels.begin(), labels.end(), [](std::int64_t l) { return l == -1; }));
  plain.add(1, keys.data_ptr<float>() + 5 * 8);
  plain.search(1, queries.data_ptr<float>(), 1, scores.data(), labels.data());
  EXPECT_EQ(labels[0], 0);  // labels restart at 0 after reset
}

TEST(HnswIndex, FindsTheExactNeighboursOfMostQueries) {
  torch::manual_seed(9);
  const std::int64_t n = 2000, d = 32, nq = 200, k = 10;
  const auto keys = torch::nn::functional::normalize(torch::randn({n, d}), torch::nn::functional::NormalizeFuncOptions().dim(1));
  const auto queries = torch::nn::functional::normalize(torch::randn({nq, d}), torch::nn::functional::NormalizeFuncOptions().dim(1));
  HnswIndex index(d, {.M = 16, .ef_construction = 100, .ef_search = 64});
  Index& plain = index;
  plain.add(1000, keys.data_ptr<float>());
  plain.add(n - 1000, keys.data_ptr<float>() + 1000 * d);  // grows the graph
  EXPECT_EQ(plain.ntotal(), n);

  std::vector<float> scores(nq * k);
  std::vector<std::int64_t> labels(nq * k);
  plain.search(nq, queries.data_ptr<float>(), k, scores.data(), labels.data());
  const auto exact = exact_top_k(queries, keys, k);
  std::int64_t hits = 0;
  for (std::int64_t i = 0; i < nq; ++i) {
    std::set<std::int64_t> truth;
    for (std::int64_t r = 0; r < k; ++r) truth.insert(exact.indices[i][r].item<std::int64_t>());
    for (std::int64_t r = 0; r < k; ++r) hits += truth.count(labels[static_cast<std::size_t>(i * k + r)]);
    for (std::int64_t r = 1; r < k; ++r) EXPECT_GE(scores[static_cast<std::size_t>(i * k + r - 1)], scores[static_cast<std::size_t>(i * k + r)]);
  }
  EXPECT_GE(static_cast<double>(hits) / static_cast<double>(nq * k), 0.95);
  // A stored vector is its own nearest neighbour, with score <x, x> = 1.
  plain.search(1, keys.data_ptr<float>() + 123 * d, 1, scores.data(), labels.data());
  EXPECT_EQ(labels[0], 123);
  EXPECT_NEAR(scores[0], 1.0f, 1e-5);

  plain.reset();
  plain.search(2, queries.data_ptr<float>(), 3, scores.data(), labels.data());
  EXPECT_EQ(labels[0], -1);
  EXPECT_EQ(scores[5], kMinusInf);
}

}  // namespace
}  // namespace xmc
