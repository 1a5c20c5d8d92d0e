#include "engine/data/image_file_list.h"

#include <string>
#include <string_view>

#include "engine/core/line_reader.h"

namespace xmc {

std::vector<std::vector<std::filesystem::path>> read_image_file_list(const std::filesystem::path& list, std::int64_t max_per_item) {
  std::vector<std::vector<std::filesystem::path>> items;
  LineReader reader(list);
  std::string_view view;
  const std::filesystem::path base = list.parent_path();
  while (reader.next(view)) {
    std::string line(view);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::filesystem::path> paths;
    std::size_t start = 0;
    while (start <= line.size()) {
      const std::size_t tab = line.find('\t', start);
      const std::string field = line.substr(start, tab == std::string::npos ? std::string::npos : tab - start);
      if (!field.empty() && static_cast<std::int64_t>(paths.size()) < max_per_item) {
        const std::filesystem::path path(field);
        paths.push_back(path.is_absolute() ? path : base / path);
      }
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    items.push_back(std::move(paths));
  }
  return items;
}

}  // namespace xmc
