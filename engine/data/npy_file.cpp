#include "engine/data/npy_file.h"

#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"

static_assert(std::endian::native == std::endian::little, ".npy '<' data is little-endian");

namespace xmc {
namespace {

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr std::uint64_t kMaxHeader = 1 << 20;  // numpy itself refuses headers over 10,000 bytes by default
constexpr std::int64_t kMaxDimension = std::int64_t{1} << 40;

/// A reader of the header dict's Python-literal text: strings, True/False and tuples of integers.
class HeaderDict {
 public:
  HeaderDict(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  NpyHeader parse() {
    NpyHeader header;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        header.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        skip_space();
        if (take("True")) fail("fortran_order is True: only C-order arrays are read (save with numpy.ascontiguousarray)");
        if (!take("False")) fail("fortran_order is neither True nor False");
        has_order = true;
      } else if (key == "shape") {
        header.shape = shape_tuple();
        has_shape = true;
      } else {
        fail("the header has an unknown key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') ++at_;
    }
    ++at_;
    if (!has_descr || !has_order || !has_shape) fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw InputError(source_, "is not a readable .npy file: " + why); }
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) ++at_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "' at byte " + std::to_string(at_) + " of the header");
    ++at_;
  }
  bool take(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted name at byte " + std::to_string(at_) + " of the header");
    const std::size_t end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos || end - at_ > 64) fail("a quoted name in the header does not end");
    std::string out(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return out;
  }
  std::vector<std::int64_t> shape_tuple() {
    expect('(');
    std::vector<std::int64_t> shape;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("the shape holds something other than sizes");
      std::int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        value = value * 10 + (peek() - '0');
        if (value > kMaxDimension) fail("the shape holds an impossible size");
        ++at_;
      }
      skip_space();
      if (peek() == 'L') ++at_;  // Python 2's long literal, still found in old files
      shape.push_back(value);
      if (shape.size() > 32) fail("the shape has more than 32 dimensions");
      skip_space();
      if (peek() == ',') ++at_;
      else if (peek() != ')') fail("the shape tuple is malformed");
    }
    ++at_;
    return shape;
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t at_ = 0;
};

}  // namespace

std::uint64_t NpyHeader::element_count() const {
  std::uint64_t count = 1;
  for (const std::int64_t size : shape) count *= static_cast<std::uint64_t>(size);
  return count;
}

NpyHeader parse_npy_header(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw InputError(source, "is not a .npy file (no \"\\x93NUMPY\" magic at its start)");
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::uint64_t length = 0, prefix = 0;
  if (major == 1) {
    length = static_cast<unsigned char>(bytes[8]) | (static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[9])) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(source, "is not a readable .npy file: the header is cut short");
    for (int i = 0; i < 4; ++i) length |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    prefix = 12;
  } else {
    throw InputError(source, "is a .npy file of version " + std::to_string(major) + ".x; versions 1, 2 and 3 are read");
  }
  if (length > kMaxHeader) throw InputError(source, "is not a readable .npy file: its header claims " + std::to_string(length) + " bytes");
  if (bytes.size() < prefix + length) throw InputError(source, "is not a readable .npy file: the header is cut short");
  NpyHeader header = HeaderDict(bytes.substr(prefix, length), source).parse();
  header.data_offset = prefix + length;
  return header;
}

NpyHeader read_npy_header(const std::filesystem::path& path) {
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "cannot be opened");
  std::string bytes(12, '\0');
  in.read(bytes.data(), 12);
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  if (bytes.size() >= 10 && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0) {
    const auto major = static_cast<unsigned char>(bytes[6]);
    std::uint64_t length = 0;
    if (major == 1) length = static_cast<unsigned char>(bytes[8]) | (static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[9])) << 8);
    else if (bytes.size() == 12) for (int i = 0; i < 4; ++i) length |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    if (length <= kMaxHeader) {
      in.clear();
      in.seekg(0);
      bytes.assign(static_cast<std::size_t>(12 + length), '\0');
      in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      bytes.resize(static_cast<std::size_t>(in.gcount()));
    }
  }
  return parse_npy_header(bytes, path.string());
}

void write_npy(const std::filesystem::path& path, const std::string& descr, std::size_t element_size, const std::vector<std::int64_t>& shape,
               std::span<const std::byte> bytes) {
  std::uint64_t count = 1;
  std::string dims;  // Python's tuple: "3, 4, 5", and "3," for one dimension
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw ConfigError("write_npy: negative size in the shape of " + path.string());
    count *= static_cast<std::uint64_t>(shape[i]);
    dims += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  if (shape.size() == 1) dims += ",";
  if (count * element_size != bytes.size())
    throw ConfigError("write_npy: " + std::to_string(bytes.size()) + " bytes do not fill the shape (" + dims + ") of " + path.string());
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic (6) + version (2) + header length (2) + header + '\n' is a multiple of 64.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  AtomicFileWriter writer(path, std::ios::out | std::ios::binary);
  std::ostream& out = writer.stream();
  out.write("\x93NUMPY\x01\x00", 8);
  const auto length = static_cast<std::uint16_t>(header.size());
  const char length_bytes[2] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  out.write(length_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  writer.commit();
}

void write_npy_float32(const std::filesystem::path& path, std::int64_t rows, std::int64_t cols, std::span<const float> values) {
  if (rows < 0 || cols < 0 || static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) != values.size())
    throw ConfigError("write_npy_float32: " + std::to_string(values.size()) + " values do not make a " + std::to_string(rows) + " x " +
                      std::to_string(cols) + " matrix");
  write_npy(path, "<f4", sizeof(float), {rows, cols}, std::as_bytes(values));
}

}  // namespace xmc
