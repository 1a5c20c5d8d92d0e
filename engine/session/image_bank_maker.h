#pragma once
// `xmc images embed`: image banks made by a frozen vision encoder (plain C++ interface; the work is torch's).
// Each line of the list file names one item's images, tab-separated (none: an item without images); paths are
// relative to the list file's folder unless absolute. Up to max_images per item are decoded, preprocessed as the
// model folder says, embedded in batches, and written as [rows, M, m] float32 with a count file beside it
// (bank.npy -> bank_count.npy), M = the most images any item has, at most max_images.
#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/core/progress.h"

namespace xmc {

struct ImageEmbedOptions {
  std::filesystem::path model;  ///< a ViT or SigLIP folder (config.json; weights, or config.json alone for a random model)
  std::filesystem::path list;
  std::filesystem::path out;
  std::int64_t max_images = 3;
  std::int64_t batch_size = 32;
  std::string device = "cpu";
  std::int64_t threads = 0;  ///< 0 = every core
};

struct ImageEmbedSummary {
  std::int64_t items = 0, items_with_images = 0, images = 0, slots = 0, dim = 0;
  double seconds = 0;
  std::string model;  ///< e.g. "vit, 12 layers, hidden 768, 224 px (random weights)"
  std::filesystem::path counts;
};

/// Throws InputError naming the list file and line for a missing or undecodable image, ConfigError for a bad option.
ImageEmbedSummary embed_image_list(const ImageEmbedOptions& options, Progress& progress = silent_progress());

}  // namespace xmc
