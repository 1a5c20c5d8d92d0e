#include "engine/method/unidec/unidec_model.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "engine/model/table_rows.h"
#include "engine/model/unit_rows.h"

namespace xmc {

UnidecModelImpl::UnidecModelImpl(XmcModel dual_encoder, UnidecModelOptions options)
    : dual_encoder_(register_module("dual_encoder", std::move(dual_encoder))), options_(std::move(options)) {
  clf_dim_ = options_.clf_head == "none" ? dual_encoder_->encoder().output_dim() : dual_encoder_->dim();
  if (!options_.with_classifiers || options_.clf_head == "none") return;
  HeadOptions head(dual_encoder_->encoder().output_dim(), dual_encoder_->dim());
  head.dropout = options_.dropout;
  clf_head_ = register_module("clf_head", ClassifierHead(head));
  clf_head_->to(device());
}



torch::Tensor UnidecModelImpl::encode(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows) {
  return dual_encoder_->encoder().encode(corpus, rows);
}

torch::Tensor UnidecModelImpl::de(const torch::Tensor& encoded) { return dual_encoder_->embed_encoded(encoded); }

torch::Tensor UnidecModelImpl::clf(const torch::Tensor& encoded) {
  return unit_rows(clf_head_.is_empty() ? encoded : clf_head_->forward(encoded));
}

torch::Tensor UnidecModelImpl::query_vectors(const torch::Tensor& encoded, UnidecSpace space) {
  switch (space) {
    case UnidecSpace::De: return de(encoded);
    case UnidecSpace::Clf: return with_bias_column(clf(encoded));
    case UnidecSpace::Concat: {
      // 2·[(1-w)·de + w·clf_cos + b_l]: the label's bias is added once to the weighted mean of the two
      // similarities, as it is to the one similarity of the clf mode (w = 0.5: de + clf_cos + 2·b_l).
      const double w = options_.concat_weight;
      torch::Tensor out = w == 0.5 ? torch::cat({de(encoded), clf(encoded)}, /*dim=*/1)
                                   : torch::cat({2 * (1 - w) * de(encoded), 2 * w * clf(encoded)}, /*dim=*/1);
      if (has_label_bias()) out = torch::cat({out, torch::full({out.size(0), 1}, 2.0, out.options())}, /*dim=*/1);
      return out;
    }
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
                                         std::int64_t chunk, std::optional<torch::ScalarType> dtype) {
  return embed_all(corpus, std::vector<UnidecSpace>{space}, progress, task, chunk, dtype).front();
}

void UnidecModelImpl::embed_chunks(const TokenizedCorpus& corpus, const std::vector<UnidecSpace>& spaces, Progress& progress, std::string_view task,
                                   std::int64_t chunk, const std::function<void(std::size_t, std::int64_t, const torch::Tensor&)>& sink) {
  progress.start(task, corpus.size());
  torch::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  std::vector<std::int64_t> rows;
  for (std::int64_t start = 0; start < corpus.size(); start += chunk) {
    rows.clear();
    for (std::int64_t r = start; r < std::min(corpus.size(), start + chunk); ++r) rows.push_back(r);
    const torch::Tensor encoded = encode(corpus, rows);  // one encoder pass under every space's heads
    for (std::size_t s = 0; s < spaces.size(); ++s) sink(s, start, query_vectors(encoded, spaces[s]));
    progress.update(start + static_cast<std::int64_t>(rows.size()));
  }
  progress.finish();
  train(was_training);
}

std::vector<torch::Tensor> UnidecModelImpl::embed_all(const TokenizedCorpus& corpus, const std::vector<UnidecSpace>& spaces, Progress& progress,
                                                      std::string_view task, std::int64_t chunk, std::optional<torch::ScalarType> dtype) {
  std::vector<torch::Tensor> out(spaces.size());
  embed_chunks(corpus, spaces, progress, task, chunk, [&](std::size_t s, std::int64_t start, const torch::Tensor& part) {
    if (!out[s].defined()) out[s] = torch::empty({corpus.size(), part.size(1)}, part.options().dtype(dtype.value_or(part.scalar_type())));
    out[s].narrow(0, start, part.size(0)).copy_(part);
  });
  for (std::size_t s = 0; s < spaces.size(); ++s) {
    if (out[s].defined()) continue;
    const std::int64_t clf_cols = clf_dim() + (has_label_bias() ? 1 : 0);
    const std::int64_t cols = spaces[s] == UnidecSpace::De ? dim() : spaces[s] == UnidecSpace::Clf ? clf_cols : dim() + clf_cols;
    out[s] = torch::zeros({0, cols}, torch::TensorOptions().device(device()).dtype(dtype.value_or(torch::kFloat)));
  }
  return out;
}

void UnidecModelImpl::embed_all_into(const TokenizedCorpus& corpus, UnidecSpace space, torch::Tensor out, Progress& progress, std::string_view task,
                                     std::int64_t chunk) {
  if (out.dim() != 2 || out.size(0) != corpus.size())
    throw Error("embed_all_into: the output has " + std::to_string(out.dim() == 2 ? out.size(0) : -1) + " rows for " +
                std::to_string(corpus.size()) + " texts");
  embed_chunks(corpus, {space}, progress, task, chunk, [&](std::size_t, std::int64_t start, const torch::Tensor& part) {
    out.narrow(0, start, part.size(0)).copy_(part);
  });
}

void UnidecModelImpl::add_classifier_table(std::int64_t num_labels, bool for_checkpoint) {
  const auto options = torch::TensorOptions().device(device());
  table_ = register_parameter("classifiers", for_checkpoint ? torch::empty({num_labels, clf_dim()}, options) : torch::zeros({num_labels, clf_dim()}, options));
  if (has_label_bias()) bias_ = register_parameter("classifier_bias", torch::zeros({num_labels, 1}, options));
}

torch::Tensor UnidecModelImpl::classifiers(const torch::Tensor& rows) {
  torch::Tensor w = unit_rows(table_rows(table_, rows));
  if (has_label_bias()) w = torch::cat({w, table_rows(bias_, rows)}, /*dim=*/1);
  return w;
}

void UnidecModelImpl::write_classifiers(torch::Tensor out) {
  torch::NoGradGuard no_grad;
  const std::int64_t d = table_.size(1);
  // A block of rows at a time: the unit rows of the whole table at once were a second copy of Ψ for a while
  // (1.2 GB at 1.3M labels x 256), the peak of a run's final evaluation.
  constexpr std::int64_t kRowBlock = 16384;
  for (std::int64_t first = 0; first < table_.size(0); first += kRowBlock) {
    const std::int64_t rows = std::min(kRowBlock, table_.size(0) - first);
    out.narrow(0, first, rows).narrow(1, 0, d).copy_(unit_rows(table_.narrow(0, first, rows)));
  }
  if (has_label_bias()) out.narrow(1, d, bias_.size(1)).copy_(bias_);
}

torch::Tensor UnidecModelImpl::with_bias_column(const torch::Tensor& queries) const {
  if (!has_label_bias()) return queries;
  return torch::cat({queries, torch::ones({queries.size(0), 1}, queries.options())}, /*dim=*/1);
}

}  // namespace xmc
