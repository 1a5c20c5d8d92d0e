// The bag-of-words encoder from a run's config: its word vocabulary (built from the training texts once, then
// kept in the run's folder so token ids never change), TF-IDF weights and optional GloVe word vectors.
#include "engine/core/error.h"
#include "engine/model/bow/bow_encoder.h"
#include "engine/model/bow/bow_options.h"
#include "engine/model/encoder_factory.h"
#include "engine/model/encoder_options.h"
#include "engine/text/vocabulary.h"
#include "engine/text/vocabulary_tokenizer.h"
#include "engine/text/word_vectors.h"

namespace xmc {

BuiltEncoder make_bow_encoder(const ComponentConfig& config, const std::vector<std::string>& train_texts, const std::filesystem::path& run_dir) {
  const EncoderOptions& common = config.get<EncoderOptions>();
  const BowOptions& bow = config.get<BowOptions>();
  const auto vocab_path = run_dir / "vocab.txt";
  // Without texts the run is being loaded, not trained: its vocabulary must be there.
  if (train_texts.empty() && !std::filesystem::exists(vocab_path))
    throw InputError(vocab_path.string(), "no such file: the run's vocabulary is missing");
  Vocabulary vocabulary = std::filesystem::exists(vocab_path)
                              ? Vocabulary::load(vocab_path)
                              : Vocabulary::build(train_texts, {.min_count = bow.min_count});
  if (!std::filesystem::exists(vocab_path)) {
    std::filesystem::create_directories(run_dir);
    vocabulary.save(vocab_path);
  }
  BowEncoderOptions options;
  options.vocab_size = vocabulary.size();
  options.word_dim = common.dim;
  options.dim = common.dim;
  options.idf = vocabulary.idf_table();
  if (bow.bag == "uniform") std::fill(options.idf.begin(), options.idf.end(), 1.0f);  // each occurrence weighs 1
  options.l2_bag = bow.bag == "l2";
  options.residual_block = bow.block == "residual";
  options.relu_block = bow.block == "relu";
  options.init_std = bow.init_std;
  options.device = parse_device(config.run.device);
  std::string description = "bow encoder: " + std::to_string(vocabulary.size()) + " words";
  WordVectorTable vectors;
  if (!common.path.empty()) {
    std::vector<std::string> words;
    for (std::int32_t id = 0; id < static_cast<std::int32_t>(vocabulary.size()); ++id) words.push_back(vocabulary.word(id));
    vectors = load_glove_vectors(common.path, words);
    options.word_dim = vectors.dim;
    description += ", " + std::to_string(vectors.num_found) + " initialised from " + common.path.filename().string();
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
  return {std::move(encoder), std::make_unique<VocabularyTokenizer>(std::move(vocabulary)), description};
}


}  // namespace xmc
