#include "engine/method/xmc_model.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/model/encoder_options.h"
#include "engine/model/table_rows.h"
#include "engine/model/unit_rows.h"

namespace xmc {

XmcModelImpl::XmcModelImpl(std::shared_ptr<EncoderImpl> encoder, std::int64_t dim, double dropout, EmbeddingHead head)
    : encoder_(register_module("encoder", std::move(encoder))), dim_(dim), head_(head) {
  if (head_ == EmbeddingHead::Normalize) {
    dim_ = encoder_->output_dim();
    return;
  }
  HeadOptions options(encoder_->output_dim(), dim);
  options.dropout = dropout;
  de_head_ = register_module("de_head", DualEncoderHead(options));
  de_head_->to(encoder_->device());
}

torch::Tensor XmcModelImpl::embed(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) {
  return embed_encoded(encoder_->encode(corpus, rows));
}

torch::Tensor XmcModelImpl::embed_encoded(const torch::Tensor& encoded) {
  if (head_ == EmbeddingHead::Normalize)
    return unit_rows(encoded, 1e-8);
  return de_head_->forward(encoded);
}

torch::Tensor XmcModelImpl::embed_rows(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) {
  torch::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  torch::Tensor out = embed(corpus, rows);
  train(was_training);
  return out;
}

torch::Tensor XmcModelImpl::embed_all(const TokenizedCorpus& corpus, std::int64_t chunk) {
  return embed_all(corpus, silent_progress(), {}, chunk);
}

torch::Tensor XmcModelImpl::embed_all(const TokenizedCorpus& corpus, Progress& progress, std::string_view task, std::int64_t chunk,
                                      std::optional<torch::ScalarType> dtype) {
  progress.start(task, corpus.size());
  torch::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  torch::Tensor out;
  std::vector<std::int64_t> rows;
  for (std::int64_t start = 0; start < corpus.size(); start += chunk) {
    rows.clear();
    for (std::int64_t r = start; r < std::min(corpus.size(), start + chunk); ++r) rows.push_back(r);
    const torch::Tensor part = embed(corpus, rows);
    if (!out.defined()) out = torch::empty({corpus.size(), part.size(1)}, part.options().dtype(dtype.value_or(part.scalar_type())));
    out.narrow(0, start, part.size(0)).copy_(part);
    progress.update(start + static_cast<std::int64_t>(rows.size()));
  }
  progress.finish();
  train(was_training);
  if (!out.defined()) return torch::zeros({0, dim_}, torch::TensorOptions().device(device()).dtype(dtype.value_or(torch::kFloat)));
  return out;
}

void XmcModelImpl::add_classifiers(std::int64_t num_labels) {
  residuals_ = register_parameter("classifier_residuals", torch::zeros({num_labels, dim_}, torch::TensorOptions().device(device())));
}

torch::Tensor XmcModelImpl::classifiers(const torch::Tensor& label_embeddings, const torch::Tensor& rows) {
  const torch::Tensor residuals = table_rows(residuals_, rows);
  return unit_rows(label_embeddings + residuals, 1e-12);  // normalize's default eps
}

torch::Tensor XmcModelImpl::fuse(const torch::Tensor& classifiers, const torch::Tensor& label_embeddings, double weight) {
  return weight * classifiers + (1.0 - weight) * label_embeddings;
}

BuiltModel build_model(const ComponentConfig& config, const std::vector<std::string>& train_texts, const std::filesystem::path& run_dir,
                       EmbeddingHead head) {
  BuiltEncoder encoder = make_encoder(config, train_texts, run_dir);
  const EncoderOptions& options = config.get<EncoderOptions>();
  BuiltModel built;
  built.model = XmcModel(std::move(encoder.encoder), options.dim, options.dropout, head);
  built.tokenizer = std::move(encoder.tokenizer);
  built.description = encoder.description + ", d=" + std::to_string(built.model->dim());
  return built;
}

}  // namespace xmc
