#pragma once
// The file format of a saved index (save_index()/load_index() in index_factory.h): a small header, then the
// index's own payload (Index::write). Plain C++ header.
//
// Layout, little-endian:
//   "XMCINDEX"  8 bytes magic
//   version     u32 (1)
//   crc32       u32, CRC-32 of the payload
//   payload     u64, payload size in bytes
//   dim, ntotal i64, i64
//   spec        u32 length, then the description's bytes ("exact", "hnsw:M=32", "faiss:IVF256,Flat", ...)
//   payload bytes
// The recorded size and checksum let a truncated or damaged file be refused before a library (hnswlib,
// FAISS) parses it: those trust their input and may crash or allocate wildly on garbage.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "engine/index/index.h"

namespace xmc {

struct IndexFileHeader {
  std::string spec;                ///< the description the index was made from (index_factory.h)
  std::int64_t dim = 0;            ///< vector dimension
  std::int64_t ntotal = 0;         ///< vectors stored
  std::uint64_t payload_bytes = 0;
  std::uint32_t payload_crc32 = 0;
  std::uint64_t payload_offset = 0;  ///< where the payload starts in the file
};

/// Writes `index` as an index file described by `spec`: the header, then index.write(). Goes through a
/// temporary file renamed into place, so `path` is either the old file or the complete new one. Throws
/// Error naming `path` when writing fails.
void write_index_file(const std::filesystem::path& path, const std::string& spec, const Index& index);

/// The header of the index file at `path`, checked against the file's size. Throws InputError naming the
/// file when it is missing, not an index file, of another format version, or truncated.
IndexFileHeader read_index_file_header(const std::filesystem::path& path);

/// Reads the payload of one index file: `payload` is positioned at its first byte.
using IndexPayloadReader = std::function<std::unique_ptr<Index>(std::istream& payload, const IndexFileHeader& header)>;

/// The payload of an index that stores its vectors as they came (exact, ivf): ntotal × dim raw floats.
void write_raw_vectors(std::ostream& out, const std::vector<float>& vectors);
/// Reads what write_raw_vectors wrote (`bytes` of it) for an index of `ntotal` vectors of dimension `dim`. Throws
/// Error, naming `kind` ("an exact index"), when the size does not match or the stream ends early.
std::vector<float> read_raw_vectors(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, const std::string& kind);

/// The index in the file at `path`: checks the header and the payload's checksum, then calls `read` to
/// parse the payload and checks that it consumed exactly the payload and holds `dim` × `ntotal` vectors as
/// the header says. Anything wrong (including whatever `read` throws) is an InputError naming the file.
std::unique_ptr<Index> read_index_file(const std::filesystem::path& path, const IndexPayloadReader& read);

}  // namespace xmc
