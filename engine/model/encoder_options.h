#pragma once
// What every encoder has (plain data, no torch): the config's `encoder.type`, `encoder.dim`, `encoder.path`
// and `encoder.dropout` (encoder_options.cpp). Each encoder adds a group of its own (model/<encoder>/).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace xmc {

struct OptionGroup;

struct EncoderOptions {
  std::string type = "bow";          ///< a registered encoder (engine/registry/component_list.h)
  std::int64_t dim = 256;            ///< d: embedding size of the DE head
  std::filesystem::path path;        ///< the encoder's files: a checkpoint folder, or word vectors
  double dropout = 0.1;              ///< dropout in heads (and inside the encoder where it has any)
};

/// The group, with `encoder.type` taking one of `encoders`.
OptionGroup encoder_option_group(const std::vector<std::string>& encoders);

}  // namespace xmc
