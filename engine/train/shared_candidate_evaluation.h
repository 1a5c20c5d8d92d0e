#pragma once
// Engine-internal (includes torch). Evaluation of several modes that rank the same labels (UniDEC's concat, de
// and clf: column blocks of one matrix) through shared candidates instead of an index each: every test query is
// searched through an index of each proposing mode's label matrix (setup.index), and every mode ranks the union of
// their top kCandidatesPerIndex exactly, by its own label matrix. At 1.3M labels UniDEC's concat space, where the
// bias column and the classifiers' spread keep an inverted file of its own under 0.93 of the exact top 10 at
// probe 512, keeps 0.96 this way at probe 256 from the de and clf blocks' candidates (bench/RESULTS.md).
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/train/evaluation_pass.h"

namespace xmc {

/// Candidates each proposing index gives a test query (more when setup.top and its filter pairs ask for more).
inline constexpr std::int64_t kCandidatesPerIndex = 100;

/// The rows of `candidates` ([n x c] label ids, -1 for none, repeats allowed) ranked by their scores
/// <queries[i], label_matrix[id]>: the best `top` distinct ids of each row, best first, -1 padded, on the CPU.
/// Runs where `label_matrix` lies.
RankedPredictions rank_candidates(const torch::Tensor& queries, const torch::Tensor& label_matrix, const torch::Tensor& candidates, std::int64_t top);

/// A shared-candidate evaluation fed the test queries a slice at a time, as RankingEvaluation is.
class SharedCandidateEvaluation {
 public:
  /// `label_matrices`: one per mode, all of the same labels (rows); `proposers`: the modes (indexes into
  /// `label_matrices`) whose index searches give the candidates. With setup.recall_target and inverted files, the
  /// probe of every proposing index is tuned (calibrate_probe) to the fewest clusters at which each mode's recall@10
  /// against its exact search, on up to 500 rows of the first slice, keeps the target; when no probe up to half the clusters does,
  /// every mode is ranked exactly (its label matrix in place).
  SharedCandidateEvaluation(const std::vector<torch::Tensor>& label_matrices, const std::vector<std::size_t>& proposers, const EvaluationSetup& setup);
  ~SharedCandidateEvaluation();
  SharedCandidateEvaluation(const SharedCandidateEvaluation&) = delete;
  SharedCandidateEvaluation& operator=(const SharedCandidateEvaluation&) = delete;

  /// Ranks test rows [first, first + n) in every mode (`queries`: each mode's embeddings of them, [n x d_mode])
  /// and adds them to that mode's metrics.
  void add(const std::vector<torch::Tensor>& queries, std::int64_t first);
  /// One result per mode, in the constructor's order; search_* and calibration_* fields as RankingEvaluation's.
  std::vector<EvalResult> results() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
