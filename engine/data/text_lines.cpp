#include "engine/data/text_lines.h"

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/core/line_reader.h"
#include "engine/core/utf8.h"

namespace xmc {

std::vector<std::string> read_text_lines(const std::filesystem::path& path, long long expected_lines) {
  LineReader reader(path);
  std::vector<std::string> lines;
  if (expected_lines > 0) lines.reserve(static_cast<std::size_t>(expected_lines));
  std::string_view line;
  while (reader.next(line)) {
    const auto bad = find_invalid_utf8(line);
    if (bad != std::string_view::npos)
      throw InputError(path.string(), reader.line_number(),
                       "text is not valid UTF-8 (bad byte at column " + std::to_string(bad + 1) + ")");
    lines.emplace_back(line);
  }
  if (expected_lines >= 0 && static_cast<long long>(lines.size()) != expected_lines)
    throw InputError(path.string(), "has " + std::to_string(lines.size()) + " lines but " +
                                        std::to_string(expected_lines) + " were expected (one text per row)");
  return lines;
}

void write_text_lines(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  AtomicFileWriter out(path);
  for (const auto& line : lines) out.stream() << to_single_line(line) << '\n';
  out.commit();
}

}  // namespace xmc
