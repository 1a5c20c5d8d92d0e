#include "engine/core/json_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/core/bounded_json.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {

std::string read_whole_file(const std::filesystem::path& file) {
  require_regular_file(file);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), std::string("cannot open: ") + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json read_json_file(const std::filesystem::path& file) {
  try {
    return parse_bounded_json(read_whole_file(file));
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(file.string(), std::string("bad JSON: ") + e.what());
  }
}

}  // namespace xmc
