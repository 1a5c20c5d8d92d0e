#pragma once
// The `images.*` keys of the transformer encoders (plain data, no torch): how many of an item's images are
// fused, and where. They act only when the dataset folder has image banks (engine/data/image_bank.h); without
// banks, or with images.max 0, the encoder is exactly its text-only self (no projection, same parameters).
#include <cstdint>
#include <string>

namespace xmc {

struct OptionGroup;
struct TrainConfig;

struct ImageOptions {
  std::int64_t max = 3;            ///< image tokens per item at most (ViXML: 3); 0 = text only
  std::string fusion = "early";    ///< early: image tokens inside the sequence; late: added to the pooled vector
};

OptionGroup image_option_group();

/// Whether a run of `config` reads the dataset's image banks (images.max > 0: an encoder that fuses them, or a run
/// built on one).
bool reads_image_banks(const TrainConfig& config);

}  // namespace xmc
