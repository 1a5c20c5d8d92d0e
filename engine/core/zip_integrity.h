#pragma once
// Every byte of a zip archive's entries against the CRC-32 the archive stores for it (plain C++). LibTorch's
// checkpoints are zip archives of stored (uncompressed) entries, and its reader does not check those CRCs: a byte
// flipped on disk loaded as good.
#include <cstdint>
#include <filesystem>

namespace xmc {

/// Checks the CRC-32 of every stored entry of the zip archive at `path` (zip64 too); returns the number of entries.
/// Throws InputError naming the file: "is damaged: entry NAME fails its CRC-32 check", a truncated archive, a
/// record out of place.
std::int64_t verify_zip_entries(const std::filesystem::path& path);

}  // namespace xmc
