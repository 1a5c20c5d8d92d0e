// The module-code check a LibTorch archive's code entries pass before LibTorch compiles them: any bytes, split at
// each NUL into entries (the first archive/code/__torch__.py, then archive/code/__torch__/___torch_mangle_N.py).
#include "engine/core/archive_module_code.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = xmc::fuzz::as_text(data, size);
  std::vector<std::pair<std::string, std::string>> code;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('\0', start), text.size());
    const std::string name = code.empty() ? std::string("archive/code/__torch__.py")
                                          : "archive/code/__torch__/___torch_mangle_" + std::to_string(code.size() - 1) + ".py";
    code.emplace_back(name, std::string(text.substr(start, end - start)));
    start = end + 1;
  }
  xmc::fuzz::expect_clean([&] { xmc::check_archive_module_code("checkpoint.pt", code); });
  return 0;
}
