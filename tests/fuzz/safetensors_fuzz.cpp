// safetensors files: 8-byte header length, JSON header of dtypes, shapes and offsets, then the data.
#include "engine/model/safetensors_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = xmc::fuzz::write("model.safetensors", xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] {
    const auto file = xmc::SafetensorsFile::open(path);
    for (const auto& tensor : file.tensors()) (void)file.data(tensor);
  });
  return 0;
}
