#include "engine/data/filter_pairs.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/core/line_reader.h"

namespace xmc {

FilterPairs::FilterPairs(std::vector<FilterPair> pairs) : pairs_(std::move(pairs)) {
  std::sort(pairs_.begin(), pairs_.end());
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());
}

std::vector<std::int32_t> FilterPairs::labels_of(std::int64_t row) const {
  auto lo = std::lower_bound(pairs_.begin(), pairs_.end(), FilterPair{row, INT32_MIN});
  std::vector<std::int32_t> out;
  for (; lo != pairs_.end() && lo->row == row; ++lo) out.push_back(lo->label);
  return out;
}

FilterPairs read_filter_pairs(const std::filesystem::path& path, std::int64_t rows, std::int64_t labels) {
  LineReader reader(path);
  std::vector<FilterPair> pairs;
  std::string_view line;
  while (reader.next(line)) {
    if (line.empty() || line.front() == '#') continue;
    std::int64_t row = -1, label = -1;
    const char* p = line.data();
    const char* end = line.data() + line.size();
    auto skip = [&] { while (p < end && (*p == ' ' || *p == '\t')) ++p; };
    skip();
    auto r1 = std::from_chars(p, end, row);
    p = r1.ptr;
    skip();
    auto r2 = std::from_chars(p, end, label);
    p = r2.ptr;
    skip();
    if (r1.ec != std::errc() || r2.ec != std::errc() || p != end || row < 0 || label < 0)
      throw InputError(path.string(), reader.line_number(),
                       "expected 'ROW LABEL' (two non-negative integers), got '" + std::string(line) + "'");
    if (rows >= 0 && row >= rows)
      throw InputError(path.string(), reader.line_number(),
                       "row " + std::to_string(row) + " is out of range (the test set has " + std::to_string(rows) + " rows)");
    if (labels >= 0 && label >= labels)
      throw InputError(path.string(), reader.line_number(),
                       "label " + std::to_string(label) + " is out of range (there are " + std::to_string(labels) + " labels)");
    pairs.push_back({row, static_cast<std::int32_t>(label)});
  }
  return FilterPairs(std::move(pairs));
}

void write_filter_pairs(const std::filesystem::path& path, const FilterPairs& pairs) {
  AtomicFileWriter out(path);
  for (const auto& p : pairs.pairs()) out.stream() << p.row << ' ' << p.label << '\n';
  out.commit();
}

}  // namespace xmc
