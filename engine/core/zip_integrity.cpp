#include "engine/core/zip_integrity.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <fstream>
#include <vector>

#include <zlib.h>

#include "engine/core/crc32.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace xmc {
namespace {

std::uint64_t little_endian(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

/// Raw deflate (zip method 8), streamed: feed() gives each inflated piece to `take`.
class Inflater {
 public:
  explicit Inflater(bool active) : active_(active) {
    if (active_ && inflateInit2(&stream_, -MAX_WBITS) != Z_OK) throw Error("zlib: cannot start inflating");
  }
  ~Inflater() {
    if (active_) inflateEnd(&stream_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  /// False when the bytes are not deflate data, or the stream ends before `last` or does not end with it.
  template <class Take>
  bool feed(const char* data, std::size_t size, bool last, Take&& take) {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    stream_.avail_in = static_cast<uInt>(size);
    int status = Z_OK;
    do {
      stream_.next_out = reinterpret_cast<Bytef*>(out_.data());
      stream_.avail_out = static_cast<uInt>(out_.size());
      const uInt in_before = stream_.avail_in;
      status = inflate(&stream_, Z_NO_FLUSH);
      if (status == Z_MEM_ERROR) throw std::bad_alloc();
      if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) return false;
      const std::size_t produced = out_.size() - stream_.avail_out;
      if (produced == 0 && stream_.avail_in == in_before && status != Z_STREAM_END) break;  // no progress: wants more input
      take(out_.data(), produced);
      if (status == Z_STREAM_END) break;
    } while (stream_.avail_out == 0 || stream_.avail_in > 0);
    if (status == Z_STREAM_END) return last && stream_.avail_in == 0;
    return !last;
  }

 private:
  bool active_;
  z_stream stream_{};
  std::array<char, 1 << 16> out_{};
};

}  // namespace

std::int64_t verify_zip_entries(const std::filesystem::path& path) {
  std::vector<std::pair<std::string, std::string>> none;
  return verify_zip_entries(path, [](const std::string&) { return false; }, none);
}

std::int64_t verify_zip_entries(const std::filesystem::path& path, const std::function<bool(const std::string&)>& keep,
                                std::vector<std::pair<std::string, std::string>>& kept, std::map<std::string, std::uint64_t>* sizes) {
  require_regular_file(path);
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(name, "cannot open file for reading");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const auto damaged = [&](const std::string& why) { return InputError(name, "is damaged: " + why); };
  const auto read_at = [&](std::uint64_t offset, std::size_t bytes) {
    if (offset > size || bytes > size - offset) throw damaged("a record at byte " + std::to_string(offset) + " runs past the end of the file");
    std::vector<unsigned char> buffer(bytes);
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in.read(reinterpret_cast<char*>(buffer.data()), static_cast<std::streamsize>(bytes))) throw damaged("cannot read byte " + std::to_string(offset));
    return buffer;
  };

  // End of central directory: the last 22 bytes, or fewer when an archive comment follows it.
  if (size < 22) throw damaged("too short for a zip archive (" + std::to_string(size) + " bytes)");
  const std::uint64_t tail = std::min<std::uint64_t>(size, 22 + 65535);
  const std::vector<unsigned char> end = read_at(size - tail, static_cast<std::size_t>(tail));
  std::int64_t eocd = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail) - 22; i >= 0; --i)
    if (little_endian(&end[static_cast<std::size_t>(i)], 4) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd < 0) throw damaged("no zip end-of-central-directory record (truncated or not a checkpoint)");
  const unsigned char* e = &end[static_cast<std::size_t>(eocd)];
  std::uint64_t entries = little_endian(e + 10, 2), directory_size = little_endian(e + 12, 4), directory_offset = little_endian(e + 16, 4);
  if (entries == 0xFFFF || directory_size == 0xFFFFFFFF || directory_offset == 0xFFFFFFFF) {  // zip64
    const std::uint64_t eocd_at = size - tail + static_cast<std::uint64_t>(eocd);
    if (eocd_at < 20) throw damaged("a zip64 archive without its locator");
    const std::vector<unsigned char> locator = read_at(eocd_at - 20, 20);
    if (little_endian(locator.data(), 4) != 0x07064b50) throw damaged("a zip64 archive without its locator");
    const std::vector<unsigned char> record = read_at(little_endian(locator.data() + 8, 8), 56);
    if (little_endian(record.data(), 4) != 0x06064b50) throw damaged("the zip64 end-of-central-directory record is not where its locator says");
    entries = little_endian(record.data() + 32, 8);
    directory_size = little_endian(record.data() + 40, 8);
    directory_offset = little_endian(record.data() + 48, 8);
  }
  const std::vector<unsigned char> directory = read_at(directory_offset, static_cast<std::size_t>(directory_size));

  std::vector<char> chunk(1 << 20);
  std::size_t at = 0;
  for (std::uint64_t entry = 0; entry < entries; ++entry) {
    if (at + 46 > directory.size() || little_endian(&directory[at], 4) != 0x02014b50)
      throw damaged("central directory entry " + std::to_string(entry) + " is malformed");
    const unsigned char* c = &directory[at];
    const std::uint64_t method = little_endian(c + 10, 2), crc = little_endian(c + 16, 4);
    std::uint64_t compressed = little_endian(c + 20, 4), uncompressed = little_endian(c + 24, 4), local = little_endian(c + 42, 4);
    const std::size_t name_length = little_endian(c + 28, 2), extra_length = little_endian(c + 30, 2), comment_length = little_endian(c + 32, 2);
    if (at + 46 + name_length + extra_length + comment_length > directory.size())
      throw damaged("central directory entry " + std::to_string(entry) + " runs past the directory");
    const std::string entry_name(reinterpret_cast<const char*>(c + 46), name_length);
    // Zip64 sizes and offsets, in this order, for the fields that hold 0xFFFFFFFF.
    for (std::size_t x = 0; x + 4 <= extra_length;) {
      const unsigned char* field = c + 46 + name_length + x;
      const std::size_t id = little_endian(field, 2), length = little_endian(field + 2, 2);
      if (x + 4 + length > extra_length) break;
      if (id == 0x0001) {
        std::size_t k = 4;
        for (std::uint64_t* value : {&uncompressed, &compressed, &local})
          if (*value == 0xFFFFFFFF && k + 8 <= 4 + length) {
            *value = little_endian(field + k, 8);
            k += 8;
          }
      }
      x += 4 + length;
    }
    at += 46 + name_length + extra_length + comment_length;
    // LibTorch stores tensors and deflates some of its code entries (the larger module classes): both are checked.
    if (method != 0 && method != 8) throw damaged("entry " + entry_name + " uses compression method " + std::to_string(method) + ", which LibTorch never writes");
    // Deflate cannot shrink data more than 1032 to 1: a larger declared size is damage, and inflating it is bounded.
    if (method == 8 && uncompressed / 1032 > compressed + 1)
      throw damaged("entry " + entry_name + " claims " + std::to_string(uncompressed) + " bytes from " + std::to_string(compressed) + " deflated ones");
    if (method == 0 && uncompressed != compressed) throw damaged("entry " + entry_name + " is stored, yet its two sizes differ");
    if (sizes) (*sizes)[entry_name] = uncompressed;
    const std::vector<unsigned char> header = read_at(local, 30);
    if (little_endian(header.data(), 4) != 0x04034b50) throw damaged("entry " + entry_name + " has no local header where the directory says");
    std::uint64_t data = local + 30 + little_endian(header.data() + 26, 2) + little_endian(header.data() + 28, 2);
    if (data > size || compressed > size - data) throw damaged("entry " + entry_name + " runs past the end of the file");
    in.seekg(static_cast<std::streamoff>(data));
    const bool keeping = keep(entry_name);
    if (keeping && uncompressed > (1u << 20)) throw damaged("entry " + entry_name + " is " + std::to_string(uncompressed) + " bytes, far more than such an entry holds");
    if (keeping) kept.emplace_back(entry_name, std::string());
    std::uint32_t running = 0;
    std::uint64_t inflated_bytes = 0;
    Inflater inflater(method == 8);
    for (std::uint64_t left = compressed; left > 0;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
      if (!in.read(chunk.data(), static_cast<std::streamsize>(n))) throw damaged("entry " + entry_name + " cannot be read");
      left -= n;
      const auto take = [&](const char* bytes, std::size_t count) {
        inflated_bytes += count;
        if (inflated_bytes > uncompressed) throw damaged("entry " + entry_name + " holds more than the " + std::to_string(uncompressed) + " bytes its directory record gives");
        running = crc32_update(running, bytes, count);
        if (keeping) kept.back().second.append(bytes, count);
      };
      if (method == 0) take(chunk.data(), n);
      else if (!inflater.feed(chunk.data(), n, left == 0, take)) throw damaged("entry " + entry_name + " does not inflate (its compressed bytes changed)");
    }
    if (inflated_bytes != uncompressed)
      throw damaged("entry " + entry_name + " holds " + std::to_string(inflated_bytes) + " bytes, not the " + std::to_string(uncompressed) + " its directory record gives");
    if (running != crc) throw damaged("entry " + entry_name + " fails its CRC-32 check (its bytes changed after it was written)");
  }
  return static_cast<std::int64_t>(entries);
}

}  // namespace xmc
