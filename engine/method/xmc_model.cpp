#include "engine/method/xmc_model.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/model/autocast.h"
#include "engine/model/bert_encoder.h"
#include "engine/model/bow_encoder.h"
#include "engine/model/table_rows.h"
#include "engine/model/unit_rows.h"
#include "engine/text/vocabulary.h"
#include "engine/text/word_vectors.h"
#include "engine/text/wordpiece_tokenizer.h"

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

torch::Tensor XmcModelImpl::embed_all(const TokenizedCorpus& corpus, Progress& progress, std::string_view task, std::int64_t chunk) {
  progress.start(task, corpus.size());
  torch::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  std::vector<torch::Tensor> parts;
  std::vector<std::int64_t> rows;
  for (std::int64_t start = 0; start < corpus.size(); start += chunk) {
    rows.clear();
    for (std::int64_t r = start; r < std::min(corpus.size(), start + chunk); ++r) rows.push_back(r);
    parts.push_back(embed(corpus, rows));
    progress.update(start + static_cast<std::int64_t>(rows.size()));
  }
  progress.finish();
  train(was_training);
  if (parts.empty()) return torch::zeros({0, dim_}, torch::TensorOptions().device(device()));
  return torch::cat(parts);
}

void XmcModelImpl::add_classifiers(std::int64_t num_labels) {
  residuals_ = register_parameter("classifier_residuals", torch::zeros({num_labels, dim_}, torch::TensorOptions().device(device())));
}

torch::Tensor XmcModelImpl::classifiers(const torch::Tensor& label_embeddings, const torch::Tensor& rows) {
  const torch::Tensor residuals = rows.defined() ? table_rows(residuals_, rows) : residuals_;
  return unit_rows(label_embeddings + residuals, 1e-12);  // normalize's default eps
}

torch::Tensor XmcModelImpl::fuse(const torch::Tensor& classifiers, const torch::Tensor& label_embeddings, double weight) {
  return weight * classifiers + (1.0 - weight) * label_embeddings;
}

torch::Device parse_device(const std::string& device) {
  try {
    torch::Device d(device);
    if (d.is_cuda() && !torch::cuda::is_available())
      throw ConfigError("device: \"" + device + "\" was asked for but this LibTorch has no usable CUDA device; use device=cpu");
    return d;
  } catch (const c10::Error&) {
    throw ConfigError("device: \"" + device + "\" is not a torch device (cpu, cuda, cuda:N)");
  }
}

namespace {

class WordTokenizerAdapter final : public TextTokenizer {
 public:
  explicit WordTokenizerAdapter(Vocabulary vocabulary) : vocabulary_(std::move(vocabulary)) {}
  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override { return vocabulary_.tokenize_corpus(texts); }
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override {
    return std::count_if(tokens.begin(), tokens.end(), [](std::int32_t id) { return id != Vocabulary::kPadId && id != Vocabulary::kUnkId; });
  }
  const Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  Vocabulary vocabulary_;
};

class WordPieceAdapter final : public TextTokenizer {
 public:
  explicit WordPieceAdapter(WordPieceTokenizer tokenizer) : tokenizer_(std::move(tokenizer)) {}
  TokenizedCorpus tokenize(const std::vector<std::string>& texts) const override { return tokenizer_.encode_corpus(texts); }
  std::int64_t known_tokens(std::span<const std::int32_t> tokens) const override {
    return std::count_if(tokens.begin(), tokens.end(), [this](std::int32_t id) {
      return id != tokenizer_.pad_id() && id != tokenizer_.unk_id() && id != tokenizer_.cls_id() && id != tokenizer_.sep_id();
    });
  }

 private:
  WordPieceTokenizer tokenizer_;
};

BuiltModel build_bow(const TrainConfig& config, const std::vector<std::string>& train_texts, const std::filesystem::path& run_dir,
                     EmbeddingHead head) {
  const auto vocab_path = run_dir / "vocab.txt";
  Vocabulary vocabulary = std::filesystem::exists(vocab_path)
                              ? Vocabulary::load(vocab_path)
                              : Vocabulary::build(train_texts, {.min_count = config.min_word_count});
  if (!std::filesystem::exists(vocab_path)) {
    std::filesystem::create_directories(run_dir);
    vocabulary.save(vocab_path);
  }
  BowEncoderOptions options;
  options.vocab_size = vocabulary.size();
  options.word_dim = config.encoder_dim;
  options.dim = config.encoder_dim;
  options.idf = vocabulary.idf_table();
  options.l2_bag = config.bow_bag == "l2";
  options.residual_block = config.bow_block == "residual";
  options.init_std = config.bow_init_std;
  options.device = parse_device(config.device);
  std::string description = "bow encoder: " + std::to_string(vocabulary.size()) + " words";
  WordVectorTable vectors;
  if (!config.encoder_path.empty()) {
    std::vector<std::string> words;
    for (std::int32_t id = 0; id < static_cast<std::int32_t>(vocabulary.size()); ++id) words.push_back(vocabulary.word(id));
    vectors = load_glove_vectors(config.encoder_path, words);
    options.word_dim = vectors.dim;
    description += ", " + std::to_string(vectors.num_found) + " initialised from " + config.encoder_path.filename().string();
  }
  auto encoder = std::make_shared<BowEncoderImpl>(options);
  if (vectors.num_found > 0) {
    std::vector<std::int64_t> rows;
    std::vector<float> values;
    for (std::size_t w = 0; w < vectors.found.size(); ++w)
      if (vectors.found[w]) {
        rows.push_back(static_cast<std::int64_t>(w));
        values.insert(values.end(), vectors.vectors.begin() + static_cast<std::ptrdiff_t>(w * static_cast<std::size_t>(vectors.dim)),
                      vectors.vectors.begin() + static_cast<std::ptrdiff_t>((w + 1) * static_cast<std::size_t>(vectors.dim)));
      }
    encoder->set_word_vectors(rows, values);
  }
  BuiltModel built;
  built.model = XmcModel(encoder, config.encoder_dim, config.dropout, head);
  built.tokenizer = std::make_unique<WordTokenizerAdapter>(std::move(vocabulary));
  built.description = description + ", d=" + std::to_string(built.model->dim());
  return built;
}

BuiltModel build_bert(const TrainConfig& config, EmbeddingHead head) {
  const auto& folder = config.encoder_path;
  BertEncoderOptions options;
  options.pooling = config.pooling == "cls" ? BertPooling::cls : BertPooling::mean;
  options.max_len = config.max_len;
  options.device = parse_device(config.device);
  options.dropout = config.dropout;
  options.autocast = parse_precision(config.precision, "encoder.precision");
  std::shared_ptr<BertEncoderImpl> encoder;
  std::string description;
  if (std::filesystem::exists(folder / "model.safetensors")) {
    encoder = load_bert_encoder(folder, options).ptr();
    description = "bert encoder from " + folder.string();
  } else {
    const BertConfig bert_config = read_bert_config(folder / "config.json");
    encoder = std::make_shared<BertEncoderImpl>(bert_config, options);
    description = "bert encoder, randomly initialised from " + (folder / "config.json").string();
  }
  BuiltModel built;
  built.model = XmcModel(encoder, config.encoder_dim, config.dropout, head);
  built.tokenizer = std::make_unique<WordPieceAdapter>(WordPieceTokenizer::from_folder(folder, {.max_len = config.max_len}));
  built.description = description + ", d=" + std::to_string(built.model->dim());
  return built;
}

}  // namespace

BuiltModel build_model(const TrainConfig& config, const std::vector<std::string>& train_texts, const std::filesystem::path& run_dir,
                       EmbeddingHead head) {
  if (config.encoder_type == "bert") return build_bert(config, head);
  return build_bow(config, train_texts, run_dir, head);
}

}  // namespace xmc
