#include "engine/method/irene/irene_generator.h"

#include <algorithm>

#include "engine/core/error.h"

namespace xmc {
namespace {

torch::Tensor unit_rows(const torch::Tensor& x) {
  return torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(-1).eps(1e-8));
}

}  // namespace

IreneGeneratorImpl::IreneGeneratorImpl(IreneGeneratorOptions options) : options_(options) {
  if (!options_.transformer) return;
  // 0: the most of 4, 2, 1 heads that divides the size (a base run with a learned label bias adds a column: 257).
  if (options_.heads == 0) options_.heads = options_.dim % 4 == 0 ? 4 : options_.dim % 2 == 0 ? 2 : 1;
  if (options_.heads < 1 || options_.dim % options_.heads != 0) {
    std::string divisors;
    for (std::int64_t h = 1; h <= std::min<std::int64_t>(64, options_.dim); ++h)
      if (options_.dim % h == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(h);
    throw ConfigError("irene.heads: " + std::to_string(options_.heads) + " heads do not divide the classifiers' size " + std::to_string(options_.dim) +
                      " (a base run with a learned label bias adds a column); heads that do: " + divisors + ", or 0 to choose");
  }
  layer_ = register_module("layer", torch::nn::TransformerEncoderLayer(
                                        torch::nn::TransformerEncoderLayerOptions(options_.dim, options_.heads).dim_feedforward(2 * options_.dim).dropout(0.1)));
  out_ = register_module("out", torch::nn::Linear(options_.dim, options_.dim));
  sim_embedding_ = register_module("sim_embedding", torch::nn::Embedding(options_.sim_buckets, options_.dim));
  type_encoding_ = register_parameter("type_encoding", torch::zeros({options_.dim}));
  type_classifier_ = register_parameter("type_classifier", torch::zeros({options_.dim}));
  torch::NoGradGuard no_grad;
  sim_embedding_->weight.normal_(0, 0.02);
  reset_to_weighted_sum();
}

void IreneGeneratorImpl::reset_to_weighted_sum() {
  if (out_.is_empty()) return;
  torch::NoGradGuard no_grad;
  out_->weight.zero_();
  out_->bias.zero_();
}

torch::Tensor IreneGeneratorImpl::weighted_sum(const torch::Tensor& e, const torch::Tensor& w, const torch::Tensor& s) const {
  const torch::Tensor a = torch::softmax(s / options_.temperature, /*dim=*/1);
  return unit_rows(e + (a.unsqueeze(2) * w).sum(1));
}

torch::Tensor IreneGeneratorImpl::forward(const torch::Tensor& e, const torch::Tensor& w, const torch::Tensor& s) {
  const torch::Tensor base = weighted_sum(e, w, s);
  if (!options_.transformer) return base;
  const torch::Tensor buckets =
      ((s.clamp(-1, 1) + 1) * 0.5 * static_cast<double>(options_.sim_buckets)).floor().clamp(0, options_.sim_buckets - 1).to(torch::kInt64);
  const torch::Tensor tokens = torch::cat({(e + type_encoding_).unsqueeze(1), w + type_classifier_ + sim_embedding_(buckets)}, /*dim=*/1);
  // The layer takes [sequence, batch, d].
  const torch::Tensor h = layer_(tokens.transpose(0, 1)).transpose(0, 1);
  return unit_rows(base + out_(h.mean(1)));
}

}  // namespace xmc
