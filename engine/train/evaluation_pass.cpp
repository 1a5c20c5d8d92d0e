#include "engine/train/evaluation_pass.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/index/exact_index.h"
#include "engine/index/index_factory.h"

namespace xmc {

void check_eval_index(const std::string& spec) {
  try {
    check_index_spec(spec);
  } catch (const ConfigError& e) {
    std::string why = e.what();
    if (why.rfind("index: ", 0) == 0) why.erase(0, 7);
    throw ConfigError("eval.index: " + why);
  }
}

std::unique_ptr<Index> label_index(const std::string& spec, const torch::Tensor& label_matrix) {
  const std::int64_t dim = label_matrix.size(1);
  std::unique_ptr<Index> index = spec == "exact" ? std::make_unique<ExactIndex>(dim, ExactIndexOptions{.device = label_matrix.device().str()})
                                                 : make_index(spec, dim);
  const torch::Tensor rows = label_matrix.detach().to(torch::kCPU, torch::kFloat).contiguous();
  index->add(rows.size(0), rows.data_ptr<float>());
  return index;
}

RankedPredictions rank_labels(const torch::Tensor& queries, const Index& labels, std::int64_t top, const FilterPairs* filter,
                              std::int64_t row_offset) {
  const std::int64_t n = queries.size(0);
  const std::int64_t num_labels = labels.ntotal();
  // Ask for a few more than `top` so that removing filtered pairs still leaves `top` predictions.
  std::int64_t extra = 0;
  if (filter != nullptr && !filter->empty())
    for (std::int64_t r = 0; r < n; ++r) extra = std::max<std::int64_t>(extra, static_cast<std::int64_t>(filter->labels_of(row_offset + r).size()));
  const std::int64_t k = std::min(num_labels, top + extra);
  const torch::Tensor query_rows = queries.detach().to(torch::kCPU, torch::kFloat).contiguous();
  torch::Tensor ids = torch::empty({n, k}, torch::kInt64);
  torch::Tensor scores = torch::empty({n, k}, torch::kFloat32);
  labels.search(n, query_rows.data_ptr<float>(), k, scores.data_ptr<float>(), ids.data_ptr<std::int64_t>());
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
      if (label < 0) break;  // an approximate index found fewer than k
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
  const std::unique_ptr<Index> index = label_index(setup.index, label_matrix);
  const std::int64_t n = queries.size(0);
  constexpr std::int64_t kChunk = 2048;  // the exact index's query chunk: finer progress at no cost
  progress.start(task, n);
  std::vector<std::int32_t> ranked;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t rows = std::min(kChunk, n - start);
    const RankedPredictions predictions = rank_labels(queries.narrow(0, start, rows), *index, setup.top, setup.filter, start);
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
