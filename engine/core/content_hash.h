#pragma once
// A stable 64-bit content hash (FNV-1a) for dataset fingerprints: the same bytes give the same
// fingerprint on every machine and build, so runs can be matched to the data they trained on.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace xmc {

class ContentHash {
 public:
  void add(std::string_view bytes);
  /// Adds a file's name and whole content; throws InputError if it cannot be read.
  void add_file(const std::filesystem::path& path);
  std::uint64_t value() const { return state_; }
  /// 16 lowercase hex digits.
  std::string hex() const;

 private:
  std::uint64_t state_ = 0xcbf29ce484222325ULL;
};

}  // namespace xmc
