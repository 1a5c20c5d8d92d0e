// Training configs: a config file's JSON, and the same bytes as one --set override.
#include "engine/config/train_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(xmc::fuzz::as_text(data, size));
  xmc::fuzz::expect_clean([&] { xmc::validate(xmc::parse_train_config(text, "fuzz.json")); });
  xmc::fuzz::expect_clean([&] {
    xmc::TrainConfig config;
    xmc::apply_config_overrides(config, {text});
    xmc::validate(config);
  });
  return 0;
}
