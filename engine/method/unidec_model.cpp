#include "engine/method/unidec_model.h"

namespace xmc {
namespace {

torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1).eps(1e-8));
}

}  // namespace

UnidecModelImpl::UnidecModelImpl(XmcModel dual_encoder, bool with_classifiers, double dropout)
    : dual_encoder_(register_module("dual_encoder", std::move(dual_encoder))) {
  if (!with_classifiers) return;
  HeadOptions options(dual_encoder_->encoder().output_dim(), dual_encoder_->dim());
  options.dropout = dropout;
  clf_head_ = register_module("clf_head", ClassifierHead(options));
  clf_head_->to(device());
}

torch::Tensor UnidecModelImpl::encode(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) {
  return dual_encoder_->encoder().encode(corpus, rows);
}

torch::Tensor UnidecModelImpl::de(const torch::Tensor& encoded) { return dual_encoder_->embed_encoded(encoded); }

torch::Tensor UnidecModelImpl::clf(const torch::Tensor& encoded) { return unit_rows(clf_head_->forward(encoded)); }

torch::Tensor UnidecModelImpl::query_vectors(const torch::Tensor& encoded, UnidecSpace space) {
  switch (space) {
    case UnidecSpace::De: return de(encoded);
    case UnidecSpace::Clf: return clf(encoded);
    case UnidecSpace::Concat: return torch::cat({de(encoded), clf(encoded)}, /*dim=*/1);
  }
  return de(encoded);
}

torch::Tensor UnidecModelImpl::embed_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows, UnidecSpace space) {
  torch::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  torch::Tensor out = query_vectors(encode(corpus, rows), space);
  train(was_training);
  return out;
}

torch::Tensor UnidecModelImpl::embed_all(const TokenizedCorpus& corpus, UnidecSpace space, Progress& progress, std::string_view task,
                                         std::int64_t chunk) {
  progress.start(task, corpus.size());
  torch::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  std::vector<torch::Tensor> parts;
  std::vector<std::int64_t> rows;
  for (std::int64_t start = 0; start < corpus.size(); start += chunk) {
    rows.clear();
    for (std::int64_t r = start; r < std::min(corpus.size(), start + chunk); ++r) rows.push_back(r);
    parts.push_back(query_vectors(encode(corpus, rows), space));
    progress.update(start + static_cast<std::int64_t>(rows.size()));
  }
  progress.finish();
  train(was_training);
  if (parts.empty()) return torch::zeros({0, space == UnidecSpace::Concat ? 2 * dim() : dim()}, torch::TensorOptions().device(device()));
  return torch::cat(parts);
}

void UnidecModelImpl::add_classifier_table(std::int64_t num_labels) {
  table_ = register_parameter("classifiers", torch::zeros({num_labels, dim()}, torch::TensorOptions().device(device())));
}

torch::Tensor UnidecModelImpl::classifiers(const torch::Tensor& rows) { return unit_rows(rows.defined() ? table_.index_select(0, rows) : table_); }

}  // namespace xmc
