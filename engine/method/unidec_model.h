#pragma once
// Engine-internal (includes torch). UniDEC's model: the shared encoder Φ with two heads — the DE head g1
// (unit embeddings Φ_D, queries and labels alike) and the CLF head g2 (queries' side of the classifiers,
// Φ_C = normalize(g2(Φ))) — plus a free classifier table Ψ ∈ R^{L×d}, one row per label, scored normalised.
// DEPSL is the same model without the CLF head and Ψ.
//
// The three spaces a query and a label meet in (UniDEC's inference modes):
//   de      Φ_D(x) · Φ_D(z_l)
//   clf     Φ_C(x) · normalize(Ψ_l)
//   concat  [Φ_D(x) ⊕ Φ_C(x)] · [Φ_D(z_l) ⊕ normalize(Ψ_l)] = the sum of the two scores above
#include <torch/torch.h>

#include <span>
#include <string_view>

#include "engine/core/progress.h"
#include "engine/method/xmc_model.h"

namespace xmc {

enum class UnidecSpace { De, Clf, Concat };

class UnidecModelImpl : public torch::nn::Module {
 public:
  /// `dual_encoder` brings Φ and g1; the CLF head (when `with_classifiers`) maps Φ's output to its d.
  UnidecModelImpl(XmcModel dual_encoder, bool with_classifiers, double dropout);

  /// Φ of rows of `corpus`, with graph: one encoder pass feeds both heads.
  torch::Tensor encode(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows);
  /// g1: unit DE embeddings of encoder outputs.
  torch::Tensor de(const torch::Tensor& encoded);
  /// Φ_C = normalize(g2(·)): unit CLF-side query vectors of encoder outputs.
  torch::Tensor clf(const torch::Tensor& encoded);
  /// The query-side vectors of `space` (concat = [de ⊕ clf]).
  torch::Tensor query_vectors(const torch::Tensor& encoded, UnidecSpace space);

  /// Every row of `corpus` in `space` as a query, without graph, in eval mode, in chunks.
  torch::Tensor embed_all(const TokenizedCorpus& corpus, UnidecSpace space, Progress& progress = silent_progress(),
                          std::string_view task = {}, std::int64_t chunk = 1024);
  /// A few rows, without graph, in eval mode.
  torch::Tensor embed_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows, UnidecSpace space);

  bool with_classifiers() const { return !clf_head_.is_empty(); }
  /// Adds Ψ ([num_labels x d], zeros until set_classifier_table or a checkpoint fills it).
  void add_classifier_table(std::int64_t num_labels);
  bool has_classifier_table() const { return table_.defined(); }
  torch::Tensor& classifier_table() { return table_; }
  /// normalize(Ψ) of the labels `rows` (all labels when undefined); differentiable in Ψ.
  torch::Tensor classifiers(const torch::Tensor& rows = {});

  XmcModel& dual_encoder() { return dual_encoder_; }
  ClassifierHead& clf_head() { return clf_head_; }
  std::int64_t dim() const { return dual_encoder_->dim(); }
  torch::Device device() const { return dual_encoder_->device(); }

 private:
  XmcModel dual_encoder_;
  ClassifierHead clf_head_{nullptr};
  torch::Tensor table_;
};
TORCH_MODULE(UnidecModel);

}  // namespace xmc
