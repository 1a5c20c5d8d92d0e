// The clustered (IVF) search against a brute-force sort in double: exact when every cluster is searched, the
// share of keys it scans when only some are, its exclusions, its padding and the inputs it refuses.
#include "engine/index/clustered_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "engine/core/error.h"

namespace xmc {
namespace {

// Query i excludes the ids of excluded[i], as the search takes them.
ExcludeLists exclusion_lists(const std::vector<std::set<std::int64_t>>& excluded) {
  std::vector<std::int64_t> indptr{0}, indices;
  for (const auto& own : excluded) {
    indices.insert(indices.end(), own.begin(), own.end());
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }
  return {torch::tensor(indptr), torch::tensor(indices)};
}

// Every query's ids of its best k keys by inner product in double, excluded ids dropped.
std::vector<std::vector<std::int64_t>> brute_force_ids(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k,
                                                       const std::vector<std::set<std::int64_t>>& excluded = {}) {
  const torch::Tensor scores = torch::mm(queries.to(torch::kDouble), keys.to(torch::kDouble).t()).contiguous();
  std::vector<std::vector<std::int64_t>> out;
  for (std::int64_t i = 0; i < scores.size(0); ++i) {
    const double* row = scores.data_ptr<double>() + i * scores.size(1);
    std::vector<std::int64_t> ids;
    for (std::int64_t j = 0; j < scores.size(1); ++j)
      if (excluded.empty() || excluded[static_cast<std::size_t>(i)].count(j) == 0) ids.push_back(j);
    std::stable_sort(ids.begin(), ids.end(), [&](std::int64_t a, std::int64_t b) { return row[a] > row[b]; });
    ids.resize(static_cast<std::size_t>(std::min<std::int64_t>(k, static_cast<std::int64_t>(ids.size()))));
    out.push_back(ids);
  }
  return out;
}

std::vector<std::int64_t> row_of(const torch::Tensor& ids, std::int64_t row) {
  const torch::Tensor r = ids[row].contiguous();
  return {r.data_ptr<std::int64_t>(), r.data_ptr<std::int64_t>() + r.numel()};
}

// Keys around 32 centres, queries near the same centres: the structure a trained embedding has.
struct Clustered {
  torch::Tensor queries, keys;
};
Clustered clustered_data(std::int64_t n, std::int64_t m, std::int64_t dim, std::uint64_t seed) {
  torch::manual_seed(static_cast<std::int64_t>(seed));
  const torch::Tensor centres = torch::randn({32, dim});
  return {centres.index_select(0, torch::randint(32, {n})) + 0.3 * torch::randn({n, dim}),
          centres.index_select(0, torch::randint(32, {m})) + 0.3 * torch::randn({m, dim})};
}

TEST(ClusteredSearch, SearchingEveryClusterIsExactWithAndWithoutExclusions) {
  const Clustered data = clustered_data(200, 4096, 16, 1);
  ClusteredSearchOptions options;
  options.cluster_size = 64;
  options.probe = 64;  // 4096 keys in clusters of 64 on average: 64 clusters, all searched
  options.scores_bytes = 4096 * 4 * 7;  // a few dozen queries a chunk: chunks end mid-way through the 200
  ClusteredSearchStats stats;
  const TopK top = clustered_top_k(data.queries, data.keys, 10, options, &stats);
  EXPECT_EQ(stats.clusters, 64);
  EXPECT_EQ(stats.probed, 64);
  EXPECT_DOUBLE_EQ(stats.scanned_fraction, 1.0);
  const auto want = brute_force_ids(data.queries, data.keys, 10);
  for (std::int64_t i = 0; i < 200; ++i) EXPECT_EQ(row_of(top.indices, i), want[static_cast<std::size_t>(i)]) << "query " << i;
  // Scores are the products of the ids returned, best first.
  const torch::Tensor expected = (data.queries.unsqueeze(1) * data.keys.index_select(0, top.indices.view(-1)).view({200, 10, 16})).sum(2);
  EXPECT_TRUE(torch::allclose(top.scores, expected, 1e-4, 1e-4));

  // Each query excludes its own exact top 3 and key 7: the result is the exact top 10 of what is left.
  std::vector<std::set<std::int64_t>> excluded;
  for (std::int64_t i = 0; i < 200; ++i) {
    std::set<std::int64_t> own(want[static_cast<std::size_t>(i)].begin(), want[static_cast<std::size_t>(i)].begin() + 3);
    own.insert(7);
    excluded.push_back(own);
  }
  options.exclude = exclusion_lists(excluded);
  const TopK rest = clustered_top_k(data.queries, data.keys, 10, options);
  const auto want_rest = brute_force_ids(data.queries, data.keys, 10, excluded);
  for (std::int64_t i = 0; i < 200; ++i) EXPECT_EQ(row_of(rest.indices, i), want_rest[static_cast<std::size_t>(i)]) << "query " << i;
}

TEST(ClusteredSearch, TheResultDoesNotDependOnHowManyThreadsSearch) {
  // Each thread takes a run of clusters with a selector of its own, and their candidates are merged per query: the
  // merge must give what one selector over all the probed clusters gives, ties included (every key appears twice,
  // so every score is tied), with exclusions, whatever the number of threads and chunks.
  const Clustered data = clustered_data(300, 2000, 16, 5);
  const torch::Tensor keys = torch::cat({data.keys, data.keys});  // key j and key j + 2000 score alike
  std::vector<std::set<std::int64_t>> excluded;
  for (std::int64_t i = 0; i < 300; ++i) excluded.push_back({i, 3 * i + 2});
  ClusteredSearchOptions options;
  options.cluster_size = 50;
  options.probe = 12;
  options.scores_bytes = 64 * 1024;  // a few chunks
  options.exclude = exclusion_lists(excluded);
  const int threads_before = at::get_num_threads();
  const KeyClusters clusters(keys, 50, 3);
  std::vector<TopK> results;
  for (const int threads : {1, 2, 3}) {
    at::set_num_threads(threads);
    results.push_back(clusters.search(data.queries, 20, options));
  }
  at::set_num_threads(threads_before);
  for (std::size_t t = 1; t < results.size(); ++t) {
    EXPECT_TRUE(torch::equal(results[t].indices, results[0].indices)) << t + 1 << " threads against 1";
    EXPECT_TRUE(torch::equal(results[t].scores, results[0].scores)) << t + 1 << " threads against 1";
  }
  // No excluded key comes back (its twin may), and scores descend.
  const torch::Tensor ids = results[0].indices;
  for (std::int64_t i = 0; i < 300; ++i) {
    const std::vector<std::int64_t> got = row_of(ids, i);
    EXPECT_EQ(std::count(got.begin(), got.end(), i), 0) << "query " << i << " got its excluded key " << i;
    EXPECT_EQ(std::count(got.begin(), got.end(), 3 * i + 2), 0) << "query " << i << " got its excluded key " << 3 * i + 2;
    for (std::size_t j = 0; j + 1 < got.size(); ++j)
      EXPECT_GE(results[0].scores[i][static_cast<std::int64_t>(j)].item<float>(), results[0].scores[i][static_cast<std::int64_t>(j + 1)].item<float>());
  }
}

TEST(ClusteredSearch, KeysTakenOverAreRegroupedInPlaceAndSearchedExactlyToo) {
  // The clusters given the only handle to the keys regroup them in place (their own storage, no copy) and must
  // search as the clusters of a copy do; exact() is the brute-force top 10, exclusions by key id.
  const Clustered data = clustered_data(50, 3000, 16, 4);
  const torch::Tensor original = data.keys.clone();
  torch::Tensor handed = data.keys.clone();
  const KeyClusters copied(data.keys, 64, 2);
  const KeyClusters taken(std::move(handed), 64, 2);
  ClusteredSearchOptions options;
  options.probe = 5;
  EXPECT_TRUE(torch::equal(copied.search(data.queries, 10, options).indices, taken.search(data.queries, 10, options).indices));
  EXPECT_TRUE(torch::equal(data.keys, original)) << "the copying clusters must leave the caller's keys as they were";
  std::vector<std::set<std::int64_t>> excluded;
  for (std::int64_t i = 0; i < 50; ++i) excluded.push_back({i, 2 * i + 1});
  const TopK exact = taken.exact(data.queries, 10, exclusion_lists(excluded));
  const auto want = brute_force_ids(data.queries, original, 10, excluded);
  for (std::int64_t i = 0; i < 50; ++i) EXPECT_EQ(row_of(exact.indices, i), want[static_cast<std::size_t>(i)]) << "query " << i;
  // A matrix someone else still holds is copied, never reordered under them.
  const torch::Tensor shared = original.clone();
  torch::Tensor second_handle = shared;
  const KeyClusters from_shared(std::move(second_handle), 64, 2);
  EXPECT_TRUE(torch::equal(shared, original));
  EXPECT_TRUE(torch::equal(from_shared.search(data.queries, 10, options).indices, copied.search(data.queries, 10, options).indices));
}

TEST(ClusteredSearch, BorrowedKeysStayWhereTheyLieAndAreSearchedAsACopyIs) {
  // The keys as a column block of a wider matrix: borrowed, they are neither copied nor reordered, and the search
  // (each cluster's rows gathered) and exact() give what clusters over a copy give.
  const Clustered data = clustered_data(60, 3000, 16, 6);
  const torch::Tensor wide = torch::cat({torch::randn({3000, 2}), data.keys, torch::randn({3000, 3})}, 1);
  const torch::Tensor before = wide.clone();
  const torch::Tensor block = wide.narrow(1, 2, 16);
  const KeyClusters copied(block, 64, 2);
  const KeyClusters borrowed = KeyClusters::borrowing(block, 64, 2);
  EXPECT_EQ(borrowed.grouped_keys(), nullptr);
  ClusteredSearchOptions options;
  options.probe = 5;
  const TopK from_copy = copied.search(data.queries, 10, options);
  const TopK in_place = borrowed.search(data.queries, 10, options);
  EXPECT_TRUE(torch::equal(in_place.indices, from_copy.indices));
  EXPECT_TRUE(torch::allclose(in_place.scores, from_copy.scores, 1e-6, 1e-6));
  EXPECT_TRUE(torch::equal(wide, before)) << "borrowed keys must be left as they were";
  // Every cluster probed, with exclusions: the brute-force top 10 of what is left; exact() alike.
  std::vector<std::set<std::int64_t>> excluded;
  for (std::int64_t i = 0; i < 60; ++i) excluded.push_back({i, 3 * i + 1});
  options.probe = borrowed.clusters();
  options.exclude = exclusion_lists(excluded);
  const TopK everything = borrowed.search(data.queries, 10, options);
  const TopK exact = borrowed.exact(data.queries, 10, options.exclude);
  const auto want = brute_force_ids(data.queries, data.keys, 10, excluded);
  for (std::int64_t i = 0; i < 60; ++i) {
    EXPECT_EQ(row_of(everything.indices, i), want[static_cast<std::size_t>(i)]) << "query " << i;
    EXPECT_EQ(row_of(exact.indices, i), want[static_cast<std::size_t>(i)]) << "query " << i;
  }
  EXPECT_THROW(KeyClusters::borrowing(wide.t(), 64, 2), ConfigError);              // columns not adjacent
  EXPECT_THROW(KeyClusters::borrowing(block.to(torch::kDouble), 64, 2), ConfigError);  // not float32
}

TEST(ClusteredSearch, BfloatProductsReturnTheExactTopKInFloat32Order) {
  // Scored in bfloat16 (about 3 significant digits) and re-scored in float32: with every cluster probed, each query's
  // best 10 is the brute-force one in its order and with its float32 scores, with exclusions, over keys copied or
  // borrowed. 4001 keys in clusters of about 64: every product padded past its cluster's end with zero keys.
  const Clustered data = clustered_data(150, 4001, 16, 7);
  std::vector<std::set<std::int64_t>> excluded;
  for (std::int64_t i = 0; i < 150; ++i) excluded.push_back({i, 4000 - i});
  const torch::Tensor wide = torch::cat({torch::randn({4001, 3}), data.keys}, 1);
  const KeyClusters copied(data.keys, 64, 2);
  const KeyClusters borrowed = KeyClusters::borrowing(wide.narrow(1, 3, 16), 64, 2);
  const auto want = brute_force_ids(data.queries, data.keys, 10, excluded);
  for (const KeyClusters* clusters : {&copied, &borrowed}) {
    SCOPED_TRACE(clusters == &copied ? "copied keys" : "borrowed keys");
    ClusteredSearchOptions options;
    options.bfloat16_products = true;
    options.probe = clusters->clusters();
    options.scores_bytes = 64 * 1024;  // several chunks
    options.exclude = exclusion_lists(excluded);
    const TopK top = clusters->search(data.queries, 10, options);
    for (std::int64_t i = 0; i < 150; ++i) EXPECT_EQ(row_of(top.indices, i), want[static_cast<std::size_t>(i)]) << "query " << i;
    const torch::Tensor expected = (data.queries.unsqueeze(1) * data.keys.index_select(0, top.indices.view(-1)).view({150, 10, 16})).sum(2);
    EXPECT_TRUE(torch::allclose(top.scores, expected, 1e-5, 1e-5)) << "scores are float32 products, not bfloat16 ones";
  }
  // Probing some clusters, bfloat16 keeps what float32 keeps (the same clusters are probed), but for near ties.
  ClusteredSearchOptions some;
  some.probe = 8;
  const TopK float32 = copied.search(data.queries, 10, some);
  some.bfloat16_products = true;
  const TopK bfloat16 = copied.search(data.queries, 10, some);
  double same = 0;
  for (std::int64_t i = 0; i < 150; ++i) {
    const std::vector<std::int64_t> a = row_of(float32.indices, i), b = row_of(bfloat16.indices, i);
    for (const std::int64_t id : a) same += std::count(b.begin(), b.end(), id) > 0 ? 0.1 / 150 : 0.0;
  }
  EXPECT_GE(same, 0.99);
}

TEST(ClusteredSearch, BfloatKeysAreHeldAsGivenAndSearchedAsTheirRoundedValues) {
  // Keys given in bfloat16 stay in bfloat16 (half the memory; moved in, regrouped in their own storage): with every
  // cluster probed, in bfloat16 or float32 products, each query's best 10 is the brute-force one over the rounded
  // keys, with float32 scores of them; exact() agrees.
  const Clustered data = clustered_data(120, 3001, 16, 11);
  const torch::Tensor rounded = data.keys.to(torch::kBFloat16);
  const torch::Tensor widened = rounded.to(torch::kFloat);  // the values the bfloat16 keys hold
  torch::Tensor handed = rounded.clone();
  const void* storage = handed.data_ptr();
  const KeyClusters copied(rounded, 64, 2);
  const KeyClusters taken(std::move(handed), 64, 2);
  EXPECT_TRUE(copied.keys_in_bfloat16());
  EXPECT_TRUE(taken.keys_in_bfloat16());
  EXPECT_EQ(taken.grouped_keys(), storage) << "moved-in bfloat16 keys are regrouped where they lie";
  EXPECT_FALSE(KeyClusters(data.keys, 64, 2).keys_in_bfloat16());
  std::vector<std::set<std::int64_t>> excluded;
  for (std::int64_t i = 0; i < 120; ++i) excluded.push_back({i, 3000 - i});
  const auto want = brute_force_ids(data.queries, widened, 10, excluded);
  for (const KeyClusters* clusters : {&copied, &taken}) {
    for (const bool bfloat16_products : {false, true}) {
      SCOPED_TRACE(std::string(clusters == &copied ? "copied" : "moved in") + (bfloat16_products ? ", bfloat16 products" : ", float32 products"));
      ClusteredSearchOptions options;
      options.bfloat16_products = bfloat16_products;
      options.probe = clusters->clusters();
      options.exclude = exclusion_lists(excluded);
      const TopK top = clusters->search(data.queries, 10, options);
      for (std::int64_t i = 0; i < 120; ++i) EXPECT_EQ(row_of(top.indices, i), want[static_cast<std::size_t>(i)]) << "query " << i;
      const torch::Tensor expected = (data.queries.unsqueeze(1) * widened.index_select(0, top.indices.view(-1)).view({120, 10, 16})).sum(2);
      EXPECT_TRUE(torch::allclose(top.scores, expected, 1e-5, 1e-5)) << "float32 scores of the rounded keys";
    }
    const TopK exact = clusters->exact(data.queries, 10, exclusion_lists(excluded));
    for (std::int64_t i = 0; i < 120; ++i) EXPECT_EQ(row_of(exact.indices, i), want[static_cast<std::size_t>(i)]) << "query " << i;
  }
}

TEST(ClusteredSearch, SearchingSomeClustersScansTheirShareAndKeepsMostOfTheExactTop10) {
  const Clustered data = clustered_data(500, 8192, 16, 2);
  ClusteredSearchOptions options;
  options.cluster_size = 128;  // 8192 keys: 64 clusters of 128 on average
  options.probe = 4;
  ClusteredSearchStats stats;
  const TopK top = clustered_top_k(data.queries, data.keys, 10, options, &stats);
  EXPECT_EQ(stats.clusters, 64);
  EXPECT_EQ(stats.probed, 4);
  EXPECT_GT(stats.scanned_fraction, 0.0);
  EXPECT_LT(stats.scanned_fraction, 0.25) << "4 of 64 clusters: a small share of the keys";
  const auto want = brute_force_ids(data.queries, data.keys, 10);
  double recall = 0;
  for (std::int64_t i = 0; i < 500; ++i) {
    const std::vector<std::int64_t> got = row_of(top.indices, i);
    for (const std::int64_t id : want[static_cast<std::size_t>(i)]) recall += std::count(got.begin(), got.end(), id) > 0 ? 0.1 : 0.0;
    EXPECT_EQ(std::set<std::int64_t>(got.begin(), got.end()).size(), 10u) << "query " << i << " got a key twice";
  }
  EXPECT_GE(recall / 500, 0.95) << "a query's neighbours sit in the clusters nearest to it";
  EXPECT_LT(recall / 500, 1.0 + 1e-9);
}

TEST(ClusteredSearch, QueriesWhoseClustersHoldFewerKeysThanAskedArePadded) {
  const Clustered data = clustered_data(5, 256, 8, 3);
  ClusteredSearchOptions options;
  options.cluster_size = 64;  // 4 clusters
  options.probe = 1;
  ClusteredSearchStats stats;
  const TopK top = clustered_top_k(data.queries, data.keys, 200, options, &stats);
  ASSERT_EQ(top.indices.size(1), 200);
  EXPECT_EQ(stats.clusters, 4);
  std::int64_t found = 0;
  for (std::int64_t i = 0; i < 5; ++i) {
    const std::vector<std::int64_t> got = row_of(top.indices, i);
    const auto padded = std::count(got.begin(), got.end(), -1);
    EXPECT_GT(padded, 0) << "one cluster of 4 searched: fewer than 200 of the 256 keys";
    EXPECT_EQ(std::count(got.end() - padded, got.end(), -1), padded) << "padding comes last";
    EXPECT_TRUE(std::isinf(top.scores[i][199].item<float>()));
    found += 200 - padded;
  }
  EXPECT_NEAR(static_cast<double>(found) / (5.0 * 256.0), stats.scanned_fraction, 1e-12) << "every key of a searched cluster is returned";
}

TEST(ClusteredSearch, RefusesInputsItCannotSearch) {
  const torch::Tensor queries = torch::randn({4, 8}), keys = torch::randn({100, 8});
  EXPECT_THROW(clustered_top_k(queries, torch::randn({100, 9}), 5), ConfigError);
  EXPECT_THROW(clustered_top_k(queries.view({-1}), keys, 5), ConfigError);
  EXPECT_THROW(clustered_top_k(queries, keys, -1), ConfigError);
  ClusteredSearchOptions no_probe;
  no_probe.probe = 0;
  EXPECT_THROW(clustered_top_k(queries, keys, 5, no_probe), ConfigError);
  ClusteredSearchOptions short_exclusions;
  short_exclusions.exclude = {torch::tensor(std::vector<std::int64_t>{0, 1}), torch::tensor(std::vector<std::int64_t>{3})};
  EXPECT_THROW(clustered_top_k(queries, keys, 5, short_exclusions), ConfigError) << "indptr for 1 query, 4 given";
  EXPECT_EQ(clustered_top_k(torch::randn({0, 8}), keys, 5).indices.size(0), 0);
}

}  // namespace
}  // namespace xmc
