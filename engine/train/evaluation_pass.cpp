#include "engine/train/evaluation_pass.h"

#include <algorithm>
#include <functional>

#include "engine/core/error.h"
#include "engine/index/exact_search.h"
#include "engine/index/index_factory.h"
#include "engine/index/ivf_index.h"
#include "engine/index/probe_tuning.h"
#include "engine/index/sampled_queries.h"

namespace xmc {

void check_eval_index(const std::string& spec) {
  if (spec == "auto") return;
  try {
    check_index_spec(spec);
  } catch (const ConfigError& e) {
    std::string why = e.what();
    if (why.rfind("index: ", 0) == 0) why.erase(0, 7);
    throw ConfigError("eval.index: " + why);
  }
}

std::string resolved_eval_index(const std::string& spec, std::int64_t num_labels, std::int64_t approximate_above) {
  if (spec != "auto") return spec;
  return num_labels >= approximate_above ? "ivf" : "exact";
}

std::unique_ptr<Index> label_index(const std::string& spec, const torch::Tensor& label_matrix) {
  std::unique_ptr<Index> index = make_index(spec, label_matrix.size(1));
  // An inverted file reads a float matrix on the CPU where it lies (held, not copied: 1.3 GB a column block at 1.3M
  // labels x 256); the evaluation does not change its label matrices while it searches them.
  if (const auto* ivf = dynamic_cast<const IvfIndex*>(index.get());
      ivf != nullptr && label_matrix.is_cpu() && label_matrix.scalar_type() == torch::kFloat && has_unit_column_stride(label_matrix)) {
    auto held = std::make_shared<const torch::Tensor>(label_matrix.detach());
    const float* rows = held->data_ptr<float>();
    return IvfIndex::over_rows(held->size(1), ivf->options(), held->size(0), rows, held->stride(0), held);
  }
  // Another index, or a matrix to convert (from a GPU, or not float): copied a piece (~64 MB) at a time, not whole
  // first (a freed whole copy would stay in the process's heap: 1.3 GB at 1.3M labels x 256).
  const std::int64_t n = label_matrix.size(0);
  const std::int64_t piece = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / std::max<std::int64_t>(1, 4 * label_matrix.size(1)));
  index->reserve(n);
  for (std::int64_t first = 0; first < n; first += piece) {
    const torch::Tensor rows = label_matrix.detach().narrow(0, first, std::min(piece, n - first)).to(torch::kCPU, torch::kFloat).contiguous();
    index->add(rows.size(0), rows.data_ptr<float>());
  }
  return index;
}

std::int64_t top_before_filtering(std::int64_t top, std::int64_t n, const FilterPairs* filter, std::int64_t row_offset) {
  std::int64_t extra = 0;
  if (filter != nullptr && !filter->empty())
    for (std::int64_t r = 0; r < n; ++r) extra = std::max<std::int64_t>(extra, static_cast<std::int64_t>(filter->labels_of(row_offset + r).size()));
  return top + extra;
}

RankedPredictions remove_filtered(const RankedPredictions& ranked, std::int64_t top, const FilterPairs* filter, std::int64_t row_offset) {
  const std::int64_t n = ranked.labels.size(0);
  const std::int64_t k = ranked.labels.size(1);
  const torch::Tensor ids = ranked.labels.to(torch::kCPU, torch::kInt64).contiguous();
  const torch::Tensor scores = ranked.scores.to(torch::kCPU, torch::kFloat32).contiguous();
  RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::zeros({n, top}, torch::kFloat32)};
  const auto* id_in = ids.data_ptr<std::int64_t>();
  const auto* score_in = scores.data_ptr<float>();
  auto* id_out = out.labels.data_ptr<std::int64_t>();
  auto* score_out = out.scores.data_ptr<float>();
  for (std::int64_t r = 0; r < n; ++r) {
    const auto excluded = (filter != nullptr && !filter->empty()) ? filter->labels_of(row_offset + r) : std::vector<std::int32_t>{};
    std::int64_t kept = 0;
    for (std::int64_t j = 0; j < k && kept < top; ++j) {
      const std::int64_t label = id_in[r * k + j];
      if (label < 0) break;  // an approximate index or a ranker found fewer than k
      if (!excluded.empty() && std::binary_search(excluded.begin(), excluded.end(), static_cast<std::int32_t>(label))) continue;
      id_out[r * top + kept] = label;
      score_out[r * top + kept] = score_in[r * k + j];
      ++kept;
    }
  }
  return out;
}

RankedPredictions exact_ranking(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k) {
  const torch::Tensor floats = keys.scalar_type() == torch::kFloat ? keys : keys.to(torch::kFloat);
  const TopK top = exact_top_k(queries.detach().to(floats.device(), torch::kFloat), floats, k);
  return {top.indices.to(torch::kCPU, torch::kInt64).contiguous(), top.scores.to(torch::kCPU, torch::kFloat32).contiguous()};
}

RankedPredictions rank_labels(const torch::Tensor& queries, const Index& labels, std::int64_t top, const FilterPairs* filter,
                              std::int64_t row_offset) {
  const std::int64_t n = queries.size(0);
  // Ask for a few more than `top` so that removing filtered pairs still leaves `top` predictions.
  const std::int64_t k = std::min(labels.ntotal(), top_before_filtering(top, n, filter, row_offset));
  const torch::Tensor query_rows = queries.detach().to(torch::kCPU, torch::kFloat).contiguous();
  RankedPredictions found{torch::empty({n, k}, torch::kInt64), torch::empty({n, k}, torch::kFloat32)};
  labels.search(n, query_rows.data_ptr<float>(), k, found.scores.data_ptr<float>(), found.labels.data_ptr<std::int64_t>());
  return remove_filtered(found, top, filter, row_offset);
}

torch::Tensor exact_search_keys(const torch::Tensor& label_matrix) {
  torch::Tensor out = label_matrix.detach();
  if (out.scalar_type() != torch::kFloat) out = out.to(torch::kFloat);
  if (!has_unit_column_stride(out)) out = out.contiguous();
  return out;
}

torch::Tensor evenly_spaced_rows(const torch::Tensor& queries, std::int64_t rows) {
  rows = std::min(rows, queries.size(0));
  const torch::Tensor picked = torch::div(torch::arange(rows, torch::kInt64) * queries.size(0), rows, "floor");
  return queries.detach().index_select(0, picked.to(queries.device())).to(torch::kCPU, torch::kFloat).contiguous();
}

void ProbeCalibration::write_to(EvalResult& result, std::size_t mode) const {
  result.search_probe = probe;
  result.search_clusters = clusters;
  result.calibration_queries = queries;
  result.calibration_recall_at_10 = mode < recall_at_10.size() ? recall_at_10[mode] : -1;
  result.search_fell_back_to_exact = fell_back_to_exact;
}

ProbeCalibration calibrate_probe(std::int64_t first_probe, std::int64_t clusters, std::int64_t queries, double target,
                                 const std::function<void(std::int64_t probe)>& set_probe, const std::function<std::vector<double>()>& recall_at_10) {
  // Scanning more than half the clusters costs about what exact search does.
  const TunedProbe tuned = tune_probe({.first = std::min(first_probe, clusters), .max = std::max<std::int64_t>(1, clusters / 2), .target = target},
                                      [&](std::int64_t probe) {
                                        set_probe(probe);
                                        return recall_at_10();
                                      });
  set_probe(tuned.probe);  // the last probe tried may have been one that kept less
  return {.probe = tuned.probe, .clusters = clusters, .queries = queries, .recall_at_10 = tuned.recall_at_10, .fell_back_to_exact = !tuned.reached};
}

double share_of_exact_top(const torch::Tensor& found, const torch::Tensor& exact) {
  const std::int64_t n = exact.size(0), k = exact.size(1);
  if (n == 0 || k == 0) return 1.0;
  const torch::Tensor got = found.narrow(1, 0, k).contiguous();
  const auto* got_ids = got.data_ptr<std::int64_t>();
  const auto* exact_ids = exact.data_ptr<std::int64_t>();
  double sum = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    std::int64_t hits = 0;
    for (std::int64_t j = 0; j < k; ++j) hits += std::find(got_ids + r * k, got_ids + (r + 1) * k, exact_ids[r * k + j]) != got_ids + (r + 1) * k;
    sum += static_cast<double>(hits) / static_cast<double>(k);
  }
  return sum / static_cast<double>(n);
}

StreamingEvaluator make_evaluator(const EvaluationSetup& setup, std::int64_t num_labels) {
  EvalOptions options;
  options.ks = setup.ks;
  if (!setup.bins.empty()) options.decile_ks = {5};
  return StreamingEvaluator(options, num_labels, setup.inv_propensities, setup.bins);
}

void add_predictions(StreamingEvaluator& evaluator, const EvaluationSetup& setup, const RankedPredictions& predictions, std::int64_t start) {
  const std::int64_t rows = predictions.labels.size(0);
  const std::int64_t top = predictions.labels.size(1);
  const auto* ids = predictions.labels.data_ptr<std::int64_t>();
  std::vector<std::int32_t> ranked;
  for (std::int64_t r = 0; r < rows; ++r) {
    ranked.clear();
    for (std::int64_t j = 0; j < top && ids[r * top + j] >= 0; ++j) ranked.push_back(static_cast<std::int32_t>(ids[r * top + j]));
    evaluator.add_row(setup.truth->row_indices(start + r), ranked);
  }
}

namespace {

/// Streams rows [0, n) through `rank_chunk` (start, rows -> filtered predictions) into the metrics.
EvalResult evaluate_chunks(std::int64_t n, std::int64_t num_labels, const EvaluationSetup& setup, Progress& progress, std::string_view task,
                           const std::function<RankedPredictions(std::int64_t, std::int64_t)>& rank_chunk) {
  StreamingEvaluator evaluator = make_evaluator(setup, num_labels);
  const std::int64_t chunk = exact_search_query_chunk({});  // the exact index's query chunk: finer progress at no cost
  progress.start(task, n);
  for (std::int64_t start = 0; start < n; start += chunk) {
    const std::int64_t rows = std::min(chunk, n - start);
    add_predictions(evaluator, setup, rank_chunk(start, rows), start);
    progress.update(start + rows);
  }
  progress.finish();
  return evaluator.result();
}

}  // namespace

EvalResult evaluate_searcher(const LabelSearcher& searcher, const TokenizedCorpus& texts, const torch::Tensor& vectors, const EvaluationSetup& setup,
                             Progress& progress, std::string_view task) {
  const std::int64_t n = vectors.defined() ? vectors.size(0) : texts.size();
  return evaluate_chunks(n, searcher.num_labels(), setup, progress, task, [&](std::int64_t start, std::int64_t rows) {
    const std::int64_t k = std::min(searcher.num_labels(), top_before_filtering(setup.top, rows, setup.filter, start));
    const SearchQueries queries{.texts = &texts, .begin = start, .end = start + rows, .vectors = vectors.defined() ? vectors.narrow(0, start, rows) : torch::Tensor()};
    return remove_filtered(searcher.search(queries, k), setup.top, setup.filter, start);
  });
}

struct RankingEvaluation::Impl {
  Impl(const torch::Tensor& label_matrix, const EvaluationSetup& evaluation_setup)
      : setup(evaluation_setup), num_labels(label_matrix.size(0)), evaluator(make_evaluator(evaluation_setup, label_matrix.size(0))) {
    if (setup.index == "exact") {
      // The labels are searched where they lie: an index would hold a copy of its own (at 1.3M labels, UniDEC's
      // concat matrix is 2.7 GB), on a GPU two. The same search as the exact index's, so the same results.
      keys = exact_search_keys(label_matrix);
    } else {
      index = label_index(setup.index, label_matrix);
      exact_keys = label_matrix.detach();  // the caller's: held, not copied, for the recall's exact searches
      if (setup.recall_sample > 0 && setup.truth != nullptr) recall_sample = std::make_unique<SampledQueries>(setup.truth->rows, setup.recall_sample);
    }
  }

  /// Over the sampled test rows taken so far, the mean share of the exact top 10 that the index's top 10 holds.
  double recall_at_10() const {
    const torch::Tensor sample = recall_sample->embeddings().contiguous();
    return recall_at_10(sample, exact_top_10(sample));
  }

  /// The exact top 10 of `sample`'s rows over the label matrix, [rows x min(10, labels)] ids on the CPU.
  torch::Tensor exact_top_10(const torch::Tensor& sample) const {
    return exact_ranking(sample, exact_keys, std::min<std::int64_t>(10, num_labels)).labels;
  }

  /// The mean share of each row's `exact` top 10 that the index's top 10 of `sample` (contiguous CPU float) holds.
  double recall_at_10(const torch::Tensor& sample, const torch::Tensor& exact) const {
    const std::int64_t k = exact.size(1);
    torch::Tensor found = torch::empty({sample.size(0), k}, torch::kInt64), scores = torch::empty({sample.size(0), k}, torch::kFloat32);
    index->search(sample.size(0), sample.data_ptr<float>(), k, scores.data_ptr<float>(), found.data_ptr<std::int64_t>());
    return share_of_exact_top(found, exact);
  }

  /// Tunes an inverted file's probe to setup.recall_target on up to 500 evenly spaced rows of `queries` (see
  /// EvaluationSetup), or drops the index for exact search when half the clusters do not reach it.
  void calibrate(const torch::Tensor& queries) {
    calibrated = true;
    auto* ivf = dynamic_cast<IvfIndex*>(index.get());
    if (ivf == nullptr || setup.recall_target <= 0 || queries.size(0) == 0) return;
    const torch::Tensor sample = evenly_spaced_rows(queries, 500);
    const torch::Tensor exact = exact_top_10(sample);
    calibration = calibrate_probe(
        ivf->options().probe, ivf->clusters(), sample.size(0), setup.recall_target, [&](std::int64_t probe) { ivf->set_probe(probe); },
        [&] { return std::vector<double>{recall_at_10(sample, exact)}; });
    if (!calibration.fell_back_to_exact) return;
    // Exact search instead, on the label matrix in place (as for index "exact"); the index goes.
    index.reset();
    recall_sample.reset();
    keys = exact_search_keys(exact_keys);
  }

  RankedPredictions rank(const torch::Tensor& queries, std::int64_t start) const {
    if (index) return rank_labels(queries, *index, setup.top, setup.filter, start);
    const std::int64_t k = std::min(num_labels, top_before_filtering(setup.top, queries.size(0), setup.filter, start));
    return remove_filtered(exact_ranking(queries, keys, k), setup.top, setup.filter, start);
  }

  const EvaluationSetup& setup;
  std::int64_t num_labels;
  torch::Tensor keys;
  std::unique_ptr<Index> index;
  torch::Tensor exact_keys;                        ///< with an index: the label matrix, for the recall's exact searches
  std::unique_ptr<SampledQueries> recall_sample;  ///< with an index: the test rows its recall is measured on
  bool calibrated = false;                        ///< calibrate() ran (on the first slice)
  ProbeCalibration calibration;
  StreamingEvaluator evaluator;
};

RankingEvaluation::RankingEvaluation(const torch::Tensor& label_matrix, const EvaluationSetup& setup)
    : impl_(std::make_unique<Impl>(label_matrix, setup)) {}
RankingEvaluation::~RankingEvaluation() = default;

void RankingEvaluation::add(const torch::Tensor& queries, std::int64_t first) {
  if (!impl_->calibrated) impl_->calibrate(queries);
  if (impl_->recall_sample) impl_->recall_sample->take(first, queries);
  const std::int64_t chunk = exact_search_query_chunk({});
  for (std::int64_t start = 0; start < queries.size(0); start += chunk) {
    const std::int64_t rows = std::min(chunk, queries.size(0) - start);
    add_predictions(impl_->evaluator, impl_->setup, impl_->rank(queries.narrow(0, start, rows), first + start), first + start);
  }
}

EvalResult RankingEvaluation::result() const {
  EvalResult result = impl_->evaluator.result();
  impl_->calibration.write_to(result);
  if (impl_->recall_sample && impl_->recall_sample->taken() > 0) {
    result.search_recall_at_10 = impl_->recall_at_10();
    result.search_recall_queries = impl_->recall_sample->taken();
  }
  return result;
}

EvalResult evaluate_ranking(const torch::Tensor& queries, const torch::Tensor& label_matrix, const EvaluationSetup& setup,
                            Progress& progress, std::string_view task) {
  RankingEvaluation evaluation(label_matrix, setup);
  const std::int64_t chunk = exact_search_query_chunk({});
  progress.start(task, queries.size(0));
  for (std::int64_t start = 0; start < queries.size(0); start += chunk) {
    const std::int64_t rows = std::min(chunk, queries.size(0) - start);
    evaluation.add(queries.narrow(0, start, rows), start);
    progress.update(start + rows);
  }
  progress.finish();
  return evaluation.result();
}

}  // namespace xmc
