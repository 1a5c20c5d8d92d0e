// Image files as the vision encoders read them: PNG (8- and 16-bit, grey, alpha, palette) and JPEG decoded to
// RGB as Pillow's convert("RGB") gives them, damaged files refused by name, and the resize and normalisation of
// Hugging Face's image processors worked out by hand.
#include "engine/model/vision/image_file.h"

#include <gtest/gtest.h>
#include <png.h>
#include <stdio.h>
#include <jpeglib.h>

#include "engine/core/error.h"
#include "engine/model/vision/image_preprocessing.h"
#include "tests/support/test_support.h"

namespace xmc {
namespace {

std::string png_bytes(int w, int h, png_uint_32 format, const void* pixels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(w);
  image.height = static_cast<png_uint_32>(h);
  image.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_get_memory_size(image, size, 0, pixels, 0, nullptr));
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr));
  out.resize(size);
  return out;
}

std::string grey_jpeg(int w, int h, std::uint8_t value) {
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(w);
  info.image_height = static_cast<JDIMENSION>(h);
  info.input_components = 1;
  info.in_color_space = JCS_GRAYSCALE;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  jpeg_start_compress(&info, TRUE);
  std::vector<std::uint8_t> row(static_cast<std::size_t>(w), value);
  while (info.next_scanline < info.image_height) {
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&info, &r, 1);
  }
  jpeg_finish_compress(&info);
  std::string out(reinterpret_cast<const char*>(buffer), size);
  jpeg_destroy_compress(&info);
  free(buffer);
  return out;
}

std::string decode_error(const std::string& bytes) {
  try {
    decode_image(bytes, "pic");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ImageFile, PngsOfEveryKindBecomeRgbAsPillowGivesThem) {
  const std::uint8_t grey[2] = {0, 200};
  RgbImage image = decode_image(png_bytes(2, 1, PNG_FORMAT_GRAY, grey), "grey.png");
  EXPECT_EQ(image.pixels, (std::vector<std::uint8_t>{0, 0, 0, 200, 200, 200}));

  const std::uint8_t rgba[8] = {10, 20, 30, 0, 200, 100, 50, 128};  // alpha dropped, not composited
  image = decode_image(png_bytes(2, 1, PNG_FORMAT_RGBA, rgba), "alpha.png");
  EXPECT_EQ(image.pixels, (std::vector<std::uint8_t>{10, 20, 30, 200, 100, 50}));

  const std::uint16_t sixteen[3] = {0x1234, 0xABCD, 0xFFFF};  // the high byte of each sample
  image = decode_image(png_bytes(1, 1, PNG_FORMAT_LINEAR_RGB, sixteen), "16bit.png");
  EXPECT_EQ(image.pixels, (std::vector<std::uint8_t>{0x12, 0xAB, 0xFF}));

  const std::uint8_t index[2] = {1, 0};
  const std::uint8_t palette[6] = {1, 2, 3, 250, 251, 252};
  png_image mapped{};
  mapped.version = PNG_IMAGE_VERSION;
  mapped.width = 2;
  mapped.height = 1;
  mapped.format = PNG_FORMAT_RGB_COLORMAP;
  mapped.colormap_entries = 2;
  png_alloc_size_t size = 1 << 16;
  std::string bytes(size, '\0');
  ASSERT_TRUE(png_image_write_to_memory(&mapped, bytes.data(), &size, 0, index, 0, palette));
  bytes.resize(size);
  image = decode_image(bytes, "palette.png");
  EXPECT_EQ(image.pixels, (std::vector<std::uint8_t>{250, 251, 252, 1, 2, 3}));
}

TEST(ImageFile, AGreyJpegBecomesRgb) {
  const RgbImage image = decode_image(grey_jpeg(16, 8, 90), "grey.jpg");
  EXPECT_EQ(image.width, 16);
  EXPECT_EQ(image.height, 8);
  for (const std::uint8_t v : image.pixels) EXPECT_NEAR(v, 90, 1);
}

TEST(ImageFile, DamagedAndForeignFilesAreRefusedByName) {
  const std::uint8_t grey[64] = {};
  const std::string png = png_bytes(8, 8, PNG_FORMAT_GRAY, grey);
  EXPECT_NE(decode_error(png.substr(0, png.size() / 2)).find("pic: is a damaged or truncated PNG file"), std::string::npos)
      << decode_error(png.substr(0, png.size() / 2));
  const std::string jpeg = grey_jpeg(64, 64, 30);
  EXPECT_NE(decode_error(jpeg.substr(0, jpeg.size() / 2)).find("pic: is a damaged or truncated JPEG file"), std::string::npos)
      << decode_error(jpeg.substr(0, jpeg.size() / 2));
  EXPECT_NE(decode_error("GIF89a....").find("neither a PNG nor a JPEG"), std::string::npos);
  EXPECT_NE(decode_error("").find("neither a PNG nor a JPEG"), std::string::npos);
  test::TempDir dir;
  try {
    read_image_file(dir / "absent.png");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.png"), std::string::npos) << e.what();
  }
}

TEST(ImagePreprocessing, ResizeRescaleAndNormaliseWorkedByHand) {
  // 2 × 1 grey [0, 255] shrunk to 1 × 1 bilinear: Pillow's filter widened by the scale 2 puts weight 0.75 on both
  // pixels, normalised to ½ each: 127.5, rescaled 0.5, normalised (0.5 − 0.5) / 0.5 = 0.
  RgbImage image{.width = 2, .height = 1, .pixels = {0, 0, 0, 255, 255, 255}};
  ImagePreprocessing p;
  p.height = p.width = 1;
  std::vector<float> out = preprocess_image(image, p);
  ASSERT_EQ(out.size(), 3u);
  for (const float v : out) EXPECT_NEAR(v, 0.0f, 1e-6);
  // Growing a one-pixel image keeps its colour; mean and std per channel as given.
  image = {.width = 1, .height = 1, .pixels = {255, 0, 51}};
  p.height = p.width = 3;
  p.resample = 3;
  p.mean = {0.5, 0.25, 0.0};
  p.std = {0.5, 0.25, 0.2};
  out = preprocess_image(image, p);
  ASSERT_EQ(out.size(), 27u);
  for (int i = 0; i < 9; ++i) {
    EXPECT_NEAR(out[static_cast<std::size_t>(i)], 1.0f, 1e-5);        // (1 − 0.5) / 0.5
    EXPECT_NEAR(out[static_cast<std::size_t>(9 + i)], -1.0f, 1e-5);   // (0 − 0.25) / 0.25
    EXPECT_NEAR(out[static_cast<std::size_t>(18 + i)], 1.0f, 1e-5);   // (0.2 − 0) / 0.2
  }
}

TEST(ImagePreprocessing, AProcessorConfigIsReadAndABadOneRefusedByName) {
  test::TempDir dir;
  test::write_file(dir / "p.json", R"({"do_resize": true, "size": {"height": 384, "width": 384}, "resample": 3, "rescale_factor": 0.00392156862745098,
                                      "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]})");
  const ImagePreprocessing p = read_image_preprocessing(dir / "p.json", {});
  EXPECT_EQ(p.height, 384);
  EXPECT_EQ(p.resample, 3);
  EXPECT_DOUBLE_EQ(p.std[2], 0.225);
  EXPECT_EQ(read_image_preprocessing(dir / "absent.json", {.height = 7}).height, 7);
  for (const char* bad : {R"({"image_std": [0.5, 0, 0.5]})", R"({"size": {"longest_edge": 3}})", R"({"resample": 1})", R"({"image_mean": [1, 2]})"}) {
    test::write_file(dir / "bad.json", bad);
    try {
      read_image_preprocessing(dir / "bad.json", {});
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xmc
