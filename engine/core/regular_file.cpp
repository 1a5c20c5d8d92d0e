#include "engine/core/regular_file.h"

#include <system_error>

#include "engine/core/error.h"

namespace xmc {

void require_regular_file(const std::filesystem::path& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  using std::filesystem::file_type;
  switch (status.type()) {
    case file_type::regular: return;
    case file_type::not_found: throw InputError(path.string(), "no such file");
    case file_type::directory: throw InputError(path.string(), "is a directory, not a file");
    case file_type::fifo: throw InputError(path.string(), "is a FIFO (named pipe), not a regular file");
    case file_type::socket: throw InputError(path.string(), "is a socket, not a regular file");
    case file_type::character:
    case file_type::block: throw InputError(path.string(), "is a device, not a regular file");
    default: throw InputError(path.string(), "cannot be read as a file" + (error ? " (" + error.message() + ")" : std::string()));
  }
}

bool is_regular_file_path(const std::filesystem::path& path) {
  std::error_code error;
  return std::filesystem::status(path, error).type() == std::filesystem::file_type::regular;
}

}  // namespace xmc
