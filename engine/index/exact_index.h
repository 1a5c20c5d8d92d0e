#pragma once
// Exact inner-product search over all stored vectors (brute force, chunked; see index.h for the
// conventions). Plain C++ header: the torch implementation (exact_top_k) stays in the .cpp.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/index/index.h"

namespace xmc {

struct ExactIndexOptions {
  std::string device = "cpu";       ///< where vectors are scored: "cpu", "cuda", "cuda:1", ...
  std::int64_t query_chunk = 0;     ///< queries scored at once; 0 = from the memory budget (exact_search.h)
  std::int64_t key_chunk = 4096;    ///< stored vectors scored at once (memory: query_chunk × key_chunk floats)
};

class ExactIndex final : public Index {
 public:
  explicit ExactIndex(std::int64_t dim, ExactIndexOptions options = {});
  ~ExactIndex() override;

  void add(std::int64_t n, const float* x) override;
  void reserve(std::int64_t n) override;
  /// Ties are broken by lower label. Safe to call from several threads at once (not during add/reset).
  void search(std::int64_t n, const float* x, std::int64_t k, float* scores, std::int64_t* labels) const override;
  void reset() override;
  /// The stored vectors as raw floats (ntotal × dim, row-major).
  void write(std::ostream& out) const override;
  /// What write() wrote (`bytes` of it), holding `ntotal` vectors of dimension `dim`. Throws Error when the
  /// size does not match or the stream ends early.
  static std::unique_ptr<ExactIndex> read(std::istream& in, std::uint64_t bytes, std::int64_t dim, std::int64_t ntotal, ExactIndexOptions options = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xmc
