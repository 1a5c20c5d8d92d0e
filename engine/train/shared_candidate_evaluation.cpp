#include "engine/train/shared_candidate_evaluation.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"
#include "engine/index/exact_search.h"
#include "engine/index/ivf_index.h"
#include "engine/index/sampled_queries.h"

namespace xmc {

RankedPredictions rank_candidates(const torch::Tensor& queries, const torch::Tensor& label_matrix, const torch::Tensor& candidates, std::int64_t top) {
  torch::NoGradGuard no_grad;
  const std::int64_t n = candidates.size(0);
  const std::int64_t c = candidates.size(1);
  RankedPredictions out{torch::full({n, top}, -1, torch::kInt64), torch::full({n, top}, -std::numeric_limits<float>::infinity(), torch::kFloat32)};
  if (n == 0 || c == 0 || top == 0) return out;
  // Sorted, each id once: a label two indexes both propose is ranked once.
  torch::Tensor ids = std::get<0>(candidates.to(torch::kCPU, torch::kInt64).sort(/*dim=*/1));
  if (c > 1) ids.narrow(1, 1, c - 1).masked_fill_(ids.narrow(1, 1, c - 1) == ids.narrow(1, 0, c - 1), -1);
  const std::int64_t k = std::min(top, c);
  const std::int64_t d = label_matrix.size(1);
  // The candidates' label rows are gathered a few queries at a time: ~32 MB of them at once.
  const std::int64_t step = std::max<std::int64_t>(1, (std::int64_t{32} << 20) / (c * d * static_cast<std::int64_t>(label_matrix.element_size())));
  const auto device = label_matrix.device();
  for (std::int64_t r0 = 0; r0 < n; r0 += step) {
    const std::int64_t rows = std::min(step, n - r0);
    const torch::Tensor row_ids = ids.narrow(0, r0, rows).to(device);
    const torch::Tensor gathered = label_matrix.detach().index_select(0, row_ids.clamp_min(0).flatten()).view({rows, c, d});
    torch::Tensor scores = torch::bmm(gathered, queries.detach().narrow(0, r0, rows).to(device, gathered.scalar_type()).unsqueeze(2)).squeeze(2).to(torch::kFloat32);
    scores.masked_fill_(row_ids < 0, -std::numeric_limits<float>::infinity());
    const auto [best, at] = scores.topk(k, /*dim=*/1);
    torch::Tensor chosen = row_ids.gather(1, at);
    chosen.masked_fill_(best == -std::numeric_limits<float>::infinity(), -1);
    out.labels.narrow(0, r0, rows).narrow(1, 0, k).copy_(chosen.to(torch::kCPU));
    out.scores.narrow(0, r0, rows).narrow(1, 0, k).copy_(best.to(torch::kCPU));
  }
  return out;
}

struct SharedCandidateEvaluation::Impl {
  Impl(const std::vector<torch::Tensor>& label_matrices, const std::vector<std::size_t>& proposing, const EvaluationSetup& evaluation_setup)
      : setup(evaluation_setup), proposers(proposing) {
    if (label_matrices.empty() || proposers.empty()) throw Error("shared-candidate evaluation: no modes or no proposing mode");
    num_labels = label_matrices.front().size(0);
    for (const torch::Tensor& matrix : label_matrices) {
      if (matrix.size(0) != num_labels)
        throw Error("shared-candidate evaluation: the modes rank " + std::to_string(num_labels) + " and " + std::to_string(matrix.size(0)) + " labels");
      keys.push_back(exact_search_keys(matrix));
      evaluators.push_back(make_evaluator(setup, num_labels));
    }
    for (const std::size_t p : proposers)
      if (p >= keys.size()) throw Error("shared-candidate evaluation: proposing mode " + std::to_string(p) + " of " + std::to_string(keys.size()));
    if (setup.index == "exact") return;
    for (const std::size_t p : proposers) indexes.push_back(label_index(setup.index, keys[p]));
    if (setup.recall_sample > 0 && setup.truth != nullptr)
      for (std::size_t m = 0; m < keys.size(); ++m) samples.emplace_back(setup.truth->rows, setup.recall_sample);
  }

  /// Each row's candidates: the top `per_index` of every proposing index, side by side ([n x proposers·per_index]).
  torch::Tensor candidates(const std::vector<torch::Tensor>& queries, std::int64_t per_index) const {
    std::vector<torch::Tensor> parts;
    for (std::size_t i = 0; i < proposers.size(); ++i) {
      const torch::Tensor rows = queries[proposers[i]].detach().to(torch::kCPU, torch::kFloat).contiguous();
      const std::int64_t k = std::min(per_index, indexes[i]->ntotal());
      torch::Tensor ids = torch::empty({rows.size(0), k}, torch::kInt64), scores = torch::empty({rows.size(0), k}, torch::kFloat32);
      indexes[i]->search(rows.size(0), rows.data_ptr<float>(), k, scores.data_ptr<float>(), ids.data_ptr<std::int64_t>());
      parts.push_back(ids);
    }
    return torch::cat(parts, /*dim=*/1);
  }

  /// Each mode's top 10 of `queries` through the candidates (no filter), [n x min(10, labels)] ids on the CPU.
  std::vector<torch::Tensor> top_10_through_candidates(const std::vector<torch::Tensor>& queries) const {
    const torch::Tensor shared = candidates(queries, kCandidatesPerIndex);
    std::vector<torch::Tensor> out;
    for (std::size_t m = 0; m < keys.size(); ++m) out.push_back(rank_candidates(queries[m], keys[m], shared, std::min<std::int64_t>(10, num_labels)).labels);
    return out;
  }

  std::vector<torch::Tensor> exact_top_10(const std::vector<torch::Tensor>& queries) const {
    std::vector<torch::Tensor> out;
    for (std::size_t m = 0; m < keys.size(); ++m)
      out.push_back(exact_ranking(queries[m], keys[m], std::min<std::int64_t>(10, num_labels)).labels);
    return out;
  }

  /// Tunes the proposing inverted files' probe (one for all) on up to 500 evenly spaced rows of `queries` until every
  /// mode keeps setup.recall_target of its exact top 10, or drops the indexes for exact search.
  void calibrate(const std::vector<torch::Tensor>& queries) {
    calibrated = true;
    std::vector<IvfIndex*> ivfs;
    for (const auto& index : indexes) ivfs.push_back(dynamic_cast<IvfIndex*>(index.get()));
    const std::int64_t n = queries.front().size(0);
    if (indexes.empty() || std::count(ivfs.begin(), ivfs.end(), nullptr) > 0 || setup.recall_target <= 0 || n == 0) return;
    std::vector<torch::Tensor> sample;
    for (const torch::Tensor& q : queries) sample.push_back(evenly_spaced_rows(q, 500));
    const std::vector<torch::Tensor> exact = exact_top_10(sample);
    std::int64_t clusters = ivfs.front()->clusters();
    for (IvfIndex* ivf : ivfs) clusters = std::min(clusters, ivf->clusters());
    const auto set_probe = [&](std::int64_t probe) {
      for (IvfIndex* ivf : ivfs) ivf->set_probe(probe);
    };
    calibration = calibrate_probe(ivfs.front()->options().probe, clusters, sample.front().size(0), setup.recall_target, set_probe, [&] {
      const std::vector<torch::Tensor> found = top_10_through_candidates(sample);
      std::vector<double> recall;
      for (std::size_t m = 0; m < keys.size(); ++m) recall.push_back(share_of_exact_top(found[m], exact[m]));
      return recall;
    });
    if (!calibration.fell_back_to_exact) return;
    indexes.clear();
    samples.clear();
  }

  void add(const std::vector<torch::Tensor>& queries, std::int64_t first) {
    if (queries.size() != keys.size())
      throw Error("shared-candidate evaluation: " + std::to_string(queries.size()) + " query matrices for " + std::to_string(keys.size()) + " modes");
    if (!calibrated) calibrate(queries);
    for (std::size_t m = 0; m < samples.size(); ++m) samples[m].take(first, queries[m]);
    const std::int64_t n = queries.front().size(0);
    const std::int64_t chunk = exact_search_query_chunk({});
    for (std::int64_t start = 0; start < n; start += chunk) {
      const std::int64_t rows = std::min(chunk, n - start);
      std::vector<torch::Tensor> part;
      for (const torch::Tensor& q : queries) part.push_back(q.narrow(0, start, rows));
      const std::int64_t row = first + start;
      const std::int64_t k = std::min(num_labels, top_before_filtering(setup.top, rows, setup.filter, row));
      const torch::Tensor shared = indexes.empty() ? torch::Tensor() : candidates(part, std::max(kCandidatesPerIndex, k));
      for (std::size_t m = 0; m < keys.size(); ++m) {
        const RankedPredictions ranked = indexes.empty() ? exact_ranking(part[m], keys[m], k) : rank_candidates(part[m], keys[m], shared, k);
        add_predictions(evaluators[m], setup, remove_filtered(ranked, setup.top, setup.filter, row), row);
      }
    }
  }

  std::vector<EvalResult> results() const {
    std::vector<EvalResult> out;
    std::vector<double> recall(keys.size(), -1);
    const std::int64_t sampled = samples.empty() ? 0 : samples.front().taken();
    if (!indexes.empty() && sampled > 0) {
      std::vector<torch::Tensor> sample;
      for (const SampledQueries& s : samples) sample.push_back(s.embeddings().contiguous());
      const std::vector<torch::Tensor> found = top_10_through_candidates(sample);
      const std::vector<torch::Tensor> exact = exact_top_10(sample);
      for (std::size_t m = 0; m < keys.size(); ++m) recall[m] = share_of_exact_top(found[m], exact[m]);
    }
    for (std::size_t m = 0; m < keys.size(); ++m) {
      EvalResult result = evaluators[m].result();
      calibration.write_to(result, m);
      if (recall[m] >= 0) {
        result.search_recall_at_10 = recall[m];
        result.search_recall_queries = sampled;
      }
      out.push_back(std::move(result));
    }
    return out;
  }

  const EvaluationSetup& setup;
  std::vector<std::size_t> proposers;
  std::int64_t num_labels = 0;
  std::vector<torch::Tensor> keys;                 ///< each mode's label matrix, as exact search and the ranking read it
  std::vector<std::unique_ptr<Index>> indexes;     ///< one per proposing mode; none: every mode is ranked exactly
  std::vector<SampledQueries> samples;             ///< per mode, the same test rows, for the recall over them
  std::vector<StreamingEvaluator> evaluators;      ///< per mode
  bool calibrated = false;
  ProbeCalibration calibration;                    ///< one probe for every proposing index, a recall per mode
};

SharedCandidateEvaluation::SharedCandidateEvaluation(const std::vector<torch::Tensor>& label_matrices, const std::vector<std::size_t>& proposers,
                                                     const EvaluationSetup& setup)
    : impl_(std::make_unique<Impl>(label_matrices, proposers, setup)) {}
SharedCandidateEvaluation::~SharedCandidateEvaluation() = default;

void SharedCandidateEvaluation::add(const std::vector<torch::Tensor>& queries, std::int64_t first) { impl_->add(queries, first); }
std::vector<EvalResult> SharedCandidateEvaluation::results() const { return impl_->results(); }

}  // namespace xmc
