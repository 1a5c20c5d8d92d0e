#include "engine/index/index_file.h"

#include <cerrno>
#include <array>
#include <bit>
#include <fstream>
#include <streambuf>
#include <vector>

#include "engine/core/atomic_file.h"
#include "engine/core/crc32.h"
#include "engine/core/error.h"
#include "engine/core/write_failure.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

static_assert(std::endian::native == std::endian::little, "index files are written little-endian, as the host stores numbers");

constexpr std::array<char, 8> kMagic{'X', 'M', 'C', 'I', 'N', 'D', 'E', 'X'};
constexpr std::uint32_t kVersion = 1;
constexpr std::streamoff kChecksumOffset = 12;  // crc32 and payload size follow magic and version
constexpr std::uint32_t kMaxSpecBytes = 4096;

template <typename T>
void put(std::ostream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
bool get(std::istream& in, T& value) {
  return static_cast<bool>(in.read(reinterpret_cast<char*>(&value), sizeof value));
}

// Forwards every byte to `sink`, counting them and their CRC-32 on the way (the payload's size and
// checksum are known only once the index has written it).
class ChecksummingStreambuf final : public std::streambuf {
 public:
  explicit ChecksummingStreambuf(std::streambuf* sink) : sink_(sink) {}
  std::uint64_t bytes() const { return bytes_; }
  std::uint32_t crc() const { return crc_; }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const std::streamsize written = sink_->sputn(s, n);
    if (written > 0) {
      crc_ = crc32_update(crc_, s, static_cast<std::size_t>(written));
      bytes_ += static_cast<std::uint64_t>(written);
    }
    return written;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  int sync() override { return sink_->pubsync(); }

 private:
  std::streambuf* sink_;
  std::uint64_t bytes_ = 0;
  std::uint32_t crc_ = 0;
};

/// CRC-32 of `size` bytes of `in` from its current position; false if the file ends first.
bool checksum_of(std::istream& in, std::uint64_t size, std::uint32_t& crc) {
  std::vector<char> buffer(std::size_t{1} << 20);
  crc = 0;
  while (size > 0) {
    const auto chunk = static_cast<std::streamsize>(std::min<std::uint64_t>(size, buffer.size()));
    if (!in.read(buffer.data(), chunk)) return false;
    crc = crc32_update(crc, buffer.data(), static_cast<std::size_t>(chunk));
    size -= static_cast<std::uint64_t>(chunk);
  }
  return true;
}

}  // namespace

void write_index_file(const std::filesystem::path& path, const std::string& spec, const Index& index) {
  if (spec.size() > kMaxSpecBytes) throw ConfigError("index description longer than " + std::to_string(kMaxSpecBytes) + " bytes: " + spec.substr(0, 80) + "...");
  AtomicFileWriter file(path, std::ios::binary);
  std::ostream& out = file.stream();
  out.write(kMagic.data(), kMagic.size());
  put(out, kVersion);
  put(out, std::uint32_t{0});  // crc32, filled in below
  put(out, std::uint64_t{0});  // payload size, filled in below
  put(out, index.dim());
  put(out, index.ntotal());
  put(out, static_cast<std::uint32_t>(spec.size()));
  out.write(spec.data(), static_cast<std::streamsize>(spec.size()));

  ChecksummingStreambuf counted(out.rdbuf());
  std::ostream payload(&counted);
  try {
    index.write(payload);
  } catch (const std::exception& e) {
    throw Error("cannot write the index " + path.string() + ": " + e.what());
  }
  if (!payload || !out) throw Error("cannot write the index " + path.string() + ": " + why_write_failed(path, counted.bytes(), errno));
  out.seekp(kChecksumOffset);
  put(out, counted.crc());
  put(out, counted.bytes());
  file.commit();
}

IndexFileHeader read_index_file_header(const std::filesystem::path& path) {
  const std::string name = path.string();
  require_regular_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(name, "cannot open the saved index (missing or unreadable)");
  std::array<char, 8> magic{};
  std::uint32_t version = 0, spec_bytes = 0;
  IndexFileHeader header;
  if (!in.read(magic.data(), magic.size()) || magic != kMagic) throw InputError(name, "not an index saved by xmc (no XMCINDEX header)");
  if (!get(in, version) || version != kVersion)
    throw InputError(name, "index file format version " + std::to_string(version) + "; this build reads version " + std::to_string(kVersion));
  if (!get(in, header.payload_crc32) || !get(in, header.payload_bytes) || !get(in, header.dim) || !get(in, header.ntotal) || !get(in, spec_bytes))
    throw InputError(name, "truncated: the file ends inside its header");
  // Sizes a reader multiplies before allocating: no embedding is wider than 2^20, and every stored vector takes
  // at least a byte of the payload, so dim × ntotal cannot overflow on a file that fits on a disk.
  if (header.dim <= 0 || header.dim > (std::int64_t{1} << 20) || header.ntotal < 0 ||
      static_cast<std::uint64_t>(header.ntotal) > header.payload_bytes || spec_bytes == 0 || spec_bytes > kMaxSpecBytes)
    throw InputError(name, "damaged header (dimension " + std::to_string(header.dim) + ", " + std::to_string(header.ntotal) + " vectors, description of " +
                               std::to_string(spec_bytes) + " bytes)");
  header.spec.resize(spec_bytes);
  if (!in.read(header.spec.data(), spec_bytes)) throw InputError(name, "truncated: the file ends inside its header");
  header.payload_offset = static_cast<std::uint64_t>(in.tellg());

  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  const std::uint64_t expected = header.payload_offset + header.payload_bytes;
  if (ec || size != expected)
    throw InputError(name, std::string(size < expected ? "truncated" : "damaged") + ": " + std::to_string(size) + " bytes, its header says " +
                               std::to_string(expected) + " (index \"" + header.spec + "\" of " + std::to_string(header.ntotal) + " vectors)");
  return header;
}

std::unique_ptr<Index> read_index_file(const std::filesystem::path& path, const IndexPayloadReader& read) {
  const std::string name = path.string();
  const IndexFileHeader header = read_index_file_header(path);
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(header.payload_offset));
  std::uint32_t crc = 0;
  if (!checksum_of(in, header.payload_bytes, crc)) throw InputError(name, "cannot read the saved index's payload");
  if (crc != header.payload_crc32) throw InputError(name, "damaged: the payload's checksum does not match its header");

  in.clear();
  in.seekg(static_cast<std::streamoff>(header.payload_offset));
  std::unique_ptr<Index> index;
  try {
    index = read(in, header);
  } catch (const std::exception& e) {
    throw InputError(name, "cannot read the \"" + header.spec + "\" index: " + e.what());
  }
  const auto consumed = static_cast<std::int64_t>(in.tellg()) - static_cast<std::int64_t>(header.payload_offset);
  if (!index || !in || consumed != static_cast<std::int64_t>(header.payload_bytes))
    throw InputError(name, "the \"" + header.spec + "\" index read " + std::to_string(consumed) + " of its " + std::to_string(header.payload_bytes) + " payload bytes");
  if (index->dim() != header.dim || index->ntotal() != header.ntotal)
    throw InputError(name, "holds " + std::to_string(index->ntotal()) + " vectors of dimension " + std::to_string(index->dim()) + ", its header says " +
                               std::to_string(header.ntotal) + " of dimension " + std::to_string(header.dim));
  return index;
}

void write_raw_vectors(std::ostream& out, const std::vector<float>& vectors) {
  out.write(reinterpret_cast<const char*>(vectors.data()), static_cast<std::streamsize>(vectors.size() * sizeof(float)));
}

std::vector<float> read_raw_vectors(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, const std::string& kind) {
  const std::uint64_t needed = static_cast<std::uint64_t>(dim) * static_cast<std::uint64_t>(ntotal) * sizeof(float);
  if (dim <= 0 || ntotal < 0 || ntotal > (std::int64_t{1} << 40) || dim > (std::int64_t{1} << 20) || bytes != needed)
    throw Error(kind + " of " + std::to_string(ntotal) + " vectors of dimension " + std::to_string(dim) + " takes " + std::to_string(needed) +
                " bytes, not " + std::to_string(bytes));
  std::vector<float> vectors(static_cast<std::size_t>(dim * ntotal));
  if (!in.read(reinterpret_cast<char*>(vectors.data()), static_cast<std::streamsize>(bytes))) throw Error("the stored vectors end early");
  return vectors;
}

}  // namespace xmc
