#include "engine/model/bow/bow_encoder.h"

#include <algorithm>
#include <tuple>

#include "engine/core/error.h"
#include "engine/model/row_parallel_linear.h"
#include "engine/model/table_rows.h"

namespace xmc {
namespace {

/// The distinct ids among `ids` (each in [0, vocab_size)) in ascending order, and for each id its index among
/// them: through a slot per vocabulary word when the call has many tokens for its vocabulary (no sort of every
/// token), else by sorting a copy (no vocabulary-sized table per call: gradient caching encodes small chunks).
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> distinct_words(const std::vector<std::int64_t>& ids, std::int64_t vocab_size) {
  std::vector<std::int64_t> words, slots(ids.size());
  if (static_cast<std::int64_t>(ids.size()) * 8 < vocab_size) {
    words = ids;
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    for (std::size_t k = 0; k < ids.size(); ++k) slots[k] = std::lower_bound(words.begin(), words.end(), ids[k]) - words.begin();
    return {std::move(words), std::move(slots)};
  }
  std::vector<std::int32_t> slot_of_word(static_cast<std::size_t>(vocab_size), -1);
  for (const std::int64_t id : ids) {
    if (slot_of_word[static_cast<std::size_t>(id)] < 0) {
      slot_of_word[static_cast<std::size_t>(id)] = 0;
      words.push_back(id);
    }
  }
  std::sort(words.begin(), words.end());
  for (std::size_t i = 0; i < words.size(); ++i) slot_of_word[static_cast<std::size_t>(words[i])] = static_cast<std::int32_t>(i);
  for (std::size_t k = 0; k < ids.size(); ++k) slots[k] = slot_of_word[static_cast<std::size_t>(ids[k])];
  return {std::move(words), std::move(slots)};
}

}  // namespace

BowEncoderImpl::BowEncoderImpl(BowEncoderOptions options) : options_(std::move(options)) {
  if (static_cast<std::int64_t>(options_.idf.size()) != options_.vocab_size)
    throw ConfigError("bow encoder: " + std::to_string(options_.idf.size()) + " idf values for a vocabulary of " +
                      std::to_string(options_.vocab_size));
  embeddings_ = register_module(
      "embeddings", torch::nn::EmbeddingBag(torch::nn::EmbeddingBagOptions(options_.vocab_size, options_.word_dim).mode(torch::kSum)));
  torch::NoGradGuard no_grad;
  // Unit-variance word vectors by default, as torch's own: the TF-IDF mean of a short text then still has
  // coordinates of ~0.3, well above the DE head's bias (±1/sqrt(d)). At 1/sqrt(d) the bias dominated, every
  // text started on nearly one direction, and DEXML learned far slower (WordNet-60k reference job: P@1
  // 25.3 → 34.8 at equal epochs).
  embeddings_->weight.normal_(0.0, options_.init_std);
  if (options_.word_dim != options_.dim)
    projection_ = register_module("projection", torch::nn::Linear(options_.word_dim, options_.dim));
  if (options_.residual_block) {
    hidden_ = register_module("hidden", torch::nn::Linear(options_.dim, options_.dim));
    residual_out_ = register_module("residual_out", torch::nn::Linear(options_.dim, options_.dim));
    residual_out_->weight.zero_();
    residual_out_->bias.zero_();
  } else if (options_.relu_block) {
    relu_layer_ = register_module("relu_layer", torch::nn::Linear(options_.dim, options_.dim));
  }
  idf_ = register_buffer("idf", torch::tensor(options_.idf, torch::kFloat32));
  to(options_.device);
}

namespace {

/// The texts' known tokens as one bag input, and for a training step their distinct words.
struct BowInput final : EncoderInput {
  std::int64_t num_texts = 0;
  std::vector<std::int64_t> ids;      ///< every text's known tokens, text after text
  std::vector<std::int64_t> lengths;  ///< tokens per text
  torch::Tensor input;                ///< ids, on the device
  torch::Tensor bag_offsets;          ///< where each text's tokens start, on the device
  bool has_distinct_words = false;
  std::vector<std::int64_t> words;    ///< distinct_words(ids), when prepared for training
  std::vector<std::int64_t> slots;
};

}  // namespace

std::shared_ptr<const EncoderInput> BowEncoderImpl::prepare_input(const TokenizedCorpus& corpus, std::span<const std::int64_t> rows,
                                                                  bool for_training) const {
  // Flatten the rows' known tokens into one bag input; [PAD]/[UNK] carry no meaning and are skipped.
  auto prepared = std::make_shared<BowInput>();
  prepared->num_texts = static_cast<std::int64_t>(rows.size());
  std::vector<std::int64_t> offsets;
  offsets.reserve(rows.size());
  prepared->lengths.reserve(rows.size());
  for (std::int64_t row : rows) {
    offsets.push_back(static_cast<std::int64_t>(prepared->ids.size()));
    for (std::int32_t t : corpus.tokens(row)) {
      if (t >= options_.vocab_size)
        throw Error("bow encoder: token id " + std::to_string(t) + " outside the vocabulary of " + std::to_string(options_.vocab_size) +
                    " (text " + std::to_string(row) + ")");
      if (t > 1) prepared->ids.push_back(t);
    }
    prepared->lengths.push_back(static_cast<std::int64_t>(prepared->ids.size()) - offsets.back());
  }
  const auto long_opts = torch::TensorOptions().dtype(torch::kInt64);
  prepared->input = staged_to(torch::tensor(prepared->ids, long_opts), options_.device);
  prepared->bag_offsets = staged_to(torch::tensor(offsets, long_opts), options_.device);
  if (for_training && options_.device.is_cpu()) {
    std::tie(prepared->words, prepared->slots) = distinct_words(prepared->ids, options_.vocab_size);
    prepared->has_distinct_words = true;
  }
  return prepared;
}

torch::Tensor BowEncoderImpl::encode_input(const EncoderInput& encoder_input) {
  const auto& prepared = dynamic_cast<const BowInput&>(encoder_input);
  const auto long_opts = torch::TensorOptions().dtype(torch::kInt64);
  const torch::Tensor& input = prepared.input;
  // TF-IDF weights normalised per text: each occurrence adds idf(t); dividing by the text's total makes
  // the bag a weighted mean (the l2 bag divides by the L2 norm of the text's TF-IDF vector instead).
  torch::Tensor weights = idf_.index_select(0, input);
  torch::Tensor text_of_token;
  if (prepared.ids.empty()) {
    text_of_token = torch::empty({0}, long_opts.device(options_.device));
  } else {
    text_of_token = torch::repeat_interleave(torch::arange(prepared.num_texts, long_opts), torch::tensor(prepared.lengths, long_opts))
                        .to(options_.device);
  }
  const std::int64_t num_texts = prepared.num_texts;
  torch::Tensor totals;
  if (options_.l2_bag) {
    // The L2 norm of the text's TF-IDF vector: a word's occurrences add up (count·idf) before squaring.
    const auto [words, word_of_token] = torch::_unique(text_of_token * options_.vocab_size + input, /*sorted=*/false, /*return_inverse=*/true);
    const torch::Tensor word_weights = torch::zeros({words.size(0)}, weights.options()).index_add_(0, word_of_token, weights);
    totals = torch::zeros({num_texts}, weights.options())
                 .index_add_(0, torch::div(words, options_.vocab_size, "floor"), word_weights * word_weights)
                 .sqrt();
  } else {
    totals = torch::zeros({num_texts}, weights.options()).index_add_(0, text_of_token, weights);
  }
  weights = weights / totals.index_select(0, text_of_token).clamp_min(1e-12);
  torch::Tensor h;
  if (sparse_rows_gradient(embeddings_->weight)) {
    // Training on the CPU: the bag sums the vectors of the texts' distinct words, picked from the table, so
    // that the table's gradient names those words once each (model/table_rows.h) instead of being a zeroed
    // [vocab × dim] tensor per call, scanned, clipped and read whole by the optimiser.
    std::vector<std::int64_t> computed_words, computed_slots;
    if (!prepared.has_distinct_words) std::tie(computed_words, computed_slots) = distinct_words(prepared.ids, options_.vocab_size);
    const auto& words = prepared.has_distinct_words ? prepared.words : computed_words;
    const auto& slots = prepared.has_distinct_words ? prepared.slots : computed_slots;
    h = std::get<0>(torch::embedding_bag(distinct_table_rows(embeddings_->weight, torch::tensor(words, long_opts)), torch::tensor(slots, long_opts),
                                         prepared.bag_offsets, /*scale_grad_by_freq=*/false, /*mode (sum)=*/0, /*sparse=*/false, weights));
  } else {
    before_reading_rows(embeddings_->weight, input);  // rows whose updates an optimiser deferred are brought up to date
    h = embeddings_->forward(input, prepared.bag_offsets, weights);
  }
  // The dense layers split their rows over the threads (model/row_parallel_linear.h): with the system BLAS on one
  // core they were most of a training step's serial time.
  auto dense = [](const torch::nn::Linear& layer, const torch::Tensor& in) { return row_parallel_linear(in, layer->weight, layer->bias); };
  if (!projection_.is_empty()) h = dense(projection_, h);
  if (!relu_layer_.is_empty()) return h + torch::relu(dense(relu_layer_, h));
  if (hidden_.is_empty()) return h;
  return h + dense(residual_out_, torch::gelu(dense(hidden_, h)));
}

void BowEncoderImpl::set_word_vectors(const std::vector<std::int64_t>& rows, const std::vector<float>& vectors) {
  torch::NoGradGuard no_grad;
  auto values = torch::tensor(vectors, torch::kFloat32).view({static_cast<std::int64_t>(rows.size()), options_.word_dim});
  embeddings_->weight.index_copy_(0, torch::tensor(rows, torch::kInt64).to(options_.device), values.to(options_.device));
}

}  // namespace xmc
