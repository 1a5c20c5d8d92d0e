// Image files for `xmc images embed` (PNG and JPEG through libpng and libjpeg): any bytes are decoded and
// preprocessed, or refused by an xmc::Error naming the file.
#include "engine/model/vision/image_file.h"
#include "engine/model/vision/image_preprocessing.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xmc::fuzz::expect_clean([&] {
    const xmc::RgbImage image = xmc::decode_image(xmc::fuzz::as_text(data, size), "fuzz image");
    if (image.width * image.height <= 1 << 20) (void)xmc::preprocess_image(image, {.height = 8, .width = 8});
  });
  return 0;
}
