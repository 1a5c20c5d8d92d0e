#pragma once
// Every byte of a zip archive's entries against the CRC-32 the archive stores for it (plain C++). LibTorch's
// checkpoints are zip archives of stored tensors and of code entries it stores or deflates, and its reader does
// not check those CRCs: a byte flipped on disk loaded as good. Deflated entries are inflated and checked too.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xmc {

/// Checks the CRC-32 of every stored entry of the zip archive at `path` (zip64 too); returns the number of entries.
/// Throws InputError naming the file: "is damaged: entry NAME fails its CRC-32 check", a truncated archive, a
/// record out of place.
std::int64_t verify_zip_entries(const std::filesystem::path& path);

/// The same, keeping the bytes of the entries whose name `keep` accepts (each at most 1 MiB, else refused as
/// damaged) in `kept` as (name, bytes), in archive order — what a reader examines before another parser sees
/// it — and, when `sizes` is given, every entry's size (inflated) by name.
std::int64_t verify_zip_entries(const std::filesystem::path& path, const std::function<bool(const std::string&)>& keep,
                                std::vector<std::pair<std::string, std::string>>& kept, std::map<std::string, std::uint64_t>* sizes = nullptr);

}  // namespace xmc
