#pragma once
// xrlinear's rankers: one linear one-vs-rest classifier per tree node (clusters and labels), trained with
// liblinear on the training queries that reach the node's parent (PECOS's teacher-forced negatives: a query
// reaches a node when one of its labels is under it). Weights smaller than `prune` in magnitude are dropped.
// Plain C++.
//
// Training is cut into units, one per parent node (its children's classifiers), numbered level by level from the
// root; units are independent, so training may stop after any unit and go on later. liblinear draws its
// coordinate order from rand(): each classifier seeds it from (seed, level, node) first, so a classifier comes
// out the same whichever order and process trains it — and units must not be trained on several threads at once.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/csr_matrix.h"
#include "engine/method/xrlinear/label_tree.h"

namespace xmc {

struct RankerOptions {
  std::string loss = "squared-hinge";  ///< "squared-hinge" (L2-loss SVM, dual) or "logistic" (dual)
  double cost = 1.0;                   ///< liblinear's C
  double tolerance = 0.1;              ///< liblinear's eps (stopping tolerance)
  double prune = 0.1;                  ///< weights with |w| below this are dropped (0 keeps all)
  std::uint64_t seed = 0;
};

/// Throws ConfigError naming the xrlinear key when an option is out of range.
void check_ranker_options(const RankerOptions& options);

/// A linear scorer w·x + b over sparse features, w sparse (ascending feature ids).
struct SparseRanker {
  std::vector<std::int32_t> features;
  std::vector<float> weights;
  float bias = 0;
};

/// The rankers of every node of levels 1 .. last: rankers[t][j] scores node j of level t + 1.
using TreeRankers = std::vector<std::vector<SparseRanker>>;

/// A unit of training: the children of node `parent` of level `level`.
struct RankerUnit {
  std::int64_t level = 0;
  std::int64_t parent = 0;
};

class RankerTraining {
 public:
  /// `features` [N x F] and `labels` [N x L] are the training queries'; both must outlive this object.
  RankerTraining(const LabelTree& tree, const CsrMatrix& features, const CsrMatrix& labels);
  ~RankerTraining();
  RankerTraining(const RankerTraining&) = delete;
  RankerTraining& operator=(const RankerTraining&) = delete;

  std::int64_t num_units() const;
  RankerUnit unit(std::int64_t index) const;
  /// How much work unit `index` is (training rows times children), to cut batches of similar cost.
  std::int64_t unit_cost(std::int64_t index) const;

  /// Trains the children of `unit` into `rankers` (shaped by empty_rankers()); returns their mean training loss
  /// per query (squared hinge or logistic).
  double train(std::int64_t index, const RankerOptions& options, TreeRankers& rankers) const;

 private:
  struct LiblinearRows;
  const LabelTree& tree_;
  const CsrMatrix& features_;
  std::vector<std::vector<std::vector<std::int32_t>>> node_rows_;  ///< [level][node] training rows under it, ascending
  std::vector<std::int64_t> unit_start_;                           ///< first unit index of each level, and the total
  std::unique_ptr<LiblinearRows> rows_;
};

/// Rankers shaped for `tree`, all untrained (zero).
TreeRankers empty_rankers(const LabelTree& tree);

/// The training units of `tree`: one per parent node, levels 0 .. ranker_levels() − 1 (RankerTraining::num_units()
/// without building its rows).
std::int64_t ranker_unit_count(const LabelTree& tree);

}  // namespace xmc
