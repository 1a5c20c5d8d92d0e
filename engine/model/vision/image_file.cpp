#include "engine/model/vision/image_file.h"

#include <png.h>
#include <stdio.h>  // jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

constexpr std::int64_t kMaxSide = 16384;

RgbImage decode_png(std::string_view bytes, const std::string& source) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    throw InputError(source, std::string("is a damaged or truncated PNG file: ") + image.message);  // its signature was a PNG's
  if (image.width == 0 || image.height == 0 || image.width > kMaxSide || image.height > kMaxSide) {
    const std::string size = std::to_string(image.width) + " x " + std::to_string(image.height);
    png_image_free(&image);
    throw InputError(source, "is a PNG of " + size + " pixels; 1 to " + std::to_string(kMaxSide) + " a side are read");
  }
  // libpng expands palettes and grey. 8-bit files are read as 8-bit RGBA; 16-bit files as 16-bit linear RGBA
  // (which libpng premultiplies by alpha, undone here) whose high bytes are kept, as Pillow does, rather than
  // converted to sRGB. The alpha channel is then dropped, as Pillow's convert("RGB") does.
  const bool sixteen_bit = (image.format & PNG_FORMAT_FLAG_LINEAR) != 0;
  image.format = sixteen_bit ? PNG_FORMAT_LINEAR_RGB_ALPHA : PNG_FORMAT_RGBA;
  std::vector<std::uint8_t> rgba(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, rgba.data(), 0, nullptr)) {
    const std::string why = image.message;
    png_image_free(&image);
    throw InputError(source, "is a damaged or truncated PNG file: " + why);
  }
  RgbImage out;
  out.width = image.width;
  out.height = image.height;
  const auto n = static_cast<std::size_t>(out.width * out.height);
  out.pixels.resize(n * 3);
  if (!sixteen_bit) {
    for (std::size_t i = 0; i < n; ++i) std::memcpy(&out.pixels[3 * i], &rgba[4 * i], 3);
  } else {
    const auto* samples = reinterpret_cast<const std::uint16_t*>(rgba.data());
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t alpha = samples[4 * i + 3];
      for (std::size_t c = 0; c < 3; ++c) {
        const std::uint32_t value = alpha == 0 ? 0 : std::min<std::uint32_t>(65535, (samples[4 * i + c] * 65535u + alpha / 2) / alpha);
        out.pixels[3 * i + c] = static_cast<std::uint8_t>(value >> 8);
      }
    }
  }
  return out;
}

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

void jpeg_fail(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

/// A warning (corrupt data, premature end of file) is a damaged file here: the decoder would fill the rest grey.
void jpeg_warning(j_common_ptr info, int level) {
  if (level < 0) jpeg_fail(info);
}

RgbImage decode_jpeg(std::string_view bytes, const std::string& source) {
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = jpeg_fail;
  errors.manager.emit_message = jpeg_warning;
  RgbImage out;
  // Nothing with a destructor may be created between setjmp and a longjmp back to it: `out` exists already.
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_decompress(&info);
    throw InputError(source, std::string("is a damaged or truncated JPEG file: ") + errors.message);
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  if (info.image_width == 0 || info.image_height == 0 || info.image_width > kMaxSide || info.image_height > kMaxSide) {
    std::snprintf(errors.message, sizeof errors.message, "%u x %u pixels; 1 to %lld a side are read", info.image_width, info.image_height,
                  static_cast<long long>(kMaxSide));
    std::longjmp(errors.jump, 1);
  }
  info.out_color_space = JCS_RGB;  // grey and CMYK/YCCK are converted by the library
  jpeg_start_decompress(&info);
  out.width = info.output_width;
  out.height = info.output_height;
  out.pixels.resize(static_cast<std::size_t>(out.width * out.height * 3));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out.pixels.data() + static_cast<std::size_t>(info.output_scanline) * static_cast<std::size_t>(out.width) * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return out;
}

}  // namespace

RgbImage decode_image(std::string_view bytes, const std::string& source) {
  static constexpr unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) return decode_png(bytes, source);
  if (bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xFF && static_cast<unsigned char>(bytes[1]) == 0xD8 &&
      static_cast<unsigned char>(bytes[2]) == 0xFF)
    return decode_jpeg(bytes, source);
  throw InputError(source, "is neither a PNG nor a JPEG file (by its first bytes)");
}

RgbImage read_image_file(const std::filesystem::path& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "cannot be opened");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_image(bytes, path.string());
}

}  // namespace xmc
