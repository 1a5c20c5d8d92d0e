#include "engine/core/content_hash.h"

#include <cstdio>
#include <fstream>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {

void ContentHash::add(std::string_view bytes) {
  std::uint64_t h = state_;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  state_ = h;
}

void ContentHash::add_file(const std::filesystem::path& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "cannot open file for reading");
  add(path.filename().string());
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    add(std::string_view(buffer.data(), static_cast<std::size_t>(in.gcount())));
  }
}

std::string ContentHash::hex() const {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(state_));
  return out;
}

}  // namespace xmc
