#include "engine/core/crc32.h"

#include <zlib.h>

namespace xmc {

std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t size) {
  return size == 0 ? crc : static_cast<std::uint32_t>(::crc32_z(crc, static_cast<const Bytef*>(data), size));
}

}  // namespace xmc
