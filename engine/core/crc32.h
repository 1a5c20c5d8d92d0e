#pragma once
// CRC-32 (zlib's polynomial) over a stream of byte ranges: the checksums of index files, binary feature
// matrices and the entries of checkpoint archives (plain C++).
#include <cstddef>
#include <cstdint>

namespace xmc {

/// The CRC-32 of every byte so far (start from 0) extended by `size` bytes at `data`. No bytes leave it as it is,
/// even when `data` is null (zlib's own crc32 returns its initial value for a null buffer, losing the CRC so far).
std::uint32_t crc32_update(std::uint32_t crc, const void* data, std::size_t size);

}  // namespace xmc
