#include "engine/eval/prediction_file_eval.h"

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/filter_pairs.h"
#include "engine/data/xc_sparse_file.h"
#include "engine/eval/ranking.h"

namespace xmc {

EvalResult evaluate_prediction_file(const PredictionFileEval& request, Progress& progress) {
  XcSparseReader truth(request.truth);
  XcSparseReader predictions(request.predictions);
  if (predictions.rows() != truth.rows())
    throw InputError(request.predictions.string(), "has " + std::to_string(predictions.rows()) + " rows but the truth file " +
                                                       request.truth.string() + " has " + std::to_string(truth.rows()));
  if (predictions.cols() != truth.cols())
    throw InputError(request.predictions.string(), "declares " + std::to_string(predictions.cols()) + " labels but the truth file " +
                                                       request.truth.string() + " declares " + std::to_string(truth.cols()));
  const std::int64_t num_labels = truth.cols();

  std::vector<double> inv_propensities;
  std::vector<std::int8_t> bins;
  if (request.train) {
    // The label frequencies (8 bytes a label), the inverse propensities (8) and the decile bins (1), all at once.
    require_fits_in_memory(17.0 * static_cast<double>(num_labels),
                           "--train " + request.train->string() + ": the per-label frequencies, propensities and decile bins of the " +
                               std::to_string(num_labels) + " labels that " + request.truth.string() + " declares");
    const CsrMatrix train = read_xc_sparse(*request.train);
    if (train.cols != num_labels)
      throw InputError(request.train->string(), "declares " + std::to_string(train.cols) + " labels but the truth file declares " +
                                                    std::to_string(num_labels));
    // Propensities come from the training rows: with none every label is unseen and PSP would read 0 for any ranking.
    if (train.rows == 0)
      throw InputError(request.train->string(), "has no rows: PSP@k and the decile bins need the training labels' frequencies");
    const auto frequencies = train.column_counts();
    inv_propensities = inverse_propensities(frequencies, train.rows, request.propensity);
    if (!request.options.decile_ks.empty()) bins = decile_bins(frequencies);
  } else if (!request.options.decile_ks.empty()) {
    throw ConfigError("deciles need the train label file (--train trn_X_Y.txt) for label frequencies");
  }
  FilterPairs filter;
  if (request.filter) filter = read_filter_pairs(*request.filter, truth.rows(), num_labels);

  StreamingEvaluator evaluator(request.options, num_labels, std::move(inv_propensities), std::move(bins));
  std::vector<std::int32_t> truth_idx, pred_idx, ranked, excluded;
  std::vector<float> truth_val, pred_val;
  progress.start("evaluating " + request.predictions.filename().string(), truth.rows());
  std::int64_t row = 0;
  const auto& pairs = filter.pairs();
  auto next_pair = pairs.begin();
  while (truth.next(truth_idx, truth_val)) {
    predictions.next(pred_idx, pred_val);
    excluded.clear();
    for (; next_pair != pairs.end() && next_pair->row == row; ++next_pair) excluded.push_back(next_pair->label);
    rank_top_k(pred_idx, pred_val, evaluator.max_k(), excluded, ranked);
    evaluator.add_row(truth_idx, ranked);
    if ((++row & 0x3FFF) == 0) {
      progress.update(row);
      if (progress.cancelled()) throw Cancelled();
    }
  }
  predictions.next(pred_idx, pred_val);  // at end of file: checks it holds no rows beyond its header
  progress.update(row);
  progress.finish();
  return evaluator.result();
}

}  // namespace xmc
