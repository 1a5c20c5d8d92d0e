#pragma once
// Engine-internal (includes torch). What an encoder's factory builds from a run's config: the encoder Φ, the
// tokenizer that makes its inputs, and a line for logs. Each encoder defines `make_NAME_encoder` in its folder
// (model/bow/, model/bert/); engine/registry/component_list.h lists them and make_encoder() picks by
// `encoder.type`.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/component_config.h"
#include "engine/model/encoder.h"
#include "engine/text/text_tokenizer.h"

namespace xmc {

struct BuiltEncoder {
  std::shared_ptr<EncoderImpl> encoder;
  std::unique_ptr<TextTokenizer> tokenizer;
  std::string description;  ///< e.g. "bow encoder: 21,304 words" for logs
};

/// `train_texts` are the training queries and label texts an encoder may build its vocabulary from (empty when
/// run_dir already keeps it: resume, predict); `run_dir` keeps such files so token ids never change.
using EncoderFactory = BuiltEncoder (*)(const ComponentConfig& config, const std::vector<std::string>& train_texts,
                                        const std::filesystem::path& run_dir);

/// The encoder `encoder.type` names, built for `config` (engine/registry/encoder_factories.cpp). Throws
/// ConfigError naming the registered encoders for an unknown name.
BuiltEncoder make_encoder(const ComponentConfig& config, const std::vector<std::string>& train_texts, const std::filesystem::path& run_dir);

/// The torch device a config's `device` names; throws ConfigError for a malformed or unavailable one.
torch::Device parse_device(const std::string& device);

}  // namespace xmc
