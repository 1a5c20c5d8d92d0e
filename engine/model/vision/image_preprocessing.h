#pragma once
// An image as a vision encoder reads it (plain C++), by the model folder's preprocessor_config.json as Hugging
// Face's ViTImageProcessor / SiglipImageProcessor apply it: resized to size.height × size.width with the given
// resample filter (2 bilinear, 3 bicubic, 0 nearest; antialiased when shrinking, as Pillow's resize, computed in
// float without Pillow's 8-bit rounding between its two passes), rescaled (rescale_factor, 1/255), normalised
// ((x − image_mean) / image_std per channel), channels first.
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/vision/image_file.h"

namespace xmc {

struct ImagePreprocessing {
  std::int64_t height = 224, width = 224;
  int resample = 2;  ///< Pillow's codes: 0 nearest, 2 bilinear, 3 bicubic
  bool do_resize = true, do_rescale = true, do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  std::array<double, 3> mean{0.5, 0.5, 0.5}, std{0.5, 0.5, 0.5};
};

/// Reads `file`; keys it lacks keep `defaults`. A missing file gives `defaults`. Throws InputError naming the
/// file and key for a malformed one (a size that is not {height, width} or {shortest_edge}, a std of 0, ...).
ImagePreprocessing read_image_preprocessing(const std::filesystem::path& file, const ImagePreprocessing& defaults);

/// `image` -> [3 × height × width] floats, channels first.
std::vector<float> preprocess_image(const RgbImage& image, const ImagePreprocessing& preprocessing);

}  // namespace xmc
