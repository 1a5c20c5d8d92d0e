#pragma once
// Indexes by description string, as FAISS's index_factory makes indexes from strings. Plain C++ header.
//
//   exact                        brute-force inner products over every stored vector (exact_index.h), CPU
//   hnsw[:KEY=N,...]             an HNSW graph (hnswlib, hnsw_index.h), approximate. Keys, comma-separated:
//                                  M    links per node             (default 16; 32 for high recall)
//                                  ef   search candidate list size (default 128; at least k is used)
//                                  efc  build candidate list size  (default 200)
//                                e.g. "hnsw", "hnsw:M=32,ef=200"
//   faiss:FACTORY[;nprobe=N]     a FAISS index from its index_factory string (faiss_index.h), e.g.
//                                "faiss:Flat", "faiss:IVF256,Flat", "faiss:IVF64,PQ8;nprobe=32";
//                                nprobe = inverted lists probed per query (default 16). Only in builds with
//                                FAISS (faiss_available()). ';' separates it because factory strings
//                                contain commas.
//
// Every index ranks by inner product and follows index.h's conventions. save_index()/load_index() store an
// index together with its description (index_file.h), so an index built once is reused.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/index/index.h"

namespace xmc {

/// A new, empty index of dimension `dim` described by `spec`. Throws ConfigError naming the spec and the
/// known kinds when `spec` is not understood, or when it asks for FAISS in a build without it.
std::unique_ptr<Index> make_index(const std::string& spec, std::int64_t dim);

/// Checks `spec` without building an index (e.g. before minutes of encoding); throws like make_index().
/// FAISS factory strings are checked by FAISS itself, at `dim` when given, else at a dimension that every
/// common PQ<m> divides (so "PQ16" is not refused for want of the real dimension).
void check_index_spec(const std::string& spec, std::int64_t dim = 0);

/// One line per kind, for help texts.
std::vector<std::string> index_kinds();

/// Whether this build offers faiss:... indexes (CMake option XMC_WITH_FAISS).
bool faiss_available();

/// Writes `index`, made by make_index(spec, ...), to `path`, with `spec` and its dimension and size, through a
/// temporary file renamed into place. Throws ConfigError when `index` is not of the kind `spec` describes,
/// Error naming the path when writing fails.
void save_index(const Index& index, const std::string& spec, const std::filesystem::path& path);

/// The description save_index() stored with an index.
struct SavedIndexInfo {
  std::string spec;
  std::int64_t dim = 0;
  std::int64_t ntotal = 0;
};
/// The description of the index saved at `path`, read from its header only. Throws InputError naming the
/// file when it is missing, not an index file, or truncated.
SavedIndexInfo read_saved_index_info(const std::filesystem::path& path);

/// The index saved at `path`: searches as the saved one did. Throws InputError naming the file when it is
/// missing, truncated, damaged or of a kind this build cannot make.
std::unique_ptr<Index> load_index(const std::filesystem::path& path);

}  // namespace xmc
