#include "engine/data/xc_sparse_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <string>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"

namespace xmc {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string quoted(std::string_view s) {
  constexpr std::size_t kMax = 40;
  return "'" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}

template <typename T>
bool parse_whole(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

XcSparseReader::XcSparseReader(const std::filesystem::path& path) : reader_(path) {
  std::string_view line;
  while (reader_.next(line)) {
    if (!line.empty() && line.front() == '#') continue;
    const auto space = line.find_first_of(" \t");
    std::string_view a = line.substr(0, space);
    std::string_view b = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
    while (!b.empty() && is_blank(b.front())) b.remove_prefix(1);
    while (!b.empty() && is_blank(b.back())) b.remove_suffix(1);
    if (!parse_whole(a, rows_) || !parse_whole(b, cols_) || rows_ < 0 || cols_ < 0)
      throw InputError(reader_.path(), reader_.line_number(),
                       "expected the header 'ROWS COLS' (two non-negative integers), got " + quoted(line));
    if (cols_ > INT32_MAX)
      throw InputError(reader_.path(), reader_.line_number(), "column count " + std::to_string(cols_) + " exceeds 2^31-1");
    return;
  }
  throw InputError(reader_.path(), "the file is empty: expected the header 'ROWS COLS'");
}

double XcSparseReader::fraction_read() const {
  return reader_.file_size() == 0 ? 1.0 : static_cast<double>(reader_.bytes_read()) / static_cast<double>(reader_.file_size());
}

bool XcSparseReader::next(std::vector<std::int32_t>& indices, std::vector<float>& values) {
  std::string_view line;
  do {
    if (!reader_.next(line)) {
      if (rows_read_ != rows_)
        throw InputError(reader_.path(), "the header says " + std::to_string(rows_) + " rows but the file has " +
                                             std::to_string(rows_read_));
      return false;
    }
  } while (!line.empty() && line.front() == '#');

  if (rows_read_ == rows_)
    throw InputError(reader_.path(), reader_.line_number(),
                     "more rows than the " + std::to_string(rows_) + " the header declares");
  scratch_.clear();
  std::size_t pos = 0;
  bool sorted = true;
  while (pos < line.size()) {
    while (pos < line.size() && is_blank(line[pos])) ++pos;
    if (pos == line.size()) break;
    std::size_t end = pos;
    while (end < line.size() && !is_blank(line[end])) ++end;
    const std::string_view token = line.substr(pos, end - pos);
    pos = end;
    const auto colon = token.find(':');
    std::int64_t index = 0;
    float value = 0;
    if (colon == std::string_view::npos || !parse_whole(token.substr(0, colon), index))
      throw InputError(reader_.path(), reader_.line_number(), "expected 'index:value', got " + quoted(token));
    if (!parse_whole(token.substr(colon + 1), value))
      throw InputError(reader_.path(), reader_.line_number(), "the value in " + quoted(token) + " is not a number");
    if (!std::isfinite(value))
      throw InputError(reader_.path(), reader_.line_number(), "the value in " + quoted(token) + " is not finite");
    if (index < 0 || index >= cols_)
      throw InputError(reader_.path(), reader_.line_number(),
                       "index " + std::to_string(index) + " is out of range: the header declares " +
                           std::to_string(cols_) + " columns (valid 0.." + std::to_string(cols_ - 1) + ")");
    if (!scratch_.empty() && scratch_.back().first >= index) sorted = false;
    scratch_.emplace_back(static_cast<std::int32_t>(index), value);
  }
  if (!sorted) std::sort(scratch_.begin(), scratch_.end(), [](auto& x, auto& y) { return x.first < y.first; });
  for (std::size_t i = 1; i < scratch_.size(); ++i)
    if (scratch_[i].first == scratch_[i - 1].first)
      throw InputError(reader_.path(), reader_.line_number(),
                       "index " + std::to_string(scratch_[i].first) + " appears twice in this row");
  indices.resize(scratch_.size());
  values.resize(scratch_.size());
  for (std::size_t i = 0; i < scratch_.size(); ++i) {
    indices[i] = scratch_[i].first;
    values[i] = scratch_[i].second;
  }
  ++rows_read_;
  return true;
}

CsrMatrix read_xc_sparse(const std::filesystem::path& path, Progress& progress) {
  XcSparseReader reader(path);
  CsrMatrix m;
  m.cols = reader.cols();
  // The header's count is not trusted for memory ("99999999999999 6" ran out of it): a bounded reserve, and
  // the rows actually read are checked against the header at the end.
  m.indptr.reserve(static_cast<std::size_t>(std::min<std::int64_t>(reader.rows(), std::int64_t{1} << 22)) + 1);
  progress.start("reading " + path.filename().string(), reader.rows());
  std::vector<std::int32_t> idx;
  std::vector<float> val;
  while (reader.next(idx, val)) {
    m.append_row(idx, val);
    if ((m.rows & 0xFFFF) == 0) progress.update(m.rows);
  }
  progress.update(m.rows);
  progress.finish();
  return m;
}

void write_xc_sparse(const std::filesystem::path& path, const CsrMatrix& m) {
  AtomicFileWriter out(path);
  std::string line;
  char number[32];
  out.stream() << m.rows << ' ' << m.cols << '\n';
  for (std::int64_t r = 0; r < m.rows; ++r) {
    line.clear();
    const auto cols = m.row_indices(r);
    const auto vals = m.row_values(r);
    for (std::size_t i = 0; i < cols.size(); ++i) {
      if (i) line += ' ';
      line += std::to_string(cols[i]);
      line += ':';
      auto [ptr, ec] = std::to_chars(number, number + sizeof number, vals[i]);
      line.append(number, ptr);
    }
    line += '\n';
    out.stream() << line;
  }
  out.commit();
}

}  // namespace xmc
