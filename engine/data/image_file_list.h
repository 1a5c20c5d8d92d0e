#pragma once
// A list of image files per item (plain C++): one line per item, its image paths tab-separated (an empty line is
// an item without images), relative to the list file's folder unless absolute. What `xmc images embed` reads,
// and a dataset's images/<split>_files.txt, from which the workbench shows thumbnails.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace xmc {

/// Each line's paths, at most `max_per_item` of them. Throws InputError naming the file when it cannot be read.
std::vector<std::vector<std::filesystem::path>> read_image_file_list(const std::filesystem::path& list, std::int64_t max_per_item = 64);

}  // namespace xmc
