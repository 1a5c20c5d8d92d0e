// A stored run's config as the workbench reads it (engine/session/run_config_view.h): any bytes a store may hold in
// its config column give a flat config (possibly empty), never a crash or an exception.
#include "engine/session/run_config_view.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(xmc::fuzz::as_text(data, size));
  const auto flat = xmc::flat_run_config(text);
  for (const auto& [key, value] : *flat) (void)xmc::config_value_or(*flat, key);
  return 0;
}
