#pragma once
// What every parser fuzz target shares: the input bytes as a file (the parsers read files), and the one
// outcome that is allowed besides success — an xmc::Error naming what is wrong. Anything else (a crash, a
// sanitizer report, another exception type escaping) ends the run as a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace xmc::fuzz {

/// A folder of this process's own under the temporary folder, made once.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("xmc-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

/// Writes `bytes` to scratch()/name and returns the path.
inline std::filesystem::path write(const std::string& name, std::string_view bytes) {
  const auto path = scratch() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

/// Runs `parse`; a refusal by xmc::Error is a correct outcome for a bad file.
template <class Parse>
void expect_clean(Parse&& parse) {
  try {
    parse();
  } catch (const xmc::Error&) {
  }
}

}  // namespace xmc::fuzz
