#pragma once
// PNG and JPEG files decoded to 8-bit RGB (plain C++; Debian's libpng and libjpeg-turbo), as Pillow's
// Image.open(f).convert("RGB") gives them to Hugging Face's image processors: grey is repeated into R, G and
// B, an alpha channel is dropped (not composited), 16-bit samples keep their high byte, a palette is expanded.
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

namespace xmc {

struct RgbImage {
  std::int64_t width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  ///< row by row, R G B per pixel
};

/// Decodes `path` by its content (PNG or JPEG signature). Throws InputError naming the file for a file that
/// is missing, of another format, truncated, damaged (JPEG's warnings of corrupt data included), or larger
/// than 16384 pixels a side.
RgbImage read_image_file(const std::filesystem::path& path);
/// The same from bytes in memory; `source` names them in errors.
RgbImage decode_image(std::string_view bytes, const std::string& source);

}  // namespace xmc
