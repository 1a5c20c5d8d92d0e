#include "engine/train/evaluation_pass.h"

#include <algorithm>

#include "engine/index/exact_search.h"

namespace xmc {

RankedPredictions rank_labels(const torch::Tensor& queries, const torch::Tensor& label_matrix, std::int64_t top,
                              const FilterPairs* filter, std::int64_t row_offset) {
  const std::int64_t n = queries.size(0);
  const std::int64_t num_labels = label_matrix.size(0);
  // Ask for a few more than `top` so that removing filtered pairs still leaves `top` predictions.
  std::int64_t extra = 0;
  if (filter != nullptr && !filter->empty())
    for (std::int64_t r = 0; r < n; ++r) extra = std::max<std::int64_t>(extra, static_cast<std::int64_t>(filter->labels_of(row_offset + r).size()));
  const std::int64_t k = std::min(num_labels, top + extra);
  TopK found = exact_top_k(queries, label_matrix, k);
  torch::Tensor ids = found.indices.to(torch::kCPU).contiguous();
  torch::Tensor scores = found.scores.to(torch::kCPU, torch::kFloat32).contiguous();
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
      if (!excluded.empty() && std::binary_search(excluded.begin(), excluded.end(), static_cast<std::int32_t>(label))) continue;
      id_out[r * top + kept] = label;
      score_out[r * top + kept] = score_in[r * k + j];
      ++kept;
    }
  }
  return out;
}

EvalResult evaluate_ranking(const torch::Tensor& queries, const torch::Tensor& label_matrix, const EvaluationSetup& setup,
                            Progress& progress, std::string_view task) {
  EvalOptions options;
  options.ks = setup.ks;
  if (!setup.bins.empty()) options.decile_ks = {5};
  StreamingEvaluator evaluator(options, label_matrix.size(0), setup.inv_propensities, setup.bins);
  const std::int64_t n = queries.size(0);
  constexpr std::int64_t kChunk = 2048;  // exact_top_k's query chunk: finer progress at no cost
  progress.start(task, n);
  std::vector<std::int32_t> ranked;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t rows = std::min(kChunk, n - start);
    const RankedPredictions predictions = rank_labels(queries.narrow(0, start, rows), label_matrix, setup.top, setup.filter, start);
    const std::int64_t top = predictions.labels.size(1);
    const auto* ids = predictions.labels.data_ptr<std::int64_t>();
    for (std::int64_t r = 0; r < rows; ++r) {
      ranked.clear();
      for (std::int64_t j = 0; j < top && ids[r * top + j] >= 0; ++j) ranked.push_back(static_cast<std::int32_t>(ids[r * top + j]));
      evaluator.add_row(setup.truth->row_indices(start + r), ranked);
    }
    progress.update(start + rows);
  }
  progress.finish();
  return evaluator.result();
}

}  // namespace xmc
