// UniDEC and DEPSL: the pick-some-labels pool on hand-made batches, the symmetric loss against a
// hand-worked example, the classifier table's own learning rate, concatenated scores, and small
// end-to-end runs (every inference mode far above chance, resume equal to an uninterrupted run).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "engine/optim/optim_options.h"
#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/dataset.h"
#include "engine/loss/loss_entry.h"
#include "engine/method/unidec/concat_weight_choice.h"
#include "engine/method/held_out_queries.h"
#include "engine/method/trained_run.h"
#include "engine/records/chosen_settings.h"
#include "engine/index/index_factory.h"
#include "engine/sampler/hard_negative_shortlist.h"
#include "engine/sampler/psl_batch.h"
#include "engine/store/run_store.h"
#include "engine/text/tokenized_corpus.h"
#include "engine/train/training_run.h"
#include "engine/model/encoder_options.h"
#include "engine/loss/loss_options.h"
#include "engine/sampler/negatives_options.h"
#include "engine/sampler/psl_options.h"
#include "engine/sampler/cluster_batch_options.h"
#include "engine/sampler/query_batcher_options.h"
#include "engine/method/unidec/unidec_options.h"
#include "engine/method/xrlinear/xrlinear_options.h"
#include "tests/support/recording_progress.h"
#include "tests/support/synthetic_dataset.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

/// `n` points around `centres` (point i near centre i mod C), each coordinate off by `spread` · N(0, 1).
torch::Tensor points_around(const torch::Tensor& centres, std::int64_t n, double spread) {
  return centres.index_select(0, torch::arange(n) % centres.size(0)) + spread * torch::randn({n, centres.size(1)});
}

/// Queries and labels for a shortlist search: `n` queries and `num_labels` labels around the same `centres` random
/// centres of `dim` dimensions (torch's generator seeded with `seed`, spread as points_around spreads them); query
/// r's positives are labels (r · step + offset) mod num_labels, one for each (step, offset).
struct ShortlistProblem {
  torch::Tensor queries, labels;
  CsrMatrix positives;
};
ShortlistProblem shortlist_problem(std::int64_t seed, std::int64_t centres, std::int64_t dim, std::int64_t n, std::int64_t num_labels, double spread,
                                   const std::vector<std::pair<std::int64_t, std::int64_t>>& positive_steps) {
  torch::manual_seed(seed);
  const torch::Tensor around = torch::randn({centres, dim});
  ShortlistProblem problem;
  problem.labels = points_around(around, num_labels, spread);
  problem.queries = points_around(around, n, spread);
  std::vector<std::vector<std::int32_t>> rows(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r)
    for (const auto& [step, offset] : positive_steps) rows[static_cast<std::size_t>(r)].push_back(static_cast<std::int32_t>((r * step + offset) % num_labels));
  problem.positives = csr_from_rows(rows, num_labels);
  return problem;
}

std::vector<std::int64_t> to_vector(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kInt64).contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

/// Checks the mask of a pool against the label matrix: entry (i, j) is set iff pool label j is a positive
/// of kept query i, whoever brought it into the pool; and the pool's pair lists are the mask's entries, by row.
void expect_mask_is_membership(const PslBatch& pool, const CsrMatrix& labels, const std::vector<std::int64_t>& batch) {
  const auto kept = to_vector(pool.kept);
  const auto ids = to_vector(pool.labels);
  ASSERT_EQ(pool.positive_mask.sizes(), (std::vector<std::int64_t>{static_cast<std::int64_t>(kept.size()), static_cast<std::int64_t>(ids.size())}));
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto row = labels.row_indices(batch[static_cast<std::size_t>(kept[i])]);
    const std::set<std::int64_t> positives(row.begin(), row.end());
    for (std::size_t j = 0; j < ids.size(); ++j)
      EXPECT_EQ(pool.positive_mask[static_cast<std::int64_t>(i)][static_cast<std::int64_t>(j)].item<bool>(), positives.count(ids[j]) == 1)
          << "query " << kept[i] << ", label " << ids[j];
  }
  const torch::Tensor entries = pool.positive_mask.nonzero();
  EXPECT_EQ(to_vector(pool.pair_rows), to_vector(entries.select(1, 0)));
  EXPECT_EQ(to_vector(pool.pair_columns), to_vector(entries.select(1, 1)));
}

TrainConfig small_unidec_config(const std::filesystem::path& data, const std::string& method = "unidec") {
  TrainConfig c;
  c.dataset = data;
  c.method = method;
  c.edit<LossOptions>().kind = "supcon";
  c.edit<NegativesOptions>().kind = "hard";
  c.edit<EncoderOptions>().dim = 32;
  c.batch_size = 32;
  c.epochs = 4;
  c.lr = 0.01;
  c.edit<UnidecOptions>().classifier_lr = 0.05;
  c.edit<PslOptions>().positives = 2;
  c.edit<PslOptions>().hard_negatives = 2;
  c.edit<PslOptions>().shortlist = 6;
  c.edit<PslOptions>().refresh_every = 2;
  c.edit<QueryBatcherOptions>().type = "cluster";
  c.edit<ClusterBatchOptions>().cluster_size = 4;
  c.threads = 1;
  c.eval_k = {1, 3, 5};
  c.eval_top = 10;
  return c;
}

/// A named tensor of the model in a run's checkpoint ("classifiers", "dual_encoder.de_head.linear.weight").
torch::Tensor checkpoint_tensor(const std::filesystem::path& db, std::int64_t run_id, const std::string& name) {
  torch::serialize::InputArchive archive;
  archive.load_from((TrainingRun::run_directory(db, run_id) / "checkpoint.pt").string());
  torch::serialize::InputArchive model;
  archive.read("model", model);
  torch::Tensor t;
  if (model.try_read(name, t)) return t;
  // Nested modules are nested archives: walk the dotted path.
  torch::serialize::InputArchive node = std::move(model);
  std::string rest = name;
  for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
    torch::serialize::InputArchive child;
    if (!node.try_read(rest.substr(0, dot), child)) break;
    node = std::move(child);
    rest = rest.substr(dot + 1);
  }
  node.read(rest, t);
  return t;
}

/// A finished run as the predictor loads it, and each inference mode's scores of the dataset's test queries.
struct LoadedModes {
  TrainedRun trained;
  std::vector<InferenceMode> modes;
  std::map<std::string, torch::Tensor> test_scores;  ///< by mode name: [test queries x labels]
};

LoadedModes load_and_score_test_queries(const std::filesystem::path& db, std::int64_t run, const std::filesystem::path& data) {
  LoadedModes out{load_trained_run(db, run), {}, {}};
  const Dataset dataset = load_dataset(data);
  const TokenizedCorpus labels = out.trained.method->tokenizer().tokenize(dataset.label_text);
  const TokenizedCorpus test = out.trained.method->tokenizer().tokenize(dataset.test_text);
  out.modes = out.trained.method->inference_modes(labels, silent_progress());
  for (const auto& mode : out.modes)
    out.test_scores[mode.name] =
        torch::matmul(out.trained.method->encode_queries(mode.query_encoder, test, silent_progress(), "test"), mode.label_matrix.t());
  return out;
}

}  // namespace

TEST(PslBatch, AtMostBetaPositivesPerQuerySampledUniformly) {
  const CsrMatrix labels = csr_from_rows({{0, 1, 2, 3, 4}}, 8);
  std::mt19937_64 rng(11);
  std::map<std::int64_t, int> drawn;
  const int draws = 3000;
  for (int d = 0; d < draws; ++d) {
    const PslBatch pool = build_psl_batch(labels, std::vector<std::int64_t>{0}, rng, {.positives_per_query = 3});
    const auto ids = to_vector(pool.labels);
    ASSERT_EQ(ids.size(), 3u);
    for (auto l : ids) {
      ASSERT_LT(l, 5);
      ++drawn[l];
    }
    EXPECT_EQ(pool.positive_mask.sum().item<std::int64_t>(), 3);
  }
  // Each of the 5 positives lands in 3 of 5 pools.
  for (std::int64_t l = 0; l < 5; ++l) EXPECT_NEAR(drawn[l] / static_cast<double>(draws), 0.6, 0.04) << "label " << l;
  // β larger than the row: every positive, once.
  const PslBatch all = build_psl_batch(labels, std::vector<std::int64_t>{0}, rng, {.positives_per_query = 10});
  EXPECT_EQ(to_vector(all.labels), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
}

TEST(PslBatch, EveryPooledPositiveCountsWhoeverBroughtIt) {
  // Query 0: {0, 1, 2}; query 1: {2, 3}; query 2: {5}; β = 1 so most positives come in through others.
  const CsrMatrix labels = csr_from_rows({{0, 1, 2}, {2, 3}, {5}}, 8);
  const std::vector<std::int64_t> batch{0, 1, 2};
  std::mt19937_64 rng(2);
  for (int d = 0; d < 50; ++d) {
    const PslBatch pool = build_psl_batch(labels, batch, rng, {.positives_per_query = 1});
    EXPECT_EQ(to_vector(pool.kept), (std::vector<std::int64_t>{0, 1, 2}));
    expect_mask_is_membership(pool, labels, batch);
  }
}

TEST(PslBatch, HardNegativesJoinThePoolAndAnotherQuerysPositiveStaysItsPositive) {
  const CsrMatrix labels = csr_from_rows({{0, 1}, {2}}, 10);
  const std::vector<std::int64_t> batch{0, 1};
  // Query 1's hard negative 0 is query 0's positive; -1 is an empty shortlist slot.
  const torch::Tensor hard = torch::tensor({7, -1, 0, 9}, torch::kInt64).view({2, 2});
  std::mt19937_64 rng(4);
  const PslBatch pool = build_psl_batch(labels, batch, rng, {.positives_per_query = 5}, hard);
  EXPECT_EQ(to_vector(pool.labels), (std::vector<std::int64_t>{0, 1, 2, 7, 9}));
  expect_mask_is_membership(pool, labels, batch);
  // The label→query mask is the transpose: label 0's positive queries are {0}, label 7 has none.
  const torch::Tensor l2q = pool.positive_mask.t();
  EXPECT_EQ(to_vector(l2q[0].nonzero().reshape({-1})), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(l2q[3].sum().item<std::int64_t>(), 0);
}

TEST(PslBatch, QueriesWithoutLabelsAreDroppedAndTheCapKeepsPositives) {
  const CsrMatrix labels = csr_from_rows({{0, 1, 2}, {}, {3}}, 20);
  const std::vector<std::int64_t> batch{0, 1, 2};
  const torch::Tensor hard = torch::tensor({10, 11, 12, 13, 14, 15, 16, 17, 18}, torch::kInt64).view({3, 3});
  std::mt19937_64 rng(8);
  const PslBatch capped = build_psl_batch(labels, batch, rng, {.positives_per_query = 3, .pool_size = 6}, hard);
  EXPECT_EQ(to_vector(capped.kept), (std::vector<std::int64_t>{0, 2}));  // query 1 has no positives
  const auto ids = to_vector(capped.labels);
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ(std::vector<std::int64_t>(ids.begin(), ids.begin() + 4), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_GE(ids[4], 10);
  EXPECT_GE(ids[5], 10);
  expect_mask_is_membership(capped, labels, batch);
  // A cap below the sampled positives drops negatives only.
  const PslBatch tight = build_psl_batch(labels, batch, rng, {.positives_per_query = 3, .pool_size = 2}, hard);
  EXPECT_EQ(to_vector(tight.labels), (std::vector<std::int64_t>{0, 1, 2, 3}));
  // negatives = all: every label, the mask is the label matrix's rows.
  const PslBatch all = build_psl_batch(labels, batch, rng, {.all_labels = true});
  EXPECT_EQ(all.labels.size(0), 20);
  EXPECT_EQ(all.positive_mask.sum().item<std::int64_t>(), 4);
}

TEST(HardNegativeWindow, ARefreshWindowUsesEtaTimesTauDistinctShortlistEntries) {
  // Two queries, shortlists of 12; η = 3 per epoch over τ = 4 epochs uses all 12, none twice.
  const torch::Tensor shortlist = (torch::arange(24, torch::kInt64) + 100).view({2, 12});
  HardNegativeWindow window;
  std::mt19937_64 rng(6);
  window.refresh(shortlist, /*epoch=*/10, rng);
  const std::vector<std::int64_t> batch{1, 0};
  std::vector<std::multiset<std::int64_t>> seen(2);
  for (std::int64_t epoch = 10; epoch < 14; ++epoch) {
    const torch::Tensor drawn = window.draw(batch, epoch, 3);
    ASSERT_EQ(drawn.sizes(), (std::vector<std::int64_t>{2, 3}));
    for (std::int64_t i = 0; i < 2; ++i)
      for (auto l : to_vector(drawn[i])) seen[static_cast<std::size_t>(batch[static_cast<std::size_t>(i)])].insert(l);
  }
  for (std::int64_t q = 0; q < 2; ++q) {
    std::multiset<std::int64_t> expected;
    for (std::int64_t k = 0; k < 12; ++k) expected.insert(100 + q * 12 + k);
    EXPECT_EQ(seen[static_cast<std::size_t>(q)], expected) << "query " << q;
  }
  // A new refresh shuffles again: the first epoch's draw differs from the last window's (with 12!/9! orders,
  // equal draws for both queries would be a broken shuffle).
  const torch::Tensor before = window.draw(batch, 10, 3);
  window.refresh(shortlist, 14, rng);
  EXPECT_FALSE(torch::equal(before, window.draw(batch, 14, 3)));
}

// The window is shuffled slice by slice of rows (its sort's temporaries would take several N x S arrays at 2M
// queries); it must equal one shuffle of the whole [N x S] by the same draws: 40,000 rows span three slices.
TEST(HardNegativeWindow, ShufflingSliceBySliceEqualsOneShuffleOfTheWhole) {
  const std::int64_t n = 40000, s = 5;
  const torch::Tensor shortlist = torch::arange(n * s, torch::kInt64).view({n, s});
  HardNegativeWindow window;
  std::mt19937_64 rng(11);
  window.refresh(shortlist, 0, rng);
  std::mt19937_64 same(11);
  const at::Generator generator = at::detail::createCPUGenerator(same());
  const torch::Tensor expected = shortlist.gather(1, torch::rand({n, s}, generator, torch::kFloat64).argsort(1, false));
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  EXPECT_TRUE(torch::equal(window.draw(all, 0, s), expected));
  window.release();
  EXPECT_FALSE(window.ready());
}

// An int32 shortlist handed over (the refresh's only handle) is shuffled where it lies, to the draws a copy gets;
// one the caller still holds is left as it was.
TEST(HardNegativeWindow, AShortlistHandedOverIsShuffledInPlaceToTheSameDraws) {
  const std::int64_t n = 30000, s = 7;
  const torch::Tensor shortlist = torch::arange(n * s, torch::kInt32).view({n, s});
  const torch::Tensor kept = shortlist.clone();
  HardNegativeWindow from_copy, in_place;
  std::mt19937_64 rng_a(21), rng_b(21);
  from_copy.refresh(shortlist, 2, rng_a);
  EXPECT_TRUE(torch::equal(shortlist, kept)) << "a shortlist the caller holds is not shuffled under it";
  torch::Tensor handed = shortlist.clone();
  in_place.refresh(std::move(handed), 2, rng_b);
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  for (std::int64_t epoch = 2; epoch < 4; ++epoch) EXPECT_TRUE(torch::equal(in_place.draw(all, epoch, 3), from_copy.draw(all, epoch, 3)));
  EXPECT_EQ(rng_a(), rng_b()) << "both drew as much from the stream";
}

// The window keeps label ids as int32 (half the memory of the shortlist); it saves and loads to the same draws,
// a checkpoint written when it kept int64 ids loads to the same draws too, and ids beyond int32 are refused by name.
TEST(HardNegativeWindow, SavedAndOlderInt64WindowsLoadToTheSameDraws) {
  const torch::Tensor shortlist = (torch::arange(24, torch::kInt64) + 100).view({2, 12});
  HardNegativeWindow window;
  std::mt19937_64 rng(6);
  window.refresh(shortlist, /*epoch=*/3, rng);
  const std::vector<std::int64_t> batch{1, 0};
  const torch::Tensor drawn = window.draw(batch, 4, 3);
  EXPECT_EQ(drawn.scalar_type(), torch::kInt64);
  const auto reload = [](torch::serialize::OutputArchive& archive) {
    std::ostringstream bytes;
    archive.save_to(bytes);
    std::istringstream stream(bytes.str());
    torch::serialize::InputArchive in;
    in.load_from(stream);
    HardNegativeWindow loaded;
    loaded.load(in, "w");
    return loaded;
  };
  torch::serialize::OutputArchive saved;
  window.save(saved, "w");
  EXPECT_TRUE(torch::equal(reload(saved).draw(batch, 4, 3), drawn));
  // The whole window (epoch 3, columns 0..11) as the int64 matrix an older checkpoint held.
  const torch::Tensor whole = window.draw(std::vector<std::int64_t>{0, 1}, 3, 12);
  torch::serialize::OutputArchive older;
  older.write("w_epoch", torch::tensor({std::int64_t{3}}));
  older.write("w_shuffled", whole);
  EXPECT_TRUE(torch::equal(reload(older).draw(batch, 4, 3), drawn));
  torch::serialize::OutputArchive damaged;
  damaged.write("w_epoch", torch::tensor({std::int64_t{3}}));
  damaged.write("w_shuffled", whole + (std::int64_t{1} << 32));
  try {
    reload(damaged);
    ADD_FAILURE() << "an id beyond int32 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w_shuffled holds a label id outside [-1, 2^31)"), std::string::npos) << e.what();
  }
}

TEST(HardNegativeWindow, ShortlistsLeaveTheQuerysPositivesOut) {
  // Query 0 sits on label 0 (its positive) and next to label 1; query 1 sits on label 2 (its positive).
  const torch::Tensor queries = torch::tensor({1.0f, 0.0f, 0.0f, 1.0f}).view({2, 2});
  const torch::Tensor label_vectors = torch::tensor({1.0f, 0.0f, 0.9f, 0.1f, 0.0f, 1.0f, -1.0f, 0.0f}).view({4, 2});
  const CsrMatrix positives = csr_from_rows({{0}, {2}}, 4);
  const torch::Tensor shortlist = hard_negative_shortlist(queries, label_vectors, positives, 2);
  EXPECT_EQ(to_vector(shortlist[0]), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(to_vector(shortlist[1]), (std::vector<std::int64_t>{1, 0}));
}

// Approximate shortlists (hard.search = ivf or hnsw): never a positive, the recalls they report are the overlap
// with the exact shortlists (computed here over every query, the sample being all of them), and they are high on
// embeddings with structure; auto is exact below its label count and ivf from it; an unknown search is refused.
TEST(HardNegativeShortlist, ApproximateShortlistsReportTheirRecallAgainstTheExactOne) {
  const std::int64_t n = 300, num_labels = 3000, size = 20;
  const ShortlistProblem problem = shortlist_problem(5, 30, 16, n, num_labels, 0.5, {{7, 0}, {13, 1}});
  const torch::Tensor &queries = problem.queries, &labels = problem.labels;
  const CsrMatrix& positives = problem.positives;
  const torch::Tensor exact = hard_negative_shortlist(queries, labels, positives, size);
  for (const std::string variant : {"hnsw", "ivf", "ivf bfloat16", "ivf bfloat16 labels"}) {
    SCOPED_TRACE(variant);
    const std::string kind = variant.substr(0, 4) == "hnsw" ? "hnsw" : "ivf";
    const bool bfloat16 = variant == "ivf bfloat16", bfloat16_labels = variant == "ivf bfloat16 labels";
    ShortlistReport report;
    const torch::Tensor approximate = hard_negative_shortlist(
        queries, labels, positives, size, silent_progress(), {.kind = kind, .probe = 16, .bfloat16_products = bfloat16, .bfloat16_labels = bfloat16_labels},
        &report);
    ASSERT_EQ(approximate.sizes(), exact.sizes());
    EXPECT_TRUE(report.approximate);
    EXPECT_EQ(report.how, kind);
    EXPECT_EQ(report.sampled, n);
    double overlap = 0, overlap_10 = 0;
    for (std::int64_t r = 0; r < n; ++r) {
      const std::vector<std::int64_t> got = to_vector(approximate[r]), want = to_vector(exact[r]);
      for (const std::int64_t label : got) {
        EXPECT_NE(label, (r * 7) % num_labels) << "row " << r << " kept a positive";
        EXPECT_NE(label, (r * 13 + 1) % num_labels) << "row " << r << " kept a positive";
      }
      std::int64_t hits = 0, hits_10 = 0;
      for (const std::int64_t label : want) hits += std::count(got.begin(), got.end(), label) > 0 ? 1 : 0;
      for (std::size_t j = 0; j < 10; ++j) hits_10 += std::count(got.begin(), got.begin() + 10, want[j]) > 0 ? 1 : 0;
      overlap += static_cast<double>(hits) / size;
      overlap_10 += static_cast<double>(hits_10) / 10;
    }
    EXPECT_NEAR(report.recall, overlap / n, 1e-12);
    EXPECT_NEAR(report.recall_at_10, overlap_10 / n, 1e-12);
    EXPECT_GE(report.recall_at_10, 0.95);
    const std::string line = report.describe(num_labels, size);
    EXPECT_NE(line.find(kind == "hnsw" ? "HNSW over 3000 labels, recall@20 " : "IVF over 3000 labels ("), std::string::npos) << line;
    if (kind == "ivf") {
      // 3000 labels in clusters of 64 on average (sqrt(3000) = 55 is below the floor of 64): 47 clusters, 16 searched.
      EXPECT_EQ(report.clusters, 47);
      EXPECT_EQ(report.bfloat16, bfloat16);
      EXPECT_EQ(line.find("labels held and multiplied in bfloat16, candidates re-scored in float32") != std::string::npos, bfloat16) << line;
      EXPECT_EQ(report.bfloat16_labels, bfloat16 || bfloat16_labels);
      EXPECT_EQ(line.find("labels held in bfloat16, multiplied in float32") != std::string::npos, bfloat16_labels) << line;
      EXPECT_EQ(report.probed, 16);
      EXPECT_GT(report.scanned_fraction, 0.0);
      EXPECT_LT(report.scanned_fraction, 0.6);
    }
  }

  ShortlistReport below;
  const torch::Tensor automatic = hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "auto", .ann_above = 3001}, &below);
  EXPECT_FALSE(below.approximate);
  EXPECT_TRUE(torch::equal(automatic, exact)) << "below hard.search_above, auto is exact";
  ShortlistReport above;
  hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "auto", .ann_above = 3000}, &above);
  EXPECT_TRUE(above.approximate);
  EXPECT_EQ(above.how, "ivf");
  EXPECT_THROW(hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "annoy"}), ConfigError);
  EXPECT_THROW(hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "ivf", .probe = 0}), ConfigError);
}

// An IVF refresh raises its probe (by half at a time from hard.probe, at least by one, up to hard.max_probe) until
// the sampled queries keep 0.95 of their exact top 10, and says so: the probe before the one it stops at keeps less.
// Capped lower, it stops at the cap with the recall it got.
TEST(HardNegativeShortlist, IvfRefreshRaisesItsProbeTowardTheRecallTarget) {
  const std::int64_t n = 400, num_labels = 3000, size = 20;
  const ShortlistProblem problem = shortlist_problem(8, 30, 16, n, num_labels, 0.5, {{11, 0}});
  const torch::Tensor &queries = problem.queries, &labels = problem.labels;
  const CsrMatrix& positives = problem.positives;
  // 3000 labels: 47 clusters of about 64. One probed cluster keeps little of a query's top 10.
  ShortlistReport fixed;
  hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "ivf", .probe = 1}, &fixed);
  ASSERT_LT(fixed.recall_at_10, 0.95);
  EXPECT_EQ(fixed.probed, 1);

  ShortlistReport raised;
  const torch::Tensor ids = hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "ivf", .probe = 1, .max_probe = 64}, &raised);
  EXPECT_GE(raised.recall_at_10, 0.95);
  ASSERT_GT(raised.probed, 1);
  EXPECT_LE(raised.probed, 47);
  std::int64_t before = 0, probe = 1;  // 1, 2, 3, 4, 6, 9, 13, ...: each half as large again as the last, at least one more
  while (probe < raised.probed) before = probe, probe += std::max<std::int64_t>(1, probe / 2);
  EXPECT_EQ(probe, raised.probed) << "not a probe of the sequence from 1";
  ShortlistReport one_step_less;
  hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "ivf", .probe = before}, &one_step_less);
  EXPECT_LT(one_step_less.recall_at_10, 0.95) << "probe " << before << " already kept 0.95";
  EXPECT_EQ(raised.first_probe, 1);
  const std::string line = raised.describe(num_labels, size);
  EXPECT_NE(line.find(std::to_string(raised.probed) + " searched, raised from 1 toward recall@10 0.95"), std::string::npos) << line;
  for (std::int64_t r = 0; r < n; ++r)
    for (const std::int64_t label : to_vector(ids[r])) EXPECT_NE(label, (r * 11) % num_labels) << "row " << r << " kept its positive";

  ShortlistReport capped;
  hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = "ivf", .probe = 1, .max_probe = 2}, &capped);
  EXPECT_EQ(capped.probed, 2) << "probe 1 keeps under 0.95 (asserted above), and 2 is the cap";
  EXPECT_LE(capped.recall_at_10, raised.recall_at_10);
}

// hard.search's descriptions are eval.index's: each is an index description too, and its parameters reach the search
// (standing in for hard.probe and hard.cluster_size); a described probe searches as the same probe given by key.
TEST(HardNegativeShortlist, HardSearchDescribesItsSearchAsEvalIndexDoes) {
  for (const std::string spec : {"exact", "ivf", "ivf:probe=8,size=100", "hnsw", "hnsw:M=8,ef=50,efc=40"}) EXPECT_NO_THROW(check_index_spec(spec)) << spec;
  NegativesOptions options;
  options.search = "ivf:probe=8,size=100";
  ShortlistSearch search = shortlist_search(options);
  EXPECT_EQ(search.kind, "ivf");
  EXPECT_EQ(search.probe, 8);
  EXPECT_EQ(search.cluster_size, 100);
  options.search = "ivf";
  options.probe = 32;
  search = shortlist_search(options);
  EXPECT_EQ(search.probe, 32);
  EXPECT_EQ(search.cluster_size, 0);
  options = NegativesOptions{};
  options.search = "hnsw:M=8,ef=50,efc=40";
  search = shortlist_search(options);
  EXPECT_EQ(search.kind, "hnsw");
  EXPECT_EQ(search.hnsw_links, 8);
  EXPECT_EQ(search.hnsw_search_candidates, 50);
  EXPECT_EQ(search.hnsw_build_candidates, 40);

  const std::int64_t size = 20;
  const ShortlistProblem problem = shortlist_problem(8, 30, 16, 400, 3000, 0.5, {{11, 0}});
  options = NegativesOptions{};
  options.search = "ivf:probe=3";
  options.max_probe = 3;  // no tuning: the probe as described
  options.precision = "float32";
  ShortlistReport described, keyed;
  const torch::Tensor by_description = hard_negative_shortlist(problem.queries, problem.labels, problem.positives, size, silent_progress(),
                                                               shortlist_search(options), &described);
  const torch::Tensor by_key = hard_negative_shortlist(problem.queries, problem.labels, problem.positives, size, silent_progress(),
                                                       {.kind = "ivf", .probe = 3}, &keyed);
  EXPECT_EQ(described.probed, 3);
  EXPECT_TRUE(torch::equal(by_description, by_key));
}

// A first probe that already keeps 0.95 of the sampled queries' exact top 10 is lowered by a third at a time (at
// least by one) while it still does, and the log says so; the next lower probe keeps less. Without room to tune
// (hard.max_probe at or below hard.probe) the probe is searched as it is.
TEST(HardNegativeShortlist, IvfRefreshLowersAProbeThatKeepsMoreThanTheTarget) {
  const std::int64_t n = 400, num_labels = 3000, size = 20;
  const ShortlistProblem problem = shortlist_problem(8, 30, 16, n, num_labels, 0.5, {{11, 0}});
  // 3000 labels: 47 clusters of about 64; 40 of them keep nearly all of a query's top 10.
  ShortlistReport first;
  hard_negative_shortlist(problem.queries, problem.labels, problem.positives, size, silent_progress(), {.kind = "ivf", .probe = 40}, &first);
  ASSERT_GE(first.recall_at_10, 0.95);
  EXPECT_EQ(first.probed, 40);

  ShortlistReport lowered;
  hard_negative_shortlist(problem.queries, problem.labels, problem.positives, size, silent_progress(), {.kind = "ivf", .probe = 40, .max_probe = 64},
                          &lowered);
  EXPECT_GE(lowered.recall_at_10, 0.95);
  ASSERT_LT(lowered.probed, 40);
  std::int64_t probe = 40;  // 40, 27, 18, 12, 8, 6, 4, 3, 2, 1: each a third smaller than the last, at least one
  while (probe > lowered.probed) probe -= std::max<std::int64_t>(1, probe / 3);
  EXPECT_EQ(probe, lowered.probed) << "not a probe of the sequence from 40";
  if (lowered.probed > 1) {
    ShortlistReport one_step_less;
    const std::int64_t next = lowered.probed - std::max<std::int64_t>(1, lowered.probed / 3);
    hard_negative_shortlist(problem.queries, problem.labels, problem.positives, size, silent_progress(), {.kind = "ivf", .probe = next}, &one_step_less);
    EXPECT_LT(one_step_less.recall_at_10, 0.95) << "probe " << next << " still kept 0.95";
  }
  const std::string line = lowered.describe(num_labels, size);
  EXPECT_NE(line.find(std::to_string(lowered.probed) + " searched, lowered from 40 keeping recall@10 0.95"), std::string::npos) << line;
}

// The inverted file's clusters: about sqrt(labels) / 4 labels each by default (four times sqrt(labels) clusters, at least
// 64 labels each), or hard.cluster_size as set; a negative size is refused by name.
TEST(HardNegativeShortlist, IvfClustersHoldAQuarterOfSqrtLabelsOrHardClusterSize) {
  EXPECT_EQ(ivf_labels_per_cluster({}, 1'000'000), 250);  // sqrt = 1000: 4,000 clusters
  EXPECT_EQ(ivf_labels_per_cluster({}, 1'300'000), 286);  // sqrt = 1140.2, a quarter 285.04, rounded up
  EXPECT_EQ(ivf_labels_per_cluster({}, 40'000), 64);      // a quarter of 200 is under the floor
  EXPECT_EQ(ivf_labels_per_cluster({.cluster_size = 100}, 1'000'000), 100);
  try {
    ivf_labels_per_cluster({.cluster_size = -1}, 1000);
    ADD_FAILURE() << "a negative cluster size was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("hard.cluster_size"), std::string::npos) << e.what();
  }
  const ShortlistProblem problem = shortlist_problem(8, 30, 16, 200, 3000, 0.5, {{11, 0}});
  ShortlistReport report;
  hard_negative_shortlist(problem.queries, problem.labels, problem.positives, 20, silent_progress(), {.kind = "ivf", .cluster_size = 30, .probe = 4}, &report);
  EXPECT_EQ(report.clusters, 100);  // 3000 labels / 30
  EXPECT_EQ(report.probed, 4);
}

// A refresh embeds the training queries a slice at a time (never all of them at once; an IVF refresh embeds its
// sampled rows first), and the shortlists and recalls it finds are those of the same queries embedded beforehand:
// int32 ids, exact or approximate.
TEST(HardNegativeShortlist, EmbedsTheQueriesASliceAtATime) {
  set_memory_budget_mb(kMinMemoryBudgetMb);  // slices of 32 MB / 16 / (12 bytes x 20) = 8,738 queries
  const std::int64_t n = 20000, num_labels = 4096, size = 20;
  const ShortlistProblem problem = shortlist_problem(9, 64, 8, n, num_labels, 0.3, {{7, 0}});
  const torch::Tensor &queries = problem.queries, &labels = problem.labels;
  const CsrMatrix& positives = problem.positives;
  for (const std::string kind : {"exact", "ivf"}) {
    SCOPED_TRACE(kind);
    std::vector<std::pair<std::int64_t, std::int64_t>> asked;
    const RowEmbeddings streamed{.count = n, .embed = [&](std::int64_t begin, std::int64_t end) {
                               asked.emplace_back(begin, end);
                               return queries.narrow(0, begin, end - begin).clone();
                             }};
    ShortlistReport by_slice, at_once;
    const torch::Tensor got = hard_negative_shortlist(streamed, labels, positives, size, silent_progress(), {.kind = kind, .probe = 4}, &by_slice);
    const torch::Tensor want = hard_negative_shortlist(queries, labels, positives, size, silent_progress(), {.kind = kind, .probe = 4}, &at_once);
    EXPECT_EQ(got.scalar_type(), torch::kInt32);
    EXPECT_EQ(got.sizes(), (std::vector<std::int64_t>{n, size}));
    EXPECT_TRUE(torch::equal(got, want));
    if (kind == "ivf") {
      // First the 1,000 sampled rows (i x 20), one by one: the probe is tuned and the recall measured on them.
      ASSERT_GE(asked.size(), 1000u);
      for (std::int64_t i = 0; i < 1000; ++i)
        EXPECT_EQ(asked[static_cast<std::size_t>(i)], std::make_pair(i * 20, i * 20 + 1)) << "sampled row " << i;
      asked.erase(asked.begin(), asked.begin() + 1000);
    }
    ASSERT_EQ(asked.size(), 3u) << "20,000 queries in slices of 8,738";
    std::int64_t next = 0;
    for (const auto& [begin, end] : asked) {
      EXPECT_EQ(begin, next);
      EXPECT_LE(end - begin, 8738);
      next = end;
    }
    EXPECT_EQ(next, n);
    EXPECT_EQ(by_slice.sampled, at_once.sampled);
    EXPECT_DOUBLE_EQ(by_slice.recall, at_once.recall);
    EXPECT_DOUBLE_EQ(by_slice.recall_at_10, at_once.recall_at_10);
    if (kind == "ivf") {
      EXPECT_EQ(by_slice.sampled, 1000);
      EXPECT_LT(by_slice.recall, 1.0) << "4 of 64 clusters searched: some exact neighbours are missed";
    }
  }
  // A slice embedded to the wrong number of rows is refused by name.
  const RowEmbeddings short_rows{.count = n, .embed = [&](std::int64_t begin, std::int64_t end) { return queries.narrow(0, begin, end - begin - 1); }};
  EXPECT_THROW(hard_negative_shortlist(short_rows, labels, positives, size), Error);
  set_memory_budget_mb(0);
}

// Labels embedded a slice at a time (as a refresh embeds them from the model): exact and float32 IVF searches find
// what they find over the matrix made beforehand; an IVF search in bfloat16 never asks for them all at once, and the
// recall it reports is against the float32 labels' exact shortlists. A slice of the wrong shape is refused by name.
TEST(HardNegativeShortlist, EmbedsTheLabelsASliceAtATime) {
  set_memory_budget_mb(kMinMemoryBudgetMb);  // label slices of 2 MB / (4 bytes x (8 + 500 sampled queries)) = 1,032 labels
  const std::int64_t n = 500, num_labels = 4096, dim = 8, size = 20;
  const ShortlistProblem problem = shortlist_problem(12, 64, dim, n, num_labels, 0.3, {{7, 0}, {5, 3}});
  const torch::Tensor &queries = problem.queries, &labels = problem.labels;
  const CsrMatrix& positives = problem.positives;
  std::vector<std::pair<std::int64_t, std::int64_t>> asked;
  const RowEmbeddings label_rows{.count = num_labels, .embed = [&](std::int64_t begin, std::int64_t end) {
                                   asked.emplace_back(begin, end);
                                   return labels.narrow(0, begin, end - begin).clone();
                                 }};
  const torch::Tensor exact = hard_negative_shortlist(queries, labels, positives, size);
  for (const std::string variant : {"exact", "ivf", "ivf bfloat16", "ivf bfloat16 labels"}) {
    SCOPED_TRACE(variant);
    const ShortlistSearch search{.kind = variant.substr(0, 3) == "ivf" ? "ivf" : "exact",
                                 .probe = 8,
                                 .bfloat16_products = variant == "ivf bfloat16",
                                 .bfloat16_labels = variant == "ivf bfloat16 labels"};
    const bool held_in_bfloat16 = search.bfloat16_products || search.bfloat16_labels;
    asked.clear();
    ShortlistReport by_slice, at_once;
    const torch::Tensor got = hard_negative_shortlist(RowEmbeddings::of(queries), label_rows, positives, size, silent_progress(), search, &by_slice);
    const torch::Tensor want = hard_negative_shortlist(queries, labels, positives, size, silent_progress(), search, &at_once);
    ASSERT_EQ(got.sizes(), (std::vector<std::int64_t>{n, size}));
    EXPECT_TRUE(torch::equal(got, want));
    EXPECT_DOUBLE_EQ(by_slice.recall_at_10, at_once.recall_at_10);
    // The labels in order, a first slice of 256 (its width sizes the rest); in bfloat16 none of the later ones
    // over 1,032, gathered in float32 the rest at once (2 MB / (4 bytes x 8) = 65,536).
    ASSERT_GE(asked.size(), 2u);
    std::int64_t next = 0;
    for (const auto& [begin, end] : asked) {
      EXPECT_EQ(begin, next);
      EXPECT_LE(end - begin, begin == 0 ? 256 : held_in_bfloat16 ? 1032 : 65536);
      next = end;
    }
    EXPECT_EQ(next, num_labels);
    if (!held_in_bfloat16) continue;
    EXPECT_GE(asked.size(), 5u);
    // Every query is sampled (500 < 1,000): the recall reported is the overlap with the float32 exact shortlists.
    EXPECT_EQ(by_slice.sampled, n);
    double overlap_10 = 0;
    for (std::int64_t r = 0; r < n; ++r) {
      const std::vector<std::int64_t> found = to_vector(got[r]), truth = to_vector(exact[r]);
      for (std::size_t j = 0; j < 10; ++j) overlap_10 += std::count(found.begin(), found.begin() + 10, truth[j]) > 0 ? 0.1 : 0.0;
      for (const std::int64_t label : found) {
        EXPECT_NE(label, (r * 7) % num_labels) << "row " << r << " kept a positive";
        EXPECT_NE(label, (r * 5 + 3) % num_labels) << "row " << r << " kept a positive";
      }
    }
    EXPECT_NEAR(by_slice.recall_at_10, overlap_10 / n, 1e-9);
    EXPECT_GE(by_slice.recall_at_10, 0.9);
    EXPECT_EQ(by_slice.bfloat16, search.bfloat16_products);
    EXPECT_TRUE(by_slice.bfloat16_labels);
  }
  const RowEmbeddings narrower{.count = num_labels, .embed = [&](std::int64_t begin, std::int64_t end) {
                                 return labels.narrow(0, begin, end - begin).narrow(1, 0, begin == 0 ? dim : dim - 1);
                               }};
  for (const bool bfloat16 : {false, true}) {
    try {
      hard_negative_shortlist(RowEmbeddings::of(queries), narrower, positives, size, silent_progress(), {.kind = "ivf", .bfloat16_products = bfloat16});
      ADD_FAILURE() << "labels of two widths were accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("labels 256 to "), std::string::npos) << error.what();
    }
  }
  set_memory_budget_mb(0);
}

TEST(SymmetricLoss, EqualsBothDirectionsWorkedByHand) {
  // S = [[1, 3], [0, 2]], positives (0,0), (1,0), (1,1); SupCon at τ = 1.
  const torch::Tensor scores = torch::tensor({1.0, 3.0, 0.0, 2.0}, torch::kFloat64).view({2, 2});
  const torch::Tensor mask = torch::tensor({true, false, true, true}).view({2, 2});
  LossOptions options;
  options.temperature = 1.0;
  auto lse = [](double a, double b) { return std::log(std::exp(a) + std::exp(b)); };
  // Queries ranking labels: row 0 has positive 1 (score 1) among {1, 3}; row 1 has both of {0, 2}.
  const double q2l = ((lse(1, 3) - 1) + ((lse(0, 2) - 0) + (lse(0, 2) - 2)) / 2) / 2;
  // Labels ranking queries: label 0 has both queries {1, 0} positive; label 1 has query 1 (score 2) among {3, 2}.
  const double l2q = (((lse(1, 0) - 1) + (lse(1, 0) - 0)) / 2 + (lse(3, 2) - 2)) / 2;
  EXPECT_NEAR(symmetric_loss(loss_entry("supcon"), scores, mask, options).item<double>(), 0.5 * q2l + 0.5 * l2q, 1e-12);
  EXPECT_NEAR(symmetric_loss(loss_entry("supcon"), scores, mask, options, 1.0).item<double>(), q2l, 1e-12);
  // The gradient flows through both directions.
  const torch::Tensor s = scores.clone().requires_grad_(true);
  symmetric_loss(loss_entry("decoupled_softmax"), s, mask, options).backward();
  EXPECT_GT(s.grad().abs().sum().item<double>(), 0);
}

// SupCon and the decoupled softmax are computed for both directions at once, with a backward written by hand;
// they must equal the two one-direction losses (each checked against hand-worked values in losses_test)
// composed, in value and gradient. The first mask has a row without positives, a row of positives only and a
// column without positives; the second gives that row a positive, which makes its column all positives.
TEST(SymmetricLoss, BothDirectionsAtOnceEqualTheOneDirectionLossesComposed) {
  torch::manual_seed(3);
  const torch::Tensor scores = torch::randn({5, 6}, torch::kFloat64);
  const torch::Tensor with_empty_row = torch::tensor({0, 1, 0, 0, 1, 0,   // two positives
                                                      0, 0, 0, 0, 0, 0,   // none
                                                      1, 1, 1, 1, 1, 1,   // all
                                                      0, 1, 0, 1, 0, 0,   //
                                                      0, 1, 0, 0, 0, 0},  // (column 0, 2, 5: row 2's only)
                                                     torch::kBool)
                                         .view({5, 6});
  torch::Tensor with_full_column = with_empty_row.clone();
  with_full_column[1][1] = true;
  ASSERT_EQ(with_full_column.sum(0)[1].item<std::int64_t>(), 5);
  LossOptions options;
  options.temperature = 0.3;
  for (const torch::Tensor& mask : {with_empty_row, with_full_column}) {
    for (const LossEntry& kind : {loss_entry("supcon"), loss_entry("decoupled_softmax")}) {
      for (const double w : {0.5, 0.2}) {
        const torch::Tensor fused_scores = scores.clone().requires_grad_(true);
        const torch::Tensor composed_scores = scores.clone().requires_grad_(true);
        const torch::Tensor fused = symmetric_loss(kind, fused_scores, mask, options, w);
        const torch::Tensor composed = w * compute_loss(kind, composed_scores, mask, options) +
                                       (1 - w) * compute_loss(kind, composed_scores.t(), mask.t(), options);
        fused.backward();
        composed.backward();
        EXPECT_NEAR(fused.item<double>(), composed.item<double>(), 1e-12) << kind.name << " w " << w;
        EXPECT_TRUE(torch::allclose(fused_scores.grad(), composed_scores.grad(), 0, 1e-12))
            << kind.name << " w " << w << "\n" << fused_scores.grad() << "\n" << composed_scores.grad();
      }
    }
  }
  // Logits spread too far for one shift (S·40/τ spans ~700): each row and column takes its own, same results.
  const torch::Tensor spread = scores * 40;
  for (const LossEntry& kind : {loss_entry("supcon"), loss_entry("decoupled_softmax")}) {
    const torch::Tensor fused_scores = spread.clone().requires_grad_(true);
    const torch::Tensor composed_scores = spread.clone().requires_grad_(true);
    const torch::Tensor fused = symmetric_loss(kind, fused_scores, with_full_column, options, 0.5);
    const torch::Tensor composed =
        0.5 * compute_loss(kind, composed_scores, with_full_column, options) + 0.5 * compute_loss(kind, composed_scores.t(), with_full_column.t(), options);
    fused.backward();
    composed.backward();
    EXPECT_NEAR(fused.item<double>(), composed.item<double>(), 1e-9 * std::abs(composed.item<double>())) << kind.name << " spread";
    EXPECT_TRUE(torch::allclose(fused_scores.grad(), composed_scores.grad(), 0, 1e-12)) << kind.name << " spread";
  }
  const torch::Tensor mask = with_empty_row;
  // No positive at all: zero, and backward still works.
  const torch::Tensor s = scores.clone().requires_grad_(true);
  const torch::Tensor none = symmetric_loss(loss_entry("decoupled_softmax"), s, torch::zeros_like(mask), options);
  none.backward();
  EXPECT_EQ(none.item<double>(), 0.0);
  EXPECT_EQ(s.grad().abs().sum().item<double>(), 0.0);
}

// A caller that built the mask hands its entries in (UniDEC's pool does): the same loss and gradient as
// when they are read off the mask, in float as the training step computes it; pair lists that do not pair up
// are refused.
TEST(SymmetricLoss, GivenPairsGiveTheSameLossAsTheMasksOwn) {
  torch::manual_seed(4);
  const torch::Tensor scores = torch::randn({6, 9});
  const torch::Tensor mask = torch::rand({6, 9}) < 0.3;
  const torch::Tensor entries = mask.nonzero();
  ASSERT_GT(entries.size(0), 3);
  LossOptions options;
  options.temperature = 0.05;
  for (const LossEntry& kind : {loss_entry("supcon"), loss_entry("decoupled_softmax")}) {
    const torch::Tensor given_scores = scores.clone().requires_grad_(true);
    const torch::Tensor own_scores = scores.clone().requires_grad_(true);
    const torch::Tensor given = symmetric_loss(kind, given_scores, mask, entries.select(1, 0), entries.select(1, 1), options);
    const torch::Tensor own = symmetric_loss(kind, own_scores, mask, options);
    given.backward();
    own.backward();
    EXPECT_EQ(given.item<float>(), own.item<float>()) << kind.name;
    EXPECT_TRUE(torch::equal(given_scores.grad(), own_scores.grad())) << kind.name;
  }
  EXPECT_THROW(symmetric_loss(loss_entry("supcon"), scores, mask, entries.select(1, 0), entries.select(1, 1).narrow(0, 0, 2), options), c10::Error);
}

// Three queries, three labels (worked by hand). Query 0 (positive 0): de [0.9 0.5 0], clf [0 0.9 0.5] — label 0
// leads while 0.9(1-w) > 0.5 + 0.4w, i.e. w < 4/13. Query 1 (positive 2): de [0 0.9 0.5], clf [0.1 0 0.9] — label 2
// leads once w > 4/13. Query 2 (positive 0): de [0.8 0.3 0], clf [0.6 0.7 0] — label 0 leads while w < 5/6. With
// 3 labels P@3 = 1/3 always and P@5 is not counted, so a weight scores (hits at 1)/3 + 1/3:
// w ≤ 0.3 → 2/3 + 1/3, 0.4–0.8 → 2/3 + 1/3, 0.9 and 1 (the clf mode) → 1/3 + 1/3.
TEST(ConcatWeightChoice, ScoresEveryWeightAndBreaksTiesTowardThePreferredOne) {
  const torch::Tensor de = torch::tensor({0.9, 0.5, 0.0, 0.0, 0.9, 0.5, 0.8, 0.3, 0.0}, torch::kFloat32).reshape({3, 3});
  const torch::Tensor clf = torch::tensor({0.0, 0.9, 0.5, 0.1, 0.0, 0.9, 0.6, 0.7, 0.0}, torch::kFloat32).reshape({3, 3});
  const torch::Tensor positives = torch::tensor({1, 0, 0, 0, 0, 1, 1, 0, 0}, torch::kBool).reshape({3, 3});
  std::vector<double> grid;
  for (int i = 0; i <= 10; ++i) grid.push_back(i / 10.0);
  ConcatWeightTally tally(grid);
  // Two chunks add up to the same as one.
  tally.add(de.narrow(0, 0, 2), clf.narrow(0, 0, 2), {}, positives.narrow(0, 0, 2));
  tally.add(de.narrow(0, 2, 1), clf.narrow(0, 2, 1), {}, positives.narrow(0, 2, 1));
  EXPECT_EQ(tally.queries(), 3);
  const std::vector<double> scores = tally.scores();
  for (std::size_t i = 0; i < grid.size(); ++i) EXPECT_NEAR(scores[i], i <= 8 ? 1.0 : 2.0 / 3.0, 1e-12) << "w " << grid[i];
  EXPECT_DOUBLE_EQ(tally.best(0.5), 0.5);
  EXPECT_DOUBLE_EQ(tally.best(1.0), 0.8);   // the clf mode loses: the nearest of the best
  EXPECT_DOUBLE_EQ(tally.best(0.0), 0.0);
}

// The label bias is added once, whatever w: query positive 1, de = clf = [0.5 0.4], bias [0 0.2] → label 1 leads
// at every w (0.4 + 0.2 > 0.5); a bias weighted by w would lose at w = 0 (0.4 < 0.5).
TEST(ConcatWeightChoice, TheLabelBiasCountsOnceAtEveryWeight) {
  const torch::Tensor scores = torch::tensor({0.5, 0.4}, torch::kFloat32).reshape({1, 2});
  const torch::Tensor positives = torch::tensor({0, 1}, torch::kBool).reshape({1, 2});
  ConcatWeightTally with_bias({0.0, 0.5, 1.0});
  with_bias.add(scores, scores, torch::tensor({0.0, 0.2}, torch::kFloat32), positives);
  ConcatWeightTally without({0.0, 0.5, 1.0});
  without.add(scores, scores, {}, positives);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(with_bias.scores()[i], 1.0, 1e-12);  // P@1 = 1 (P@3, P@5: fewer labels than k)
    EXPECT_NEAR(without.scores()[i], 0.0, 1e-12);
  }
  EXPECT_THROW(ConcatWeightTally({1.5}), Error);
  EXPECT_THROW(with_bias.add(scores, scores.t(), {}, positives), Error);
  EXPECT_THROW(with_bias.add(scores, scores, torch::zeros({3}), positives), Error);
}

// With unidec.concat_holdout the held-out queries never train, w is chosen on them after training, and the
// trained run (as the predictor loads it) ranks with the chosen w.
TEST(Unidec, HeldOutQueriesChooseTheConcatWeightAndTheRunKeepsIt) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 8, 400, 120);
  TrainConfig config = small_unidec_config(dir / "data");
  config.edit<UnidecOptions>().concat_holdout = 0.25;
  config.edit<UnidecOptions>().concat_weight = 0.55;  // off the grid: the loaded run ranks with the chosen w only if it kept it
  config.eval_every = 0;
  config.tsne_every = 0;
  TrainingRun run(config, dir / "runs.sqlite");
  const TrainResult result = run.run();
  ASSERT_EQ(result.outcome, RunOutcome::Completed);
  // The choice and its curve are in the run's stored log, after the last epoch's steps.
  std::string choice;
  std::int64_t at_step = -1;
  for (const LogLine& line : RunStore(dir / "runs.sqlite").log(run.run_id()))
    if (line.message.rfind("UniDEC: concat weight ", 0) == 0) std::tie(choice, at_step) = std::pair(line.message, line.step);
  ASSERT_FALSE(choice.empty());
  EXPECT_EQ(at_step, config.epochs * 10);
  EXPECT_NE(choice.find("of 100 held-out training queries"), std::string::npos) << choice;  // 25 % of 400
  const double chosen = std::stod(choice.substr(std::string("UniDEC: concat weight ").size()));
  // The value used is stored beside the configured 0.55, at the step it was chosen.
  const std::vector<ChosenSetting> stored = chosen_settings(RunStore(dir / "runs.sqlite").scalars(run.run_id()));
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].key, "unidec.concat_weight");
  EXPECT_DOUBLE_EQ(stored[0].value, chosen);
  EXPECT_EQ(stored[0].step, at_step);

  // Three quarters of the queries train: 300 per epoch in batches of 32 (the last of 12) → 10 steps per epoch (13 with all 400).
  EXPECT_EQ(RunStore(dir / "runs.sqlite").scalars(run.run_id(), "loss").size(), static_cast<std::size_t>(config.epochs * 10));

  const LoadedModes loaded = load_and_score_test_queries(dir / "runs.sqlite", run.run_id(), config.dataset);
  ASSERT_EQ(loaded.modes.size(), 3u);
  const auto& scores = loaded.test_scores;
  EXPECT_TRUE(torch::allclose(scores.at("concat"), 2 * (1 - chosen) * scores.at("de") + 2 * chosen * scores.at("clf"), 1e-5, 1e-5)) << chosen;

  // A t-SNE query that is held out would never be in a batch: naming one is refused by name. A quarter of the
  // rows is held out, so one of the first 40 is (the draw is fixed by the seed).
  config.epochs = 1;
  config.max_steps = 1;
  config.tsne_every = 1;
  bool refused = false;
  for (std::int64_t row = 0; row < 40 && !refused; ++row) {
    config.tsne_query = row;
    try {
      TrainingRun(config, dir / "runs.sqlite").run();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("tsne.query: training row " + std::to_string(row) + " is held out of training"), std::string::npos)
          << e.what();
      refused = true;
    }
  }
  EXPECT_TRUE(refused);
}

// A run with held-out queries stopped mid-way and resumed holds out the same queries and chooses the same w as
// one that was not interrupted; the held-out share (or the seed that draws it) cannot change on resume.
TEST(Unidec, AResumedRunHoldsOutTheSameQueriesAndChoosesTheSameWeight) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 9, 300, 60);
  TrainConfig config = small_unidec_config(dir / "data");
  config.edit<UnidecOptions>().concat_holdout = 0.2;
  config.epochs = 3;
  config.eval_every = 0;
  config.tsne_every = 1;  // the automatic t-SNE query is one that trains
  TrainingRun whole(config, dir / "a.sqlite");
  const TrainResult a = whole.run();
  ASSERT_EQ(a.outcome, RunOutcome::Completed);
  // 240 training queries → 8 batches an epoch: step 10 is inside the second epoch, whose hard negatives come
  // from the second slice of the shortlist window (a resume once drew them from the first).
  config.max_steps = 10;
  TrainingRun first(config, dir / "b.sqlite");
  ASSERT_EQ(first.run().outcome, RunOutcome::Stopped);
  for (const char* change : {"unidec.concat_holdout=0.3", "seed=7"}) {
    try {
      TrainingRun::resume(first.run_id(), dir / "b.sqlite", {"max_steps=0", change});
      ADD_FAILURE() << change << " was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("unidec.concat_holdout"), std::string::npos) << e.what();
    }
  }
  TrainingRun second = TrainingRun::resume(first.run_id(), dir / "b.sqlite", {"max_steps=0"});
  const TrainResult b = second.run();
  ASSERT_EQ(b.outcome, RunOutcome::Completed);
  auto choice = [](const std::filesystem::path& db, std::int64_t run) {
    std::string line;
    for (const LogLine& l : RunStore(db).log(run))
      if (l.message.rfind("UniDEC: concat weight ", 0) == 0) line = l.message;
    return line;
  };
  EXPECT_FALSE(choice(dir / "a.sqlite", whole.run_id()).empty());
  EXPECT_EQ(choice(dir / "a.sqlite", whole.run_id()), choice(dir / "b.sqlite", first.run_id()));
  // The resumed run stored its choice once, equal to the uninterrupted run's.
  const auto stored_a = chosen_settings(RunStore(dir / "a.sqlite").scalars(whole.run_id()));
  const auto stored_b = chosen_settings(RunStore(dir / "b.sqlite").scalars(first.run_id()));
  ASSERT_EQ(stored_a.size(), 1u);
  ASSERT_EQ(stored_b.size(), 1u);
  EXPECT_EQ(stored_a[0].value, stored_b[0].value);
  EXPECT_EQ(RunStore(dir / "b.sqlite").scalars(first.run_id(), "chosen/unidec.concat_weight").size(), 1u);
  for (const auto& [name, value] : a.metrics.metrics) EXPECT_EQ(value, b.metrics.get(name)) << name;
  for (const LogLine& l : RunStore(dir / "a.sqlite").log(whole.run_id()))
    EXPECT_EQ(l.message.find("snapshot skipped"), std::string::npos) << l.message;
}

TEST(Unidec, ClassifierTableLearnsAtItsOwnRate) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 200, 40);
  auto run_two_steps = [&](const std::string& db, double lr, double classifier_lr) {
    TrainConfig c = small_unidec_config(dir / "data");
    c.lr = lr;
    c.edit<UnidecOptions>().classifier_lr = classifier_lr;
    c.edit<OptimOptions>().warmup = 0;
    c.max_steps = 2;
    c.eval_every = 0;
    c.tsne_every = 0;
    TrainingRun run(c, dir / db);
    run.run();
    return std::make_pair(checkpoint_tensor(dir / db, run.run_id(), "classifiers"),
                          checkpoint_tensor(dir / db, run.run_id(), "dual_encoder.de_head.linear.weight"));
  };
  const auto [table0, head0] = run_two_steps("frozen.sqlite", 0.0, 0.0);  // same seed: the initial values
  const auto [table1, head1] = run_two_steps("table.sqlite", 0.0, 0.05);
  const auto [table2, head2] = run_two_steps("encoder.sqlite", 0.01, 0.0);
  EXPECT_FALSE(torch::equal(table0, table1)) << "Ψ moved at its own learning rate while lr = 0";
  EXPECT_TRUE(torch::equal(head0, head1)) << "lr = 0 leaves the heads alone";
  EXPECT_TRUE(torch::equal(table0, table2)) << "classifier_lr = 0 leaves Ψ alone while the encoder learns";
  EXPECT_FALSE(torch::equal(head0, head2));
  // AdamW's first steps move a parameter by about its learning rate per step (g/√v = ±1).
  EXPECT_LE((table1 - table0).abs().max().item<double>(), 2 * 0.05 + 1e-6);
  EXPECT_GT((table1 - table0).abs().max().item<double>(), 0.5 * 0.05);
}

TEST(Unidec, LazyClassifierUpdatesLeaveRowsOutsideTheStepsPoolAlone) {
  // Pools of at most 4 labels out of 12 (batches of 4, one sampled positive, no hard negatives): a row pooled in
  // step 1 and not in step 2 keeps moving in step 2 on its momentum under AdamW, and stays put under lazy_adamw.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 200, 40);
  auto classifiers_after = [&](const std::string& optimizer, std::int64_t steps, std::int64_t deferred_rows_from = 0) {
    TrainConfig c = small_unidec_config(dir / "data");
    c.edit<OptimOptions>().deferred_rows_from = deferred_rows_from;
    c.edit<OptimOptions>().table_second_moment = "element";  // AdamW's own moments: the deferred update then ends where the dense one does
    c.edit<OptimOptions>().table_first_moment = "float32";
    c.edit<NegativesOptions>().kind = "inbatch";
    c.edit<PslOptions>().positives = 1;
    c.batch_size = 4;
    c.edit<OptimOptions>().warmup = 0;
    c.max_steps = steps;
    c.eval_every = 0;
    c.tsne_every = 0;
    c.edit<UnidecOptions>().classifier_optimizer = optimizer;
    const auto db = dir / (optimizer + std::to_string(steps) + "-" + std::to_string(deferred_rows_from) + ".sqlite");
    TrainingRun run(c, db);
    run.run();
    return checkpoint_tensor(db, run.run_id(), "classifiers");
  };
  const torch::Tensor dense1 = classifiers_after("adamw", 1), lazy1 = classifiers_after("lazy_adamw", 1);
  const torch::Tensor dense2 = classifiers_after("adamw", 2), lazy2 = classifiers_after("lazy_adamw", 2);
  EXPECT_TRUE(torch::equal(dense1, lazy1)) << "a first step moves only rows with a gradient either way";
  const torch::Tensor differs = (dense2 != lazy2).any(1);
  ASSERT_GT(differs.sum().item<std::int64_t>(), 0) << "some row was pooled in step 1 and not in step 2";
  const torch::Tensor rows = differs.nonzero().reshape({-1});
  EXPECT_TRUE(torch::equal(lazy2.index_select(0, rows), lazy1.index_select(0, rows))) << "lazy_adamw left those rows as step 1 did";
  EXPECT_FALSE(torch::equal(dense2.index_select(0, rows), dense1.index_select(0, rows))) << "AdamW moved them on their momentum";

  // deferred_rows_from: AdamW on tables of at least that many rows (Ψ has 12; the encoder's larger tables
  // too) defers their untouched rows and ends where the dense update does (the run brings them up to date
  // before its checkpoint), where lazy_adamw is a momentum step (~lr = 0.05) away from it. The encoder's
  // deferred rows computed their gradients before their deferred steps, hence a small difference.
  const torch::Tensor deferred2 = classifiers_after("adamw", 2, 12);
  const double lazy_gap = (lazy2 - dense2).index_select(0, rows).abs().max().item<double>();
  EXPECT_GT(lazy_gap, 0.01);
  EXPECT_LT((deferred2 - dense2).abs().max().item<double>(), 0.01 * lazy_gap);
}

// Every variant of the CLF side: with and without a learned label bias (a constant query column against a
// bias column of the classifiers), with the paper's CLF head or none, and concat weights w = 0.5 and 0.8
// (concat = 2·[(1-w)·de + w·clf + b]).
TEST(Unidec, EveryModeRanksFarAboveChanceAndConcatIsTheWeightedSumOfTheTwoScores) {
  struct Variant {
    const char* label_bias;
    const char* clf_head;
    double concat_weight;
  };
  for (const Variant variant : {Variant{"none", "linear", 0.5}, Variant{"learned", "none", 0.8}}) {
    SCOPED_TRACE(std::string("label_bias ") + variant.label_bias + ", clf_head " + variant.clf_head + ", w " + std::to_string(variant.concat_weight));
    test::TempDir dir;
    test::write_keyword_dataset(dir / "data", 5, 400, 120);
    TrainConfig config = small_unidec_config(dir / "data");
    config.edit<UnidecOptions>().label_bias = variant.label_bias;
    config.edit<UnidecOptions>().clf_head = variant.clf_head;
    config.edit<UnidecOptions>().concat_weight = variant.concat_weight;
    config.eval_every = 0;
    TrainingRun run(config, dir / "runs.sqlite");
    const TrainResult result = run.run();
    ASSERT_EQ(result.outcome, RunOutcome::Completed);
    // Random ranking gets P@1 = 2/12.
    std::vector<std::string> modes;
    for (const auto& [mode, evaluation] : result.modes) {
      modes.push_back(mode);
      EXPECT_GT(evaluation.get("P@1"), 0.5) << mode;
    }
    EXPECT_EQ(modes, (std::vector<std::string>{"concat", "de", "clf"}));
    EXPECT_EQ(result.metrics.get("P@1"), result.modes.front().second.get("P@1"));
    std::set<std::string> stored;
    for (const auto& e : RunStore(dir / "runs.sqlite").evaluations(run.run_id())) stored.insert(e.metric);
    EXPECT_TRUE(stored.count("P@1") && stored.count("de/P@1") && stored.count("clf/P@1"));

    // The trained run as the predictor loads it.
    LoadedModes loaded = load_and_score_test_queries(dir / "runs.sqlite", run.run_id(), config.dataset);
    TrainedRun& trained = loaded.trained;
    const auto& inference = loaded.modes;
    ASSERT_EQ(inference.size(), 3u);
    auto& scores = loaded.test_scores;
    const double w = variant.concat_weight;
    // concat = 2·[(1-w)·de + w·cos + b]; clf = cos + b, so the bias counts 2(1-w) more than in 2w·clf.
    const torch::Tensor bias = std::string(variant.label_bias) == "learned" ? inference[2].label_matrix.select(1, -1) : torch::zeros({1});
    EXPECT_TRUE(torch::allclose(scores["concat"], 2 * (1 - w) * scores["de"] + 2 * w * scores["clf"] + 2 * (1 - w) * bias, 1e-5, 1e-5));
    EXPECT_FALSE(torch::allclose(scores["de"], scores["clf"], 1e-3, 1e-3));
    // Without a bias, clf scores are cosines; with one, a label's score moves by its bias.
    if (std::string(variant.label_bias) == "none") {
      EXPECT_LE(scores["clf"].abs().max().item<double>(), 1 + 1e-5);
    }
    // Evaluation encodes the three modes' test queries in one encoder pass (one task on the progress bar),
    // each the vectors its mode's own encode_queries() gives.
    const TokenizedCorpus test = trained.method->tokenizer().tokenize(load_dataset(config.dataset).test_text);
    test::RecordingProgress progress;
    const auto together = trained.method->encode_queries_for({"concat", "de", "clf"}, test, progress, "test");
    EXPECT_EQ(progress.tasks, std::vector<std::string>{"test"});
    ASSERT_EQ(together.size(), 3u);
    for (const std::string name : {"concat", "de", "clf"})
      EXPECT_TRUE(torch::equal(together.at(name), trained.method->encode_queries(name, test, silent_progress(), "test"))) << name;
    // Without a CLF head the classifiers live in the encoder's space (bow: d wide), plus the bias column.
    EXPECT_EQ(inference[2].label_matrix.size(1), config.get<EncoderOptions>().dim + (std::string(variant.label_bias) == "learned" ? 1 : 0));
    // A label added at run time has no learned bias: its clf vector is its text's, with a zero bias entry.
    const auto added = trained.method->new_label_vectors(trained.method->tokenizer().tokenize({"kw3 topic"}));
    ASSERT_EQ(added.size(), 3u);
    EXPECT_EQ(added[2].size(1), inference[2].label_matrix.size(1));
    if (std::string(variant.label_bias) == "learned") {
      EXPECT_EQ(added[2][0][-1].item<float>(), 0.0f);
    }
  }
}

// With two threads a CPU step runs the DE and CLF heads' parts side by side, the graph cut at the encoder's
// outputs (train/side_by_side.h); with one it runs them in turn through one graph. Both must train the same
// model: every parameter, the encoder's included (it gets the sum of both heads' gradients), within float
// rounding after a few steps.
TEST(Unidec, HeadsTrainedSideBySideTrainTheSameModelAsHeadsInTurn) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 3, 200, 40);
  auto train_with_threads = [&](std::int64_t threads) {
    TrainConfig c = small_unidec_config(dir / "data");
    c.edit<NegativesOptions>().kind = "inbatch";  // no shortlist: its top-k could break a near tie differently with other threads
    c.edit<QueryBatcherOptions>().type = "random";
    c.threads = threads;
    c.edit<OptimOptions>().warmup = 0;
    c.max_steps = 6;
    c.eval_every = 0;
    c.tsne_every = 0;
    const auto db = dir / ("threads" + std::to_string(threads) + ".sqlite");
    TrainingRun run(c, db);
    run.run();
    at::set_num_threads(1);
    return std::make_pair(db, run.run_id());
  };
  const auto [in_turn_db, in_turn_run] = train_with_threads(1);
  const auto [side_db, side_run] = train_with_threads(2);
  for (const char* name : {"dual_encoder.encoder.embeddings.weight", "dual_encoder.de_head.linear.weight", "clf_head.linear.weight", "classifiers"}) {
    const torch::Tensor in_turn = checkpoint_tensor(in_turn_db, in_turn_run, name), side = checkpoint_tensor(side_db, side_run, name);
    EXPECT_TRUE(torch::allclose(side, in_turn, 1e-4, 1e-5)) << name << ": largest difference " << (side - in_turn).abs().max().item<double>();
  }
}

TEST(Unidec, DepslTrainsTheDualEncoderAlone) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 6, 400, 120);
  TrainConfig config = small_unidec_config(dir / "data", "depsl");
  config.eval_every = 0;
  TrainingRun run(config, dir / "runs.sqlite");
  const TrainResult result = run.run();
  ASSERT_EQ(result.modes.size(), 1u);
  EXPECT_EQ(result.modes.front().first, "de");
  EXPECT_GT(result.metrics.get("P@1"), 0.5);
}

TEST(Unidec, HardNegativesWaitForTheirStartEpoch) {
  // Before hard.start_epoch no shortlist is searched and the pools hold the sampled positives alone: a run whose
  // start lies past its last epoch trains the very model an in-batch run trains, one that starts them in its
  // second epoch another.
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 7, 300, 60);
  const auto classifiers_after = [&](const std::string& negatives, std::int64_t start_epoch, const std::string& db) {
    TrainConfig config = small_unidec_config(dir / "data");
    config.epochs = 2;
    config.eval_every = 0;
    config.tsne_every = 0;
    config.edit<NegativesOptions>().kind = negatives;
    config.edit<NegativesOptions>().start_epoch = start_epoch;
    TrainingRun run(config, dir / db);
    EXPECT_EQ(run.run().outcome, RunOutcome::Completed);
    return checkpoint_tensor(dir / db, run.run_id(), "classifiers");
  };
  const torch::Tensor in_batch = classifiers_after("inbatch", 0, "a.sqlite");
  EXPECT_TRUE(torch::equal(classifiers_after("hard", 2, "b.sqlite"), in_batch));
  EXPECT_FALSE(torch::equal(classifiers_after("hard", 1, "c.sqlite"), in_batch));
}

TEST(Unidec, ResumeEqualsAnUninterruptedRun) {
  test::TempDir dir;
  test::write_keyword_dataset(dir / "data", 7, 300, 60);
  TrainConfig config = small_unidec_config(dir / "data");
  config.epochs = 3;
  config.eval_every = 0;
  config.tsne_every = 0;
  TrainingRun whole(config, dir / "a.sqlite");
  const TrainResult a = whole.run();
  // 300 / 32 → 10 batches per epoch: stop inside epoch 2 (after the first shortlist refresh window).
  config.max_steps = 15;
  TrainingRun first(config, dir / "b.sqlite");
  EXPECT_EQ(first.run().outcome, RunOutcome::Stopped);
  TrainingRun second = TrainingRun::resume(first.run_id(), dir / "b.sqlite", {"max_steps=0"});
  const TrainResult b = second.run();
  ASSERT_EQ(b.outcome, RunOutcome::Completed);
  for (const char* name : {"classifiers", "dual_encoder.de_head.linear.weight", "clf_head.linear.weight"})
    EXPECT_TRUE(torch::equal(checkpoint_tensor(dir / "a.sqlite", whole.run_id(), name), checkpoint_tensor(dir / "b.sqlite", first.run_id(), name)))
        << name;
  for (const auto& [name, value] : a.metrics.metrics) EXPECT_EQ(value, b.metrics.get(name)) << name;
}

// xrlinear fused with a unidec run (xrlinear.fusion_weight_from held-out): the tree's weight is chosen after
// training on the training queries the unidec run held out, which xrlinear's rankers do not train on either.
// Two sets of 6 labels, 160 training queries, one label each, where one side is blind: "tree blind" (the texts
// name the label, the given features are noise only) and "dense blind" (every text is "item", the given features
// name the label). The weight must go to the side that can see.
namespace {
void write_two_view_dataset(const std::filesystem::path& dir, bool texts_name_the_label) {
  Dataset d;
  d.meta.name = texts_name_the_label ? "tree-blind" : "dense-blind";
  d.meta.feature_names = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "noiseone", "noisetwo"};
  for (int l = 0; l < 6; ++l) d.label_text.push_back("key" + std::to_string(l));
  std::vector<std::vector<std::int32_t>> train, test, train_features, test_features;
  const auto add = [&](int i, std::vector<std::string>& texts, std::vector<std::vector<std::int32_t>>& labels,
                       std::vector<std::vector<std::int32_t>>& features) {
    const int label = i % 6, noise = 6 + (i / 6) % 2;
    texts.push_back(texts_name_the_label ? "key" + std::to_string(label) : "item");
    labels.push_back({label});
    features.push_back(texts_name_the_label ? std::vector<std::int32_t>{noise} : std::vector<std::int32_t>{label, noise});
  };
  for (int i = 0; i < 160; ++i) add(i, d.train_text, train, train_features);
  for (int i = 0; i < 60; ++i) add(i, d.test_text, test, test_features);
  d.train_labels = csr_from_rows(train, 6);
  d.test_labels = csr_from_rows(test, 6);
  d.train_features = csr_from_rows(train_features, 8);
  d.test_features = csr_from_rows(test_features, 8);
  save_dataset(d, dir);
}

TrainConfig fused_xrlinear_config(const std::filesystem::path& data, std::int64_t dense_run) {
  TrainConfig c;
  c.dataset = data;
  c.method = "xrlinear";
  c.threads = 1;
  c.eval_k = {1, 3, 5};
  auto& x = c.edit<XrlinearOptions>();
  x.features = "given";
  x.branching = 2;
  x.max_leaf = 2;
  x.dense_run = dense_run;
  x.fusion_weight_from = "held-out";
  return c;
}
}  // namespace

TEST(Unidec, AFusedXrlinearRunChoosesItsWeightOnTheQueriesTheUnidecRunHeldOut) {
  test::TempDir dir;
  const auto db = dir / "runs.sqlite";
  for (const bool tree_blind : {true, false}) {
    const auto data = dir / (tree_blind ? "tree-blind" : "dense-blind");
    write_two_view_dataset(data, tree_blind);
    TrainConfig dense = small_unidec_config(data);
    dense.edit<UnidecOptions>().concat_holdout = 0.25;
    dense.eval_every = 0;
    dense.tsne_every = 0;
    TrainingRun dense_run(dense, db);
    const TrainResult dense_result = dense_run.run();
    ASSERT_EQ(dense_result.outcome, RunOutcome::Completed);

    TrainingRun fused_run(fused_xrlinear_config(data, dense_run.run_id()), db);
    const TrainResult fused = fused_run.run();
    ASSERT_EQ(fused.outcome, RunOutcome::Completed);
    std::string choice, held_out, refit;
    for (const LogLine& line : RunStore(db).log(fused_run.run_id())) {
      if (line.message.rfind("xrlinear: fusion weight ", 0) == 0) choice = line.message;
      if (line.message.rfind("the rankers train on ", 0) == 0) held_out = line.message;
      if (line.message.rfind("xrlinear: the label tree and rankers again", 0) == 0) refit = line.message;
    }
    // A quarter of the 160 labelled queries, the unidec run's draw; once the weight is chosen, all of them.
    EXPECT_EQ(held_out, "the rankers train on 120 training queries: 40 are held out to choose the fusion weight");
    EXPECT_EQ(refit, "xrlinear: the label tree and rankers again, on all 160 training queries, the held-out ones included");
    ASSERT_FALSE(choice.empty()) << "the choice and its curve are in the run's log";
    EXPECT_NE(choice.find("of 40 held-out training queries by the tree's weight — 0.00: "), std::string::npos) << choice;
    const double chosen = std::stod(choice.substr(std::string("xrlinear: fusion weight ").size()));
    const std::vector<ChosenSetting> stored = chosen_settings(RunStore(db).scalars(fused_run.run_id()));
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].key, "xrlinear.fusion_weight");
    EXPECT_DOUBLE_EQ(stored[0].value, chosen);
    // The curve's value at a weight: "..., 0.95: 0.4917, ...".
    const auto curve_at = [&](double weight) {
      char key[16];
      std::snprintf(key, sizeof key, " %.2f: ", weight);
      const std::size_t at = choice.find(key);
      return at == std::string::npos ? -1.0 : std::stod(choice.substr(at + std::strlen(key)));
    };
    for (const double weight : {0.0, 0.5, 0.95, 1.0}) ASSERT_GE(curve_at(weight), 0.0) << weight << " is on the curve: " << choice;
    EXPECT_GE(curve_at(chosen), curve_at(0.0)) << choice;
    EXPECT_GE(curve_at(chosen), curve_at(1.0)) << choice;
    if (tree_blind) {
      // The blind tree's scores, weighed as much as the default 0.95 weighs them, spoil the dense run's ranking.
      EXPECT_LT(chosen, 0.95) << choice;
      EXPECT_GT(curve_at(chosen), curve_at(0.95) + 0.3) << choice;
      // The fused mode ranks as well as the dense run that sees, far above the blind tree.
      EXPECT_GE(fused.metrics.get("P@1"), dense_result.metrics.get("P@1") - 0.05) << choice;
      EXPECT_GT(dense_result.metrics.get("P@1"), 0.9);
    } else {
      EXPECT_GE(chosen, 0.5) << choice;
      EXPECT_GT(fused.metrics.get("P@1"), 0.9) << choice;
      EXPECT_LT(dense_result.metrics.get("P@1"), 0.5) << "every query reads \"item\" to the dense run";
    }
    // Refit on every row with the same seeds, its tree and rankers are the ones a run with a fixed weight trains:
    // its mode "tree" gives the test queries the same scores, to the bit.
    TrainConfig fixed_config = fused_xrlinear_config(data, dense_run.run_id());
    fixed_config.edit<XrlinearOptions>().fusion_weight_from = "value";
    TrainingRun fixed_run(fixed_config, db);
    ASSERT_EQ(fixed_run.run().outcome, RunOutcome::Completed);
    const auto tree_scores = [&](std::int64_t run_id) {
      const TrainedRun trained = load_trained_run(db, run_id);
      Dataset dataset = load_dataset(data);
      load_given_features(dataset);
      const TokenizedCorpus labels = trained.method->tokenizer().tokenize(dataset.label_text);
      TokenizedCorpus test = trained.method->tokenizer().tokenize(dataset.test_text);
      test.features = std::make_shared<const CsrMatrix>(*dataset.test_features);
      for (const InferenceMode& mode : trained.method->inference_modes(labels, silent_progress()))
        if (mode.name == "tree") return mode.ranker->rank(test, 0, test.size(), 6).scores;
      throw Error("no mode tree");
    };
    EXPECT_TRUE(torch::equal(tree_scores(fused_run.run_id()), tree_scores(fixed_run.run_id())));
    if (tree_blind) {
      // Stopped inside the second stage (7 tree nodes train per stage, so step 9 is its second batch) and resumed:
      // the same weight and the same trees as the run that was not interrupted.
      TrainConfig stopped_config = fused_xrlinear_config(data, dense_run.run_id());
      stopped_config.max_steps = 9;
      TrainingRun stopped(stopped_config, db);
      ASSERT_EQ(stopped.run().outcome, RunOutcome::Stopped);
      bool in_second_stage = false;
      for (const LogLine& line : RunStore(db).log(stopped.run_id()))
        in_second_stage |= line.message.rfind("xrlinear: the label tree and rankers again", 0) == 0;
      ASSERT_TRUE(in_second_stage) << "the run stopped before the stage that fits every row began";
      TrainingRun resumed = TrainingRun::resume(stopped.run_id(), db, {"max_steps=0"});
      ASSERT_EQ(resumed.run().outcome, RunOutcome::Completed);
      const std::vector<ChosenSetting> again = chosen_settings(RunStore(db).scalars(stopped.run_id()));
      ASSERT_EQ(again.size(), 1u);
      EXPECT_DOUBLE_EQ(again[0].value, chosen);
      EXPECT_TRUE(torch::equal(tree_scores(stopped.run_id()), tree_scores(fused_run.run_id())));
    }
    // The loaded run keeps the chosen weight.
    const TrainedRun loaded = load_trained_run(db, fused_run.run_id());
    char expected[64];
    std::snprintf(expected, sizeof expected, "the tree weighing %.2f (chosen on held-out training queries)", chosen);
    EXPECT_NE(loaded.method->description().find(expected), std::string::npos) << loaded.method->description();
  }

  // Choosing needs rows neither run trained on: a unidec run without held-out queries, or no dense run, is refused.
  const auto data = dir / "tree-blind";
  TrainConfig dense = small_unidec_config(data);
  dense.epochs = 1;
  TrainingRun plain(dense, db);
  ASSERT_EQ(plain.run().outcome, RunOutcome::Completed);
  try {
    TrainingRun(fused_xrlinear_config(data, plain.run_id()), db).run();
    ADD_FAILURE() << "a dense run without held-out queries was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("xrlinear.fusion_weight_from: held-out chooses the fusion weight on training queries that neither run trained on, but "
                                         "xrlinear.dense_run: run " + std::to_string(plain.run_id()) + " (unidec) held none out"),
              std::string::npos)
        << e.what();
  }
  try {
    TrainingRun(fused_xrlinear_config(data, 0), db).run();
    ADD_FAILURE() << "held-out without a dense run was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("xrlinear.fusion_weight_from: held-out chooses the weight of a fusion with a dense run: set xrlinear.dense_run"),
              std::string::npos)
        << e.what();
  }
}

// Any dense run that holds queries out can be fused with a weight chosen on them: a dexml run with holdout.share, and
// xrlinear.choose held-out, which then chooses its trees on the same rows before the weight. On the tree-blind set the
// weight goes to the dexml run, which reads the label in the text.
TEST(Unidec, ADexmlRunHoldingQueriesOutIsFusedWithSettingsAndAWeightChosenOnThem) {
  test::TempDir dir;
  const auto db = dir / "runs.sqlite";
  const auto data = dir / "tree-blind";
  write_two_view_dataset(data, /*texts_name_the_label=*/true);
  TrainConfig dense;
  dense.dataset = data;
  dense.method = "dexml";
  dense.edit<EncoderOptions>().dim = 16;
  dense.batch_size = 16;
  dense.epochs = 4;
  dense.lr = 0.02;
  dense.threads = 1;
  dense.eval_k = {1, 3, 5};
  dense.eval_every = 0;
  dense.tsne_every = 0;
  dense.edit<HeldOutOptions>().share = 0.25;
  TrainingRun dense_run(dense, db);
  const TrainResult dense_result = dense_run.run();
  ASSERT_EQ(dense_result.outcome, RunOutcome::Completed);
  EXPECT_GT(dense_result.metrics.get("P@1"), 0.9) << "the texts name the labels";

  TrainConfig fused = fused_xrlinear_config(data, dense_run.run_id());
  fused.edit<XrlinearOptions>().fusion_weight_from = "value";  // xrlinear.choose chooses the weight too
  fused.edit<XrlinearOptions>().choose = "held-out";
  fused.edit<XrlinearOptions>().choose_budget = 100;
  TrainingRun fused_run(fused, db);
  const TrainResult result = fused_run.run();
  ASSERT_EQ(result.outcome, RunOutcome::Completed);
  std::string candidates, weight;
  for (const LogLine& line : RunStore(db).log(fused_run.run_id())) {
    if (line.message.rfind("xrlinear.choose: candidates fit on", 0) == 0) candidates = line.message;
    if (line.message.rfind("xrlinear: fusion weight ", 0) == 0) weight = line.message;
  }
  // A quarter of the 160 labelled queries, the dexml run's draw: the rows neither run trained on.
  EXPECT_EQ(candidates, "xrlinear.choose: candidates fit on 120 training queries, scored on the 40 held out");
  ASSERT_FALSE(weight.empty());
  std::map<std::string, double> chosen;
  for (const ChosenSetting& c : chosen_settings(RunStore(db).scalars(fused_run.run_id()))) chosen[c.key] = c.value;
  EXPECT_EQ(chosen.count("xrlinear.ngrams"), 0u) << "given features have no n-grams to choose";
  ASSERT_EQ(chosen.count("xrlinear.trees"), 1u);
  ASSERT_EQ(chosen.count("xrlinear.fusion_weight"), 1u);
  EXPECT_LT(chosen["xrlinear.fusion_weight"], 0.95) << weight;
  EXPECT_GE(result.metrics.get("P@1"), dense_result.metrics.get("P@1") - 0.05) << weight;
  const TrainedRun loaded = load_trained_run(db, fused_run.run_id());
  const auto trees = static_cast<int>(chosen["xrlinear.trees"]);
  EXPECT_NE(loaded.method->description().find(trees == 1 ? std::string(", label tree of ") : ", " + std::to_string(trees) + " label trees of "), std::string::npos)
      << loaded.method->description();

  // A dexml run that held nothing out is refused by name.
  dense.edit<HeldOutOptions>().share = 0;
  TrainingRun plain(dense, db);
  ASSERT_EQ(plain.run().outcome, RunOutcome::Completed);
  try {
    TrainingRun(fused_xrlinear_config(data, plain.run_id()), db).run();
    ADD_FAILURE() << "a dexml run without held-out queries was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("(dexml) held none out: fuse with a run trained with holdout.share > 0"), std::string::npos) << e.what();
  }
}

}  // namespace xmc
