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
//           (with a concat weight w ≠ 0.5 the query parts are scaled to 2(1-w) and 2w: a weighted sum)
//           and, with a label bias, + 2·b_l: twice [(1-w)·de + w·clf + b_l]
// With a learned label bias b (optional, off in the paper's recipe) the classifier score is
// Φ_C(x)·normalize(Ψ_l) + b_l: queries gain a constant 1 column and classifier rows b_l, so every mode stays
// one inner product that any index can search.
#include <torch/torch.h>

#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "engine/core/progress.h"
#include "engine/method/xmc_model.h"

namespace xmc {

enum class UnidecSpace { De, Clf, Concat };

struct UnidecModelOptions {
  bool with_classifiers = true;  ///< false: DEPSL (the dual encoder alone)
  /// g2: "linear" (Linear(dΦ→d) + dropout, the paper's CLF head) or "none" (Φ itself: the classifiers live
  /// in the encoder's space, a linear model over Φ when the encoder is a bag of words)
  std::string clf_head = "linear";
  double dropout = 0.1;          ///< in g2
  bool label_bias = false;       ///< a learned per-label bias b_l added to classifier scores
  double concat_weight = 0.5;    ///< w: concat score = 2·[(1-w)·de + w·clf_cos + b_l]
};

class UnidecModelImpl : public torch::nn::Module {
 public:
  /// `dual_encoder` brings Φ and g1; the CLF side (when `options.with_classifiers`) is g2 and Ψ.
  UnidecModelImpl(XmcModel dual_encoder, UnidecModelOptions options);

  /// Φ of rows of `corpus`, with graph: one encoder pass feeds both heads.
  torch::Tensor encode(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows);
  /// encode()'s host-side half for a training step, which may run ahead on another thread, and the rest.
  std::shared_ptr<const EncoderInput> prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) const {
    return dual_encoder_->prepare_input(corpus, rows);
  }
  torch::Tensor encode_input(const EncoderInput& input) { return dual_encoder_->encoder().encode_input(input); }
  /// g1: unit DE embeddings of encoder outputs.
  torch::Tensor de(const torch::Tensor& encoded);
  /// Φ_C = normalize(g2(·)) (normalize(Φ) without a CLF head): unit CLF-side query vectors of encoder outputs.
  torch::Tensor clf(const torch::Tensor& encoded);
  /// The query-side vectors of `space` (concat = [de ⊕ clf]; clf gains a column of ones with a label bias).
  torch::Tensor query_vectors(const torch::Tensor& encoded, UnidecSpace space);

  /// Every row of `corpus` in `space` as a query, without graph, in eval mode, in chunks.
  /// Each chunk is written into the one result matrix (as `dtype`, default the model's) as it comes.
  torch::Tensor embed_all(const TokenizedCorpus& corpus, UnidecSpace space, Progress& progress = silent_progress(),
                          std::string_view task = {}, std::int64_t chunk = 1024, std::optional<torch::ScalarType> dtype = std::nullopt);
  /// The same in several spaces from one encoder pass (one matrix per space, in order).
  std::vector<torch::Tensor> embed_all(const TokenizedCorpus& corpus, const std::vector<UnidecSpace>& spaces,
                                       Progress& progress = silent_progress(), std::string_view task = {}, std::int64_t chunk = 1024,
                                       std::optional<torch::ScalarType> dtype = std::nullopt);
  /// Every row of `corpus` in `space`, written into `out` ([corpus.size() x the space's width], e.g. the columns of
  /// a wider matrix) chunk by chunk: no matrix of its own is held beside it.
  void embed_all_into(const TokenizedCorpus& corpus, UnidecSpace space, torch::Tensor out, Progress& progress = silent_progress(),
                      std::string_view task = {}, std::int64_t chunk = 1024);
  /// A few rows, without graph, in eval mode.
  torch::Tensor embed_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows, UnidecSpace space);

  bool with_classifiers() const { return options_.with_classifiers; }
  /// Adds Ψ ([num_labels x clf_dim()], zeros until the method fills it) and b (zeros). `for_checkpoint`: left
  /// unwritten, for a checkpoint's tensors to take their place (their storage replaces it, so its pages are never
  /// touched: 1.3 GB less at a resume's peak at 1.3M labels).
  void add_classifier_table(std::int64_t num_labels, bool for_checkpoint = false);
  bool has_classifier_table() const { return table_.defined(); }
  torch::Tensor& classifier_table() { return table_; }
  /// The classifier rows of the labels `rows` (all labels when undefined): normalize(Ψ), and b as a last
  /// column with a label bias; differentiable in Ψ and b.
  torch::Tensor classifiers(const torch::Tensor& rows = {});
  /// classifiers() of every label written into `out` ([num_labels x classifiers' columns], e.g. columns of a larger
  /// matrix), without a graph: no whole-table temporary beyond normalize(Ψ).
  void write_classifiers(torch::Tensor out);
  /// The columns of classifiers(): Ψ's, and one more with a label bias.
  std::int64_t classifier_columns() const { return table_.size(1) + (has_label_bias() ? 1 : 0); }
  bool has_label_bias() const { return options_.with_classifiers && options_.label_bias; }
  /// Changes w of the concat space (chosen after training on held-out queries).
  void set_concat_weight(double w) { options_.concat_weight = w; }

  XmcModel& dual_encoder() { return dual_encoder_; }
  ClassifierHead& clf_head() { return clf_head_; }
  std::int64_t dim() const { return dual_encoder_->dim(); }
  /// Size of Φ_C and of the classifier rows (before a bias column): d with a CLF head, Φ's size without.
  std::int64_t clf_dim() const { return clf_dim_; }
  torch::Device device() const { return dual_encoder_->device(); }

 private:
  torch::Tensor with_bias_column(const torch::Tensor& queries) const;
  /// One encoder pass per chunk of `corpus` (eval mode, no graph), handing each space's vectors to `sink(space
  /// index, first row, vectors)`.
  void embed_chunks(const TokenizedCorpus& corpus, const std::vector<UnidecSpace>& spaces, Progress& progress, std::string_view task,
                    std::int64_t chunk, const std::function<void(std::size_t, std::int64_t, const torch::Tensor&)>& sink);

  XmcModel dual_encoder_;
  ClassifierHead clf_head_{nullptr};
  torch::Tensor table_;
  torch::Tensor bias_;
  UnidecModelOptions options_;
  std::int64_t clf_dim_ = 0;
};
TORCH_MODULE(UnidecModel);

}  // namespace xmc
