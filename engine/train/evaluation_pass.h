#pragma once
// Engine-internal (includes torch). Evaluation of embeddings: top-k search of test queries over a label
// matrix through an Index (exact by default: index_factory.h), reciprocal pairs filtered, metrics
// streamed row by row (never an N x L matrix).
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/progress.h"
#include "engine/data/csr_matrix.h"
#include "engine/data/filter_pairs.h"
#include "engine/eval/metrics.h"
#include "engine/index/index.h"
#include "engine/method/label_ranking.h"
#include "engine/rank/label_searcher.h"

namespace xmc {

struct EvaluationSetup {
  const CsrMatrix* truth = nullptr;        ///< test label matrix
  const FilterPairs* filter = nullptr;     ///< pairs never to predict (may be empty)
  std::vector<double> inv_propensities;    ///< per label, for PSP/PSnDCG
  std::vector<std::int8_t> bins;           ///< decile bins per label (train frequency)
  std::vector<int> ks{1, 3, 5, 10};
  std::int64_t top = 100;                  ///< predictions kept per query
  std::string index = "exact";             ///< how label matrices are searched: an index_factory spec
  /// With an approximate index: test queries (an even sample) whose top 10 is also found exactly, for the recall
  /// (measured once, when the result is asked for).
  std::int64_t recall_sample = 1000;
  /// With an inverted file (ivf): before ranking, its probe is tuned (engine/index/probe_tuning.h: lowered while its
  /// recall@10 against exact search, on up to 500 rows of the first slice of test queries, keeps this, else raised
  /// until it does); when no probe up to half the clusters does, the labels are searched exactly instead. 0: the
  /// index as specified.
  double recall_target = 0;
};

/// The recall@10 an evaluation with eval.index "auto" tunes its inverted file to (EvaluationSetup::recall_target).
inline constexpr double kAutoEvalRecallTarget = 0.95;

/// The index spec an evaluation searches with: `spec` itself, or for "auto" "ivf" from `approximate_above` labels
/// and "exact" below.
std::string resolved_eval_index(const std::string& spec, std::int64_t num_labels, std::int64_t approximate_above);


/// Throws ConfigError naming the key eval.index when `spec` is not an index description (nor "auto").
void check_eval_index(const std::string& spec);

/// An index over the rows of `label_matrix` ([L x d]) made from `spec` (index_factory.h). An inverted file reads a
/// float matrix on the CPU where it lies (held, so it must not change while the index is searched); other indexes,
/// or a matrix elsewhere, get a copy of their own. (An exact evaluation searches the matrix itself: evaluate_ranking.)
std::unique_ptr<Index> label_index(const std::string& spec, const torch::Tensor& label_matrix);

/// The `top` best labels of each of `queries` ([n x d]) in `labels`, with the filter pairs of rows
/// [row_offset, row_offset + n) removed.
RankedPredictions rank_labels(const torch::Tensor& queries, const Index& labels, std::int64_t top, const FilterPairs* filter = nullptr,
                              std::int64_t row_offset = 0);

/// How many predictions to ask a ranker for, so that removing the filter pairs of rows [row_offset, row_offset + n)
/// still leaves `top`.
std::int64_t top_before_filtering(std::int64_t top, std::int64_t n, const FilterPairs* filter, std::int64_t row_offset);
/// `ranked` ([n x k], best first, -1 padded) cut to `top` per row with the filter pairs of rows [row_offset, ...) removed.
RankedPredictions remove_filtered(const RankedPredictions& ranked, std::int64_t top, const FilterPairs* filter, std::int64_t row_offset);

/// A label matrix as exact search reads it: float, and in place where it can be (a column block of a larger matrix is
/// read in place).
torch::Tensor exact_search_keys(const torch::Tensor& label_matrix);
/// The exact top `k` of `queries` ([n x d]) over `keys` ([L x d], on any device, made float if not), best first,
/// on the CPU: the ranking an evaluation falls back to, and the truth an approximate one's recall is measured against.
RankedPredictions exact_ranking(const torch::Tensor& queries, const torch::Tensor& keys, std::int64_t k);
/// The mean over rows of the share of `exact`'s ids ([n x k] int64, CPU) that the first k of the same row of `found`
/// ([n x >= k]) hold: an approximate search's recall@k against exact search (1 when there is nothing to find).
double share_of_exact_top(const torch::Tensor& found, const torch::Tensor& exact);

/// Up to `rows` evenly spaced rows of `queries` (rows i·n/rows), contiguous float on the CPU: a calibration's sample.
torch::Tensor evenly_spaced_rows(const torch::Tensor& queries, std::int64_t rows);

/// What tuning inverted files' probe to a recall target found, for one or several modes searched alike.
struct ProbeCalibration {
  std::int64_t probe = 0;             ///< the probe ranked with (the last one tried when it fell back)
  std::int64_t clusters = 0;          ///< of how many clusters
  std::int64_t queries = 0;           ///< calibration queries (0: not calibrated)
  std::vector<double> recall_at_10;   ///< per mode, at `probe`
  bool fell_back_to_exact = false;    ///< no probe up to half the clusters reached the target
  /// Mode `mode`'s part of it into `result`'s search_* and calibration_* fields.
  void write_to(EvalResult& result, std::size_t mode = 0) const;
};

/// Tunes the probe from `first_probe` to the cheapest that keeps every mode's recall@10 against exact search at
/// `target` (tune_probe, up to half the `clusters`): each try calls `set_probe(probe)` on the indexes, then
/// `recall_at_10()` for each mode's recall on the `queries` calibration rows; the indexes are left at the probe
/// found. Falls back to exact when no probe up to half the clusters keeps the target.
ProbeCalibration calibrate_probe(std::int64_t first_probe, std::int64_t clusters, std::int64_t queries, double target,
                                 const std::function<void(std::int64_t probe)>& set_probe, const std::function<std::vector<double>()>& recall_at_10);

/// The metrics' accumulator for an evaluation of `setup` over `num_labels` labels.
StreamingEvaluator make_evaluator(const EvaluationSetup& setup, std::int64_t num_labels);
/// Adds test rows [start, start + predictions' rows) with their filtered predictions ([rows x top], -1 padded) to
/// `evaluator`.
void add_predictions(StreamingEvaluator& evaluator, const EvaluationSetup& setup, const RankedPredictions& predictions, std::int64_t start);

/// Every test query ranked by `searcher` (engine/rank), evaluated as evaluate_ranking() does: their tokens are
/// `texts`, their vectors under the searcher's query encoder `vectors` (undefined for a searcher that reads texts).
EvalResult evaluate_searcher(const LabelSearcher& searcher, const TokenizedCorpus& texts, const torch::Tensor& vectors, const EvaluationSetup& setup,
                             Progress& progress = silent_progress(), std::string_view task = "ranking test queries");

/// A ranking evaluation fed the test queries a slice at a time, so that their embeddings need never be held at
/// once: what evaluate_ranking() does, in pieces. The label matrix is searched in place (exact) or through an
/// index of setup.index built once.
class RankingEvaluation {
 public:
  RankingEvaluation(const torch::Tensor& label_matrix, const EvaluationSetup& setup);
  ~RankingEvaluation();
  RankingEvaluation(const RankingEvaluation&) = delete;
  RankingEvaluation& operator=(const RankingEvaluation&) = delete;

  /// Ranks test rows [first, first + queries.size(0)) (`queries` are their embeddings) and adds them to the metrics.
  void add(const torch::Tensor& queries, std::int64_t first);
  EvalResult result() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Ranks every test query and evaluates: P/nDCG/PSP/PSnDCG/R at setup.ks and decile-wise P@5. Reports
/// the query rows ranked to `progress` as task `task`.
EvalResult evaluate_ranking(const torch::Tensor& queries, const torch::Tensor& label_matrix, const EvaluationSetup& setup,
                            Progress& progress = silent_progress(), std::string_view task = "ranking test queries");

}  // namespace xmc
