#include "engine/core/error.h"

namespace xmc {
namespace {
std::string format_location(const std::string& file, std::size_t line, const std::string& reason) {
  return line == 0 ? file + ": " + reason : file + ":" + std::to_string(line) + ": " + reason;
}
}  // namespace

InputError::InputError(std::string file, std::size_t line, std::string reason)
    : Error(format_location(file, line, reason)), file_(std::move(file)), line_(line), reason_(std::move(reason)) {}

}  // namespace xmc
