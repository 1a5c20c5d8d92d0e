#include "engine/text/word_vectors.h"

#include <algorithm>

#include <cctype>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/core/line_reader.h"

namespace xmc {

WordVectorTable load_glove_vectors(const std::filesystem::path& path, const std::vector<std::string>& words) {
  std::unordered_map<std::string, std::size_t> wanted;
  for (std::size_t i = 0; i < words.size(); ++i) wanted.emplace(words[i], i);
  WordVectorTable table;
  table.found.assign(words.size(), false);
  LineReader reader(path);
  std::string_view line;
  std::vector<float> row;
  while (reader.next(line)) {
    if (line.empty()) continue;
    const auto space = line.find(' ');
    if (space == std::string_view::npos || space == 0)
      throw InputError(path.string(), reader.line_number(), "expected 'word v1 ... vd'");
    std::string word(line.substr(0, space));
    auto it = wanted.find(word);
    if (it == wanted.end()) {
      for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      it = wanted.find(word);
    }
    // Parse the numbers even for unwanted words only until the dimension is known.
    if (it == wanted.end() && table.dim > 0) continue;
    row.clear();
    const char* p = line.data() + space + 1;
    const char* end = line.data() + line.size();
    while (p < end) {
      while (p < end && *p == ' ') ++p;
      if (p == end) break;
      float v = 0;
      auto [next, ec] = std::from_chars(p, end, v);
      // A component ends at a space or the line's end: "0.1-0.1" is not two numbers.
      if (ec != std::errc() || (next != end && *next != ' '))
        throw InputError(path.string(), reader.line_number(), "a vector component is not a number: \"" +
                                                                  std::string(p, std::find(p, end, ' ')) + "\"");
      if (!std::isfinite(v)) throw InputError(path.string(), reader.line_number(), "a vector component is not finite");
      row.push_back(v);
      p = next;
    }
    if (table.dim == 0) {
      table.dim = static_cast<std::int64_t>(row.size());
      if (table.dim == 0) throw InputError(path.string(), reader.line_number(), "the first vector has no components");
      table.vectors.assign(words.size() * static_cast<std::size_t>(table.dim), 0.0f);
    }
    if (static_cast<std::int64_t>(row.size()) != table.dim)
      throw InputError(path.string(), reader.line_number(), "vector has " + std::to_string(row.size()) + " components, expected " + std::to_string(table.dim));
    if (it == wanted.end() || table.found[it->second]) continue;
    std::copy(row.begin(), row.end(), table.vectors.begin() + static_cast<std::ptrdiff_t>(it->second * static_cast<std::size_t>(table.dim)));
    table.found[it->second] = true;
    ++table.num_found;
  }
  if (table.dim == 0) throw InputError(path.string(), "no word vectors found");
  return table;
}

}  // namespace xmc
